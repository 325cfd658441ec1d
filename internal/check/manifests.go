package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Manifest is one desired object, as rendered by the user's CI or by Argo CD.
type Manifest struct {
	Object *unstructured.Unstructured
	// Source says where it came from (file and document), for messages.
	Source string
}

// ReadManifests reads the manifests at path: a file or a directory (recursively, *.yaml, *.yml,
// *.json, in lexical order, as kustomize build or helm template writes them), or "-" for stdin.
// Each holds YAML or JSON documents; a List's items are expanded; empty documents are skipped.
func ReadManifests(path string, stdin io.Reader) ([]Manifest, error) {
	if path == "-" {
		return decode("stdin", stdin)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return decode(path, f)
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Manifest
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms, err := decode(p, bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// ParseManifests reads manifests given as JSON strings (Argo CD's manifests endpoint).
func ParseManifests(source string, docs []string) ([]Manifest, error) {
	var out []Manifest
	for i, d := range docs {
		ms, err := decode(fmt.Sprintf("%s #%d", source, i+1), strings.NewReader(d))
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

func decode(source string, r io.Reader) ([]Manifest, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []Manifest
	for n := 1; ; n++ {
		obj := map[string]any{}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, n, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", source, n, err)
			}
			for i := range list.Items {
				out = append(out, Manifest{Object: &list.Items[i], Source: fmt.Sprintf("%s (document %d, item %d)", source, n, i+1)})
			}
			continue
		}
		if u.GetKind() == "" || u.GetName() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d is not a Kubernetes object (apiVersion, kind and metadata.name are required)", source, n)
		}
		out = append(out, Manifest{Object: u, Source: fmt.Sprintf("%s (document %d)", source, n)})
	}
}
