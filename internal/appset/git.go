package appset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/fields"
	"github.com/unprune/unprune/internal/option"
)

// Repo is a git repository given for the git generators to read, as Argo CD's repo-server reads
// theirs: at a commit, through git itself, never the files of a working tree (uncommitted,
// untracked and ignored files do not exist for Argo CD).
type Repo struct {
	// Dir is the repository (a clone's top directory, or a bare repository).
	Dir string
	// gitDir is its git directory; urls are the URLs it answers to: its remotes' and its own path's.
	gitDir string
	urls   []string
	ctx    context.Context
}

// OpenRepo opens the repository at dir. It fails when dir is not a git repository.
func OpenRepo(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r := &Repo{Dir: abs, ctx: ctx}
	out, err := r.git(nil, "rev-parse", longFlag("absolute-git-dir"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a git repository (%v): %v takes a clone of the repository the git generators read", dir, err, option.RepoDir)
	}
	r.gitDir = strings.TrimSpace(string(out))
	r.urls = append(r.urls, "file://"+r.gitDir, "file://"+abs, abs, r.gitDir)
	if top, err := r.git(nil, "rev-parse", longFlag("show-toplevel")); err == nil {
		t := strings.TrimSpace(string(top))
		r.urls = append(r.urls, "file://"+t, t)
	}
	if remotes, err := r.git(nil, "config", longFlag("get-regexp"), `^remote\..*\.url$`); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(remotes)), "\n") {
			if _, u, ok := strings.Cut(line, " "); ok {
				r.urls = append(r.urls, u)
				if filepath.IsAbs(u) {
					// A remote given as a path is the file:// URL Argo CD is given for it.
					r.urls = append(r.urls, "file://"+u)
				}
			}
		}
	}
	return r, nil
}

// URLs are what the repository answers to.
func (r *Repo) URLs() []string { return slices.Clone(r.urls) }

// git runs git in the repository, with an environment that keeps pathspecs git's defaults (the
// repo-server's git runs with none of the variables that change them).
func (r *Repo) git(env []string, args ...string) ([]byte, error) { return r.gitIn(r.Dir, env, args...) }

