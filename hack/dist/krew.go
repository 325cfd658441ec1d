package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"text/template"
)

// krewBinary is the binary krew installs: the archive that holds it is the one the manifest names.
const krewBinary = "kubectl-unprune"

// RenderKrew fills the krew manifest template (plugins/unprune.yaml) for a release. The template
// sees .Tag (v1.2.3) and .Version (1.2.3), and two functions: `archive OS ARCH`, the file name of
// the archive that holds kubectl-unprune on that platform (by .goreleaser.yaml's name_template),
// and `sha256 NAME`, that archive's checksum from the checksums file.
func RenderKrew(tmplFile string, c *Config, r Release, sums map[string]string) ([]byte, error) {
	raw, err := os.ReadFile(tmplFile)
	if err != nil {
		return nil, err
	}
	a, err := c.krewArchive()
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{
		"archive": func(goos, goarch string) (string, error) {
			return c.ArchiveName(a, r, Platform{OS: goos, Arch: goarch})
		},
		"sha256": func(name string) (string, error) {
			s, ok := sums[name]
			if !ok {
				return "", fmt.Errorf("no checksum for %s (build it with make dist, or pass goreleaser's checksums file)", name)
			}
			return s, nil
		},
	}
	t, err := template.New(tmplFile).Funcs(funcs).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	data := struct{ Tag, Version string }{Tag: r.Tag, Version: strings.TrimPrefix(r.Tag, "v")}
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (c *Config) krewArchive() (Archive, error) {
	for _, a := range c.Archives {
		builds, err := a.Builds(c)
		if err != nil {
			return Archive{}, err
		}
		for _, b := range builds {
			if b.Binary == krewBinary {
				return a, nil
			}
		}
	}
	return Archive{}, fmt.Errorf("no archive holds %s", krewBinary)
}

// ReadChecksums reads a checksums file of "<sha256>  <name>" lines (sha256sum's, and goreleaser's).
func ReadChecksums(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"<sha256>  <name>\"", file, n)
		}
		sums[strings.TrimPrefix(fields[1], "*")] = fields[0]
	}
	return sums, s.Err()
}
