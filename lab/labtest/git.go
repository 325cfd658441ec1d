package labtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a git repository served to Argo CD as a file:// URL: a bare repository plus a working
// clone the test commits from, as a person would push to a remote.
type Repo struct {
	URL  string
	bare string
	work string
}

// Dir is the working copy, where Write puts files before Commit pushes them.
func (r *Repo) Dir() string { return r.work }

// NewRepo creates an empty repository with a first commit on main.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	dir := TempDir(t)
	r := &Repo{bare: filepath.Join(dir, "remote.git"), work: filepath.Join(dir, "work")}
	r.URL = "file://" + r.bare
	git(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	git(t, dir, "clone", "--quiet", r.bare, r.work)
	git(t, r.work, "checkout", "--quiet", "-B", "main")
	r.Write(t, "README.md", "Manifests for a test Application.\n")
	r.Commit(t, "initial commit")
	return r
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=lab", "GIT_AUTHOR_EMAIL=lab@example.invalid",
		"GIT_COMMITTER_NAME=lab", "GIT_COMMITTER_EMAIL=lab@example.invalid",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write puts a file into the working clone (not yet committed).
func (r *Repo) Write(t testing.TB, path, content string) {
	t.Helper()
	full := filepath.Join(r.work, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Remove deletes a file from the working clone (not yet committed).
func (r *Repo) Remove(t testing.TB, path string) {
	t.Helper()
	if err := os.Remove(filepath.Join(r.work, path)); err != nil {
		t.Fatal(err)
	}
}

// Commit commits everything in the working clone, pushes it and returns the commit SHA.
func (r *Repo) Commit(t testing.TB, message string) string {
	t.Helper()
	git(t, r.work, "add", "-A")
	git(t, r.work, "commit", "--quiet", "--allow-empty", "-m", message)
	git(t, r.work, "push", "--quiet", "origin", "main")
	return r.Head(t)
}

// Revert reverts the last commit, as the incident's team did, pushes it and returns the new SHA.
func (r *Repo) Revert(t testing.TB) string {
	t.Helper()
	git(t, r.work, "revert", "--no-edit", "HEAD")
	git(t, r.work, "push", "--quiet", "origin", "main")
	return r.Head(t)
}

// Head is the SHA of main.
func (r *Repo) Head(t testing.TB) string {
	t.Helper()
	return git(t, r.work, "rev-parse", "HEAD")
}
