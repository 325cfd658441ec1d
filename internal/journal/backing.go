package journal

import "context"

// Backing keeps a Store's journals somewhere other than files in Dir: package cmstore keeps them
// in ConfigMaps, for the journals of releases made in Argo CD's UI, which its extension's backend
// writes in the cluster where `unprune undo` (and the UI) find them.
//
// A journal is the same bytes wherever it is kept: the document, then one line per record
// appended. A Backing must make Create fail with fs.ErrExist for a path that exists, make an
// Append durable before it returns, and Replace the document and its records at once.
type Backing interface {
	// Path is how a user names the journal with this ID (in messages, and as undo's argument).
	Path(id string) string
	// Create stores data as a new journal.
	Create(ctx context.Context, path string, data []byte) error
	// Read returns the document and the records appended to it. path may also be the ID.
	Read(ctx context.Context, path string) (data []byte, canonical string, err error)
	// Append adds records after what is stored.
	Append(ctx context.Context, path string, records []byte) error
	// Replace stores data in place of the document and its records (compaction).
	Replace(ctx context.Context, path string, data []byte) error
	// List returns the path of every journal.
	List(ctx context.Context) ([]string, error)
	// Where describes the place, as Dir does for files ("ConfigMaps in namespace argocd").
	Where() string
}

// BulkReader is a Backing that reads every journal at once — one paginated LIST of ConfigMaps
// rather than a GET for each — which Store.List uses when its Backing has it.
type BulkReader interface {
	// ReadAll returns every journal's path and bytes, by path.
	ReadAll(ctx context.Context) ([]Stored, error)
}

// Stored is one journal as a BulkReader returns it.
type Stored struct {
	Path string
	Data []byte
}

// Decode reads a journal's bytes — the document and the records appended to it — as Load does;
// name is used in messages. torn reports a last record cut short (dropped).
func Decode(name string, data []byte) (j *Journal, torn bool, err error) {
	return decode(name, data)
}

// Encode is the journal document as a Store writes it.
func Encode(j *Journal) ([]byte, error) {
	return encodeJournal(j)
}
