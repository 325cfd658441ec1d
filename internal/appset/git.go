package appset

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/fields"
	"github.com/unprune/unprune/internal/option"
)

// gitParams evaluates a git generator against a local checkout of its repository: directories
// (directories win when both are given) or files (applicationset/generators/repo_path_utils.go).
// The checkout is the user's: unprune cannot tell it is at the generator's revision, and says so
// in the flag's help.
func gitParams(s ApplicationSet, src Sources, spec map[string]any) ([]map[string]any, error) {
	if src.RepoDir == "" {
		return nil, fmt.Errorf("the git generator reads %s: give a checkout of it with %v", fields.String(spec["repoURL"]), option.RepoDir)
	}
	prefix := fields.String(spec["pathParamPrefix"])
	var params []map[string]any
	switch {
	case len(fields.List(spec["directories"])) > 0:
		dirs, err := walk(src.RepoDir, true)
		if err != nil {
			return nil, err
		}
		patterns, err := pathPatterns(spec["directories"])
		if err != nil {
			return nil, err
		}
		for _, d := range filterPaths(patterns, dirs) {
			params = append(params, pathParams(d, prefix, s.GoTemplate))
		}
	case len(fields.List(spec["files"])) > 0:
		files, err := walk(src.RepoDir, false)
		if err != nil {
			return nil, err
		}
		patterns, err := pathPatterns(spec["files"])
		if err != nil {
			return nil, err
		}
		for _, f := range filterPaths(patterns, files) {
			ps, err := fileParams(src.RepoDir, f, prefix, s.GoTemplate)
			if err != nil {
				return nil, err
			}
			params = append(params, ps...)
		}
	default:
		return nil, fmt.Errorf("the git generator has neither directories nor files")
	}
	return withValues(s, params, fields.Map(spec, "values"))
}

type pathPattern struct {
	path    string
	exclude bool
}

// pathPatterns reads the patterns; "**" is the repo-server's doublestar glob, which path.Match does
// not implement: refused rather than guessed.
func pathPatterns(v any) ([]pathPattern, error) {
	var out []pathPattern
	for _, x := range fields.List(v) {
		m, _ := x.(map[string]any)
		p := fields.String(m["path"])
		if strings.Contains(p, "**") {
			return nil, fmt.Errorf("git path pattern %q: ** is not implemented by unprune", p)
		}
		exclude, _ := m["exclude"].(bool)
		out = append(out, pathPattern{path: p, exclude: exclude})
	}
	return out, nil
}

// filterPaths keeps paths matched by an include pattern and by no exclude pattern.
func filterPaths(patterns []pathPattern, paths []string) []string {
	var out []string
	for _, p := range paths {
		include, exclude := false, false
		for _, pat := range patterns {
			if ok, err := path.Match(pat.path, p); err == nil && ok {
				include = include || !pat.exclude
				exclude = exclude || pat.exclude
			}
		}
		if include && !exclude {
			out = append(out, p)
		}
	}
	return out
}

// walk lists the checkout's directories (or files), slash-separated and relative, hidden ones
// (.git) skipped, sorted.
func walk(root string, dirs bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() == dirs {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// pathParams are a directory's parameters (buildPathParameters).
func pathParams(p, prefix string, goTemplate bool) map[string]any {
	params := map[string]any{}
	if goTemplate {
		segments := []any{}
		for _, s := range strings.Split(p, "/") {
			segments = append(segments, s)
		}
		pp := map[string]any{"path": p, "basename": path.Base(p), "basenameNormalized": SanitizeName(path.Base(p)), "segments": segments}
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

// fileParams are a file's parameters: its object (or each of a list), flattened without goTemplate,
// and its path's (parseFileParams).
func fileParams(root, file, prefix string, goTemplate bool) ([]map[string]any, error) {
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	var objects []map[string]any
	single := map[string]any{}
	if err := yaml.Unmarshal(raw, &single); err == nil {
		objects = append(objects, single)
	} else if err := yaml.Unmarshal(raw, &objects); err != nil {
		return nil, fmt.Errorf("git file %s: %w", file, err)
	}
	dir := path.Dir(file)
	var out []map[string]any
	for _, o := range objects {
		params := map[string]any{}
		if goTemplate {
			for k, v := range o {
				params[k] = v
			}
		} else {
			for k, v := range flatten(o) {
				params[k] = v
			}
		}
		pp := pathParams(dir, prefix, goTemplate)
		if goTemplate {
			m := pp["path"]
			if prefix != "" {
				m = fields.Map(pp[prefix].(map[string]any), "path")
			}
			inner := m.(map[string]any)
			inner["filename"] = path.Base(file)
			inner["filenameNormalized"] = SanitizeName(path.Base(file))
		} else {
			name := "path"
			if prefix != "" {
				name = prefix + ".path"
			}
			pp[name+".filename"] = path.Base(file)
			pp[name+".filenameNormalized"] = SanitizeName(path.Base(file))
		}
		for k, v := range pp {
			params[k] = v
		}
		out = append(out, params)
	}
	return out, nil
}
