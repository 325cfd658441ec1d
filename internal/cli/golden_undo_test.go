package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/cluster"
)

// detachJournal is the journal of the detach every undo case's setup runs first.
const detachJournal = "{{ .JournalDir }}/20260102T030405Z-detach-guestbook-0000.json"

func TestGoldenUndo(t *testing.T) {
	detached := func(w *world) {
		w.mustRun(ExitOK, "detach", "guestbook", "Namespace/team-a", "Namespace/team-b", "--yes")
	}
	runGoldens(t, []goldenCase{
		// Exit 0: journals listed (none, then one), a restore done.
		{name: "undo-list-empty", args: []string{"undo", "--list"}},
		{name: "undo-list", args: []string{"undo", "--list"}, setup: detached},
		{name: "undo-list-json", args: []string{"undo", "--list", "-o", "json"}, setup: detached},
		{name: "undo-latest-yes", args: []string{"undo", "--latest", "--yes"}, setup: detached},
		{name: "undo-named-yes-yaml", args: []string{"undo", detachJournal, "--yes", "-o", "yaml"}, setup: detached},
		{name: "undo-twice", args: []string{"undo", "--latest", "--yes"}, setup: func(w *world) {
			detached(w)
			w.mustRun(ExitOK, "undo", "--latest", "--yes")
		}},
		{name: "undo-guard", args: []string{"undo", "--latest", "--yes"}, setup: func(w *world) {
			w.mustRun(ExitOK, "guard", "protect", "Namespace/team-a", "--yes")
		}},
		{name: "undo-rename", args: []string{"undo", "--latest", "--yes"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.mustRun(ExitOK, "rename", "platform", "platform-v2", "--yes")
		}},
		// Exit 1: previews.
		{name: "undo-latest-preview", args: []string{"undo", "--latest"}, setup: detached},
		{name: "undo-latest-preview-json", args: []string{"undo", "--latest", "-o", "json"}, setup: detached},
		{name: "undo-dry-run-server-name", args: []string{"undo", "--latest", "--dry-run=server", "-o", "name"}, setup: detached},
		{name: "undo-rename-preview", args: []string{"undo", "--latest"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.mustRun(ExitOK, "rename", "platform", "platform-v2", "--yes")
		}},
	})
}

// Undo refuses what it cannot prove is its own to restore, and says which restores failed.
func TestGoldenUndoRefusals(t *testing.T) {
	detached := func(w *world) {
		w.mustRun(ExitOK, "detach", "guestbook", "Namespace/team-a", "Namespace/team-b", "--yes")
	}
	runGoldens(t, []goldenCase{
		// Exit 3: guestbook has automated prune since the detach, and its git no longer holds the
		// namespaces: giving their tracking back would let it delete them at once. Its comparison
		// shows it does not declare them, so nothing is restored.
		{name: "undo-refused-auto-prune", args: []string{"undo", "--latest", "--yes"}, setup: func(w *world) {
			detached(w)
			w.automate("guestbook")
		}},
		// Exit 3: the journal was tampered with (its tracking names another app's object), or the
		// object was recreated since; nothing is restored.
		{name: "undo-tampered", args: []string{"undo", "--latest", "--yes"}, setup: func(w *world) {
			detached(w)
			w.editJournal("guestbook:/Namespace:guestbook/team-a", "platform:/ConfigMap:platform/settings")
			w.editJournal("guestbook:/Namespace:guestbook/team-b", "platform:/ConfigMap:platform/settings")
		}},
		{name: "undo-recreated", args: []string{"undo", "--latest", "--yes"}, setup: func(w *world) {
			detached(w)
			w.editJournal("uid-team-a-", "uid-old-team-a-")
			w.editJournal("uid-team-b-", "uid-old-team-b-")
		}},
		// Exit 4: one object restored, the other's patch fails.
		{name: "undo-partial", args: []string{"undo", "--latest", "--yes", "--workers", "1"}, setup: func(w *world) {
			detached(w)
			w.home.BeforePatch = func(_ int, ref cluster.Ref, _ *cluster.Object) (bool, error) {
				if ref.Name == "team-b" {
					return false, errors.New("etcdserver: request timed out")
				}
				return false, nil
			}
		}},
		// Exit 2: bad input, an unreadable or unsafe journal.
		{name: "undo-no-args", args: []string{"undo"}},
		{name: "undo-latest-and-list", args: []string{"undo", "--latest", "--list"}},
		{name: "undo-latest-none", args: []string{"undo", "--latest"}},
		{name: "undo-missing-journal", args: []string{"undo", "{{ .Dir }}/nope.json"}},
		{name: "undo-loose-permissions", args: []string{"undo", detachJournal, "--yes"}, setup: func(w *world) {
			detached(w)
			if err := os.Chmod(filepath.Join(w.journalDir(), "20260102T030405Z-detach-guestbook-0000.json"), 0o666); err != nil {
				t.Fatal(err)
			}
		}},
	})
}

// editJournal replaces old with new in the world's only journal, as someone editing it would.
func (w *world) editJournal(old, new string) {
	w.t.Helper()
	files, err := filepath.Glob(filepath.Join(w.journalDir(), "*.json"))
	if err != nil || len(files) != 1 {
		w.t.Fatalf("journals %v: %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		w.t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		w.t.Fatalf("journal %s holds no %q", files[0], old)
	}
	if err := os.WriteFile(files[0], []byte(strings.ReplaceAll(string(b), old, new)), 0o600); err != nil {
		w.t.Fatal(err)
	}
}