func (r *Repo) gitIn(dir string, env []string, args ...string) ([]byte, error) {
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.ignorecase=false", "-c", "core.quotepath=false"}, args...)...)
	cmd.Dir = dir
	for _, e := range os.Environ() {
		switch k, _, _ := strings.Cut(e, "="); k {
		case "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_LITERAL_PATHSPECS", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_DIR":
		default:
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New(msg)
	}
	return out, nil
}

// Serves reports whether repoURL names this repository, compared as Argo CD normalizes repository
// URLs (util/git NormalizeGitURL: lower case, no trailing .git, scp-style SSH URLs as ssh://).
func (r *Repo) Serves(repoURL string) bool {
	want := NormalizeGitURL(repoURL)
	for _, u := range r.urls {
		if NormalizeGitURL(u) == want {
			return true
		}
	}
	return false
}

var scpLike = regexp.MustCompile(`^[\w.-]+@[\w.-]+:`)

// NormalizeGitURL is how Argo CD compares repository URLs.
func NormalizeGitURL(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if scpLike.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	repo = strings.TrimSuffix(repo, ".git")
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Resolve finds the commit of a generator's revision in the repository, as Argo CD resolves it on
// the remote (LsRemote): HEAD (or none) is the repository's HEAD, a full commit SHA is itself, a
// name is a branch, else a tag.
func (r *Repo) Resolve(revision string) (string, error) {
	var candidates []string
	switch {
	case revision == "" || revision == "HEAD":
		candidates = []string{"HEAD"}
	case fullSHA.MatchString(revision):
		candidates = []string{revision}
	default:
		candidates = []string{"refs/heads/" + revision, "refs/tags/" + revision}
	}
	for _, c := range candidates {
		if out, err := r.git(nil, "rev-parse", longFlag("verify"), longFlag("quiet"), c+"^{commit}"); err == nil {
			return strings.TrimSpace(string(out)), nil
		}
	}
	return "", notEvaluated{fmt.Sprintf("revision %q resolves to no branch, tag or commit of %s (give the repository as the change leaves it, with the revision's branch at the change)", revision, r.Dir)}
}

// entry is one tree entry: mode and path.
type entry struct {
	mode, object, path string
}

// tree lists every entry of the commit's tree, recursively.
func (r *Repo) tree(commit string, dirs bool) ([]entry, error) {
	args := []string{"ls-tree", "-r", "-z", longFlag("full-tree")}
	if dirs {
		args = append(args, "-d")
	}
	out, err := r.git(nil, append(args, commit)...)
	if err != nil {
		return nil, err
	}
	var entries []entry
	for _, rec := range records(out) {
		// ls-tree: mode, type, object.
		entries = append(entries, entry{mode: rec.fields[0], object: rec.fields[2], path: rec.path})
	}
	return entries, nil
}

// Directories are the directories of the commit's checkout, as the repo-server walks them for the
// directories generator (GetGitDirectories: filepath.WalkDir, hidden directories and all below
// them skipped), in the walk's order. A checkout holds the directories of its tracked files; a
// submodule would be checked out too, which is not reproduced.
func (r *Repo) Directories(commit string, includeHidden bool) ([]string, error) {
	if includeHidden {
		return nil, notEvaluated{"the directories generator with reposerver.include.hidden.directories (it lists the checkout's .git too)"}
	}
	all, err := r.tree(commit, false)
	if err != nil {
		return nil, err
	}
	for _, e := range all {
		if e.mode == "160000" {
			return nil, notEvaluated{fmt.Sprintf("the directories generator over a commit with the submodule %s", e.path)}
		}
	}
	trees, err := r.tree(commit, true)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range trees {
		if hidden(e.path) {
			continue
		}
		out = append(out, e.path)
	}
	slices.SortFunc(out, walkOrder)
	return out, nil
}

func hidden(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// walkOrder is filepath.WalkDir's order: depth first, each directory's entries by name.
func walkOrder(a, b string) int {
	return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
}

// Files lists the files a pathspec matches at the commit, as the repo-server lists them for the
// files generator: `git ls-files --full-name -z -- PATTERN` in a checkout of the commit (a
// pathspec: `*` matches `/`, a directory matches everything below it), run here on an index read
// from the commit, so that nothing of a working tree counts. Symbolic links and submodules, which
// the repo-server reads through its checkout, are not reproduced.
func (r *Repo) Files(commit, pattern string) (map[string][]byte, error) {
	if pattern == "" {
		pattern = "."
	}
	tmp, err := os.MkdirTemp("", "unprune-index-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return nil, err
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"), "GIT_DIR=" + r.gitDir, "GIT_WORK_TREE=" + work}
	if _, err := r.git(env, "read-tree", commit); err != nil {
		return nil, err
	}
	out, err := r.gitIn(work, env, "ls-files", longFlag("full-name"), "-z", "-s", "--", pattern)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, rec := range records(out) {
		// ls-files -s: mode, object, stage.
		f, p := rec.fields, rec.path
		switch f[0] {
		case "120000":
			return nil, notEvaluated{fmt.Sprintf("the files generator matching the symbolic link %s", p)}
		case "160000":
			return nil, notEvaluated{fmt.Sprintf("the files generator matching the submodule %s", p)}
		}
		content, err := r.git(nil, "cat-file", "blob", f[1])
		if err != nil {
			return nil, err
		}
		files[p] = content
	}
	return files, nil
}

// record is one NUL-terminated line of git's -z output: three fields, a tab, a path.
type record struct {
	fields []string
	path   string
}

func records(out []byte) []record {
	var rs []record
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 {
			rs = append(rs, record{fields: f, path: p})
		}
	}
	return rs
}

// gitParams evaluates a git generator against the given repository: directories when it lists
// any, else files (git.go GenerateParams).
func (e *evaluation) gitParams(spec map[string]any) ([]map[string]any, error) {
	repoURL := fields.String(spec["repoURL"])
	repo := e.src.Repo
	switch {
	case repo == nil:
		return nil, notEvaluated{fmt.Sprintf("the git generator reading %s without a clone of it (give one with %v)", repoURL, option.RepoDir)}
	case !repo.Serves(repoURL):
		return nil, notEvaluated{fmt.Sprintf("the git generator reading %s, which %s is not (its remotes: %s)", repoURL, repo.Dir, strings.Join(repo.urls, ", "))}
	}
	commit, err := repo.Resolve(fields.String(spec["revision"]))
	if err != nil {
		return nil, err
	}
	prefix := fields.String(spec["pathParamPrefix"])
	values := stringValues(spec["values"])
	var params []map[string]any
	switch {
	case len(fields.List(spec["directories"])) > 0:
		dirs, err := repo.Directories(commit, e.src.Controller.IncludeHiddenDirectories)
		if err != nil {
			return nil, err
		}
		for _, d := range filterDirectories(fields.List(spec["directories"]), dirs) {
			p := dirParams(d, prefix, e.s.GoTemplate)
			if err := e.appendValues(values, p); err != nil {
				return nil, err
			}
			params = append(params, p)
		}
	case len(fields.List(spec["files"])) > 0:
		if e.src.Controller.NewGitFileGlobbing {
			return nil, notEvaluated{"the files generator with applicationsetcontroller.enable.new.git.file.globbing (doublestar globs over the checkout)"}
		}
		files := map[string][]byte{}
		var excludes []string
		for _, x := range fields.List(spec["files"]) {
			m, _ := x.(map[string]any)
			// Before v3.1.0 every entry is read as an include, exclude: true or not
			// (argocd.RuleAppSetFilesExclude).
			if m["exclude"] == true {
				switch e.rules.filesExclude {
				case unknownRule:
					return nil, notEvaluated{"the files generator with exclude: true entries (Argo CD honours them from v3.1.0 and reads them as includes before; its version is unknown)"}
				case ruleOn:
					excludes = append(excludes, fields.String(m["path"]))
					continue
				}
			}
			got, err := repo.Files(commit, fields.String(m["path"]))
			if err != nil {
				return nil, err
			}
			for k, v := range got {
				files[k] = v
			}
		}
		for _, pattern := range excludes {
			got, err := repo.Files(commit, pattern)
			if err != nil {
				return nil, err
			}
			for k := range got {
				delete(files, k)
			}
		}
		names := make([]string, 0, len(files))
		for k := range files {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, f := range names {
			ps, err := e.fileParams(f, files[f], prefix, values)
			if err != nil {
				return nil, fmt.Errorf("unable to process file '%s' from repository '%s': %w", f, repoURL, err)
			}
			params = append(params, ps...)
		}
	default:
		return nil, errors.New("git generator has neither directories nor files")
	}
	return params, nil
}

// filterDirectories keeps the directories an include pattern matches and no exclude pattern does,
// patterns read with path.Match (git.go filterApps; a pattern in error matches nothing).
func filterDirectories(items []any, dirs []string) []string {
	var out []string
	for _, d := range dirs {
		include, exclude := false, false
		for _, x := range items {
			m, _ := x.(map[string]any)
			ok, err := path.Match(fields.String(m["path"]), d)
			if err != nil || !ok {
				continue
			}
			if m["exclude"] == true {
				exclude = true
			} else {
				include = true
			}
		}
		if include && !exclude {
			out = append(out, d)
		}
	}
	return out
}

// dirParams are a directory's parameters (generateParamsFromApps).
func dirParams(p, prefix string, goTemplate bool) map[string]any {
	params := map[string]any{}
	if goTemplate {
		pp := map[string]any{"path": p, "basename": path.Base(p), "basenameNormalized": SanitizeName(path.Base(p)), "segments": strings.Split(p, "/")}
		if prefix != "" {
			params[prefix] = map[string]any{"path": pp}
		} else {
			params["path"] = pp
		}
		return params
	}
	name := "path"
	if prefix != "" {
		name = prefix + ".path"
	}
	params[name] = p
	params[name+".basename"] = path.Base(p)
	params[name+".basenameNormalized"] = SanitizeName(path.Base(p))
	for i, s := range strings.Split(p, "/") {
		if s != "" {
			params[name+"["+strconv.Itoa(i)+"]"] = s
		}
	}
	return params
}

// fileParams are a file's parameter sets (generateParamsFromGitFile): its object, or each of its
// list, flattened to strings without goTemplate, with its path's parameters and the values.
func (e *evaluation) fileParams(file string, content []byte, prefix string, values map[string]string) ([]map[string]any, error) {
	var objects []map[string]any
	single := map[string]any{}
	if err := yaml.Unmarshal(content, &single); err == nil {
		objects = append(objects, single)
	} else if err := yaml.Unmarshal(content, &objects); err != nil {
		return nil, fmt.Errorf("unable to parse file: %w", err)
	}
	dir := path.Dir(file)
	var out []map[string]any
	for _, o := range objects {
		params := map[string]any{}
		if e.s.GoTemplate {
			for k, v := range o {
				params[k] = v
			}
			pp := map[string]any{"path": dir, "basename": path.Base(dir), "filename": path.Base(file),
				"basenameNormalized": SanitizeName(path.Base(dir)), "filenameNormalized": SanitizeName(path.Base(file)), "segments": strings.Split(dir, "/")}
			if prefix != "" {
				params[prefix] = map[string]any{"path": pp}
			} else {
				params["path"] = pp
			}
		} else {
			flat, err := flattenObject(o)
			if err != nil {
				return nil, fmt.Errorf("error flattening object: %w", err)
			}
			for k, v := range flat {
				params[k] = fmt.Sprintf("%v", v)
			}
			name := "path"
			if prefix != "" {
				name = prefix + ".path"
			}
			params[name] = dir
			params[name+".basename"] = path.Base(dir)
			params[name+".filename"] = path.Base(file)
			params[name+".basenameNormalized"] = SanitizeName(path.Base(dir))
			params[name+".filenameNormalized"] = SanitizeName(path.Base(file))
			for i, s := range strings.Split(dir, "/") {
				if s != "" {
					params[name+"["+strconv.Itoa(i)+"]"] = s
				}
			}
		}
		if err := e.appendValues(values, params); err != nil {
			return nil, fmt.Errorf("failed to append templated values: %w", err)
		}
		out = append(out, params)
	}
	return out, nil
}

// longFlag spells a long option of another program (git's here): unprune's own options are named
// through internal/option, never spelled below the command line.
func longFlag(name string) string { return "--" + name }
