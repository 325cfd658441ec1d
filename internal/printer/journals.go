package printer

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/version"
)

// JournalList is `unprune undo --list -o json|yaml`.
type JournalList struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Metadata   Metadata      `json:"metadata"`
	Directory  string        `json:"directory"`
	Items      []JournalItem `json:"items"`
}

// JournalItem is one journal file.
type JournalItem struct {
	Path         string         `json:"path"`
	ID           string         `json:"id"`
	CreatedAt    time.Time      `json:"createdAt,omitzero"`
	ToolVersion  string         `json:"toolVersion,omitempty"`
	Command      string         `json:"command,omitempty"`
	Strategy     string         `json:"strategy,omitempty"`
	Clusters     []string       `json:"clusters,omitempty"`
	Applications []AppRef       `json:"applications,omitempty"`
	Entries      JournalEntries `json:"entries"`
	// Torn says the last record was cut short by a crash and dropped.
	Torn  bool   `json:"torn,omitempty"`
	Error string `json:"error,omitempty"`
}

// JournalEntries counts a journal's entries by state.
type JournalEntries struct {
	Total   int `json:"total"`
	Planned int `json:"planned"`
	Applied int `json:"applied"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	Undone  int `json:"undone"`
}

// NewJournalList converts journal summaries.
func NewJournalList(meta Metadata, dir string, sums []journal.Summary) JournalList {
	doc := JournalList{APIVersion: APIVersion, Kind: "JournalList", Metadata: meta, Directory: dir, Items: []JournalItem{}}
	for _, s := range sums {
		item := JournalItem{Path: s.Path, ID: s.ID, CreatedAt: s.CreatedAt, ToolVersion: s.ToolVersion, Command: s.Command,
			Strategy: s.Strategy, Clusters: s.Clusters, Torn: s.Torn,
			Entries: JournalEntries{Total: s.Entries, Planned: s.Planned, Applied: s.Applied, Failed: s.Failed, Skipped: s.Skipped, Undone: s.Undone}}
		for _, a := range s.Applications {
			item.Applications = append(item.Applications, AppRef{a.Namespace, a.Name})
		}
		if s.Err != nil {
			item.Error = s.Err.Error()
		}
		doc.Items = append(doc.Items, item)
	}
	return doc
}

// Names are the -o name lines: the journal paths.
func (d JournalList) Names() []string {
	return names(d.Items, func(it JournalItem) string { return it.Path })
}

// JournalTable writes the human table.
func JournalTable(w io.Writer, o Output, doc JournalList) error {
	rows := make([][]string, 0, len(doc.Items))
	for _, it := range doc.Items {
		var apps []string
		for _, a := range it.Applications {
			apps = append(apps, a.Namespace+"/"+a.Name)
		}
		e := it.Entries
		state := fmt.Sprintf("%d: %d planned, %d applied, %d failed, %d skipped, %d undone", e.Total, e.Planned, e.Applied, e.Failed, e.Skipped, e.Undone)
		if it.Torn {
			state += " (last record cut short by a crash)"
		}
		if it.Error != "" {
			state = "unreadable: " + it.Error
		}
		command := it.Command
		if it.Strategy != "" {
			command += "/" + it.Strategy
		}
		created := ""
		if !it.CreatedAt.IsZero() {
			created = it.CreatedAt.Format(time.RFC3339)
		}
		rows = append(rows, []string{it.Path, created, orNone(command), orNone(strings.Join(apps, ",")), state})
	}
	return o.Rows(w, []string{"JOURNAL", "CREATED", "COMMAND", "APPLICATIONS", "ENTRIES"}, rows)
}

// VersionDoc is `unprune version -o json|yaml`.
type VersionDoc struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Client     version.Info `json:"client"`
}

// NewVersionDoc describes the running binary.
func NewVersionDoc() VersionDoc {
	return VersionDoc{APIVersion: APIVersion, Kind: "Version", Client: version.Get()}
}
