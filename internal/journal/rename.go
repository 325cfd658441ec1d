package journal

import "encoding/json"

// CommandRename is the command of `unprune rename` journals.
const CommandRename = "rename"

// Renamed is what a rename journal keeps besides its tracking rewrites: the Application as it was
// before anything changed, so that undo can create it again exactly (spec, labels, annotations,
// finalizers). An unprune release without this field refuses to read such a journal (journals are
// decoded strictly), rather than undo only half of a rename.
type Renamed struct {
	From AppRef `json:"from"`
	To   AppRef `json:"to"`
	// Application is the old Application object as read, status and server-set metadata removed.
	Application json.RawMessage `json:"application"`
}

func (r *Renamed) clone() *Renamed {
	if r == nil {
		return nil
	}
	c := *r
	c.Application = append(json.RawMessage(nil), r.Application...)
	return &c
}
