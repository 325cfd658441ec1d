package printer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// itemsField is how json.Encoder, indented by two spaces, writes a document's empty items field:
// top-level keys are the only ones indented by exactly two spaces, so it occurs once.
const itemsField = "\n  \"items\": []"

// writeJSONItems writes a document as Print does for -o json (json.Encoder, two-space indent), but
// encodes its items one at a time: head is the document with an empty, non-nil items field, count
// the number of items and item(i) the i-th. A scan of hundreds of thousands of rows then never holds
// the items, the document's encoding or its indented copy in memory. The bytes are Print's
// (TestStreamedJSONIsPrinted).
func writeJSONItems(w io.Writer, head any, count int, item func(i int) any) error {
	var hb bytes.Buffer
	he := json.NewEncoder(&hb)
	he.SetIndent("", "  ")
	if err := he.Encode(head); err != nil {
		return err
	}
	before, after, ok := bytes.Cut(hb.Bytes(), []byte(itemsField))
	if !ok {
		return fmt.Errorf("printer: %T has no empty items field to stream into", head)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.Write(before)
	bw.WriteString("\n  \"items\": [")
	// An item sits two levels deep: its lines are indented by four spaces more than the document's.
	var ib bytes.Buffer
	ie := json.NewEncoder(&ib)
	ie.SetIndent("    ", "  ")
	for i := range count {
		ib.Reset()
		if err := ie.Encode(item(i)); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(ib.Bytes(), []byte{'\n'}))
	}
	if count > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	bw.Write(after)
	return bw.Flush()
}
