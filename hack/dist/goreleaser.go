package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"
)

// Config is the part of .goreleaser.yaml that decides what a release ships. Builds, archives, the
// checksum and the release's extra files are decoded strictly: a field dist does not know would
// make its artifacts differ from goreleaser's, so it is an error rather than ignored. Sections
// that change no artifact (before, snapshot, changelog) are not read.
type Config struct {
	Version     int            `json:"version"`
	ProjectName string         `json:"project_name"`
	Builds      []Build        `json:"builds"`
	Archives    []Archive      `json:"archives"`
	Checksum    Checksum       `json:"checksum"`
	Release     ReleaseSection `json:"release"`
}

// ReleaseSection is what a release uploads besides the archives.
type ReleaseSection struct {
	ExtraFiles []ExtraFile `json:"extra_files"`
}

// ExtraFile is a file built before the release (the UI extension's bundle), by a glob relative to
// the configuration's directory.
type ExtraFile struct {
	Glob string `json:"glob"`
}

// Build is one goreleaser build: one binary for every goos × goarch.
type Build struct {
	ID           string   `json:"id"`
	Main         string   `json:"main"`
	Binary       string   `json:"binary"`
	Env          []string `json:"env"`
	Goos         []string `json:"goos"`
	Goarch       []string `json:"goarch"`
	Flags        []string `json:"flags"`
	Ldflags      []string `json:"ldflags"`
	ModTimestamp string   `json:"mod_timestamp"`
}

// Archive packs the binaries of some builds, per platform, with extra files.
type Archive struct {
	ID              string           `json:"id"`
	IDs             []string         `json:"ids"`
	NameTemplate    string           `json:"name_template"`
	Formats         []string         `json:"formats"`
	FormatOverrides []FormatOverride `json:"format_overrides"`
	Files           []ArchiveFile    `json:"files"`
}

// FormatOverride gives one goos other archive formats.
type FormatOverride struct {
	Goos    string   `json:"goos"`
	Formats []string `json:"formats"`
}

// ArchiveFile is an extra file: a plain path, or src with strip_parent/dst and a mode.
type ArchiveFile struct {
	Src         string   `json:"src"`
	Dst         string   `json:"dst,omitempty"`
	StripParent bool     `json:"strip_parent,omitempty"`
	Info        FileInfo `json:"info,omitempty"`
}

// FileInfo overrides a file's mode in the archive.
type FileInfo struct {
	Mode uint32 `json:"mode,omitempty"`
}

// UnmarshalJSON accepts goreleaser's two spellings of a file: "LICENSE" and {src: LICENSE, …}.
func (f *ArchiveFile) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = ArchiveFile{Src: s}
		return nil
	}
	type plain ArchiveFile
	var p plain
	if err := strictJSON(b, &p); err != nil {
		return err
	}
	*f = ArchiveFile(p)
	return nil
}

// Checksum names the checksums file, and the extra files it lists besides the archives.
type Checksum struct {
	NameTemplate string      `json:"name_template"`
	Algorithm    string      `json:"algorithm"`
	ExtraFiles   []ExtraFile `json:"extra_files"`
}

// LoadConfig reads a goreleaser configuration.
func LoadConfig(file string) (*Config, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c := &Config{}
	for key, dst := range map[string]any{"version": &c.Version, "project_name": &c.ProjectName,
		"builds": &c.Builds, "archives": &c.Archives, "checksum": &c.Checksum, "release": &c.Release} {
		if v, ok := top[key]; ok {
			if err := strictJSON(v, dst); err != nil {
				return nil, fmt.Errorf("%s: %s: %w (hack/dist builds what goreleaser would; teach it this field or leave it out)", file, key, err)
			}
		}
	}
	if c.Version != 2 {
		return nil, fmt.Errorf("%s: version %d: dist reads goreleaser v2 configurations (version: 2)", file, c.Version)
	}
	if c.ProjectName == "" || len(c.Builds) == 0 || len(c.Archives) == 0 {
		return nil, fmt.Errorf("%s: project_name, builds and archives must be set", file)
	}
	return c, nil
}

func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Platform is one goos/goarch pair.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform reads "linux/amd64".
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: use GOOS/GOARCH, e.g. linux/amd64", s)
	}
	return Platform{OS: os, Arch: arch}, nil
}

// Platforms lists the build's goos × goarch.
func (b Build) Platforms() []Platform {
	var out []Platform
	for _, o := range b.Goos {
		for _, a := range b.Goarch {
			out = append(out, Platform{OS: o, Arch: a})
		}
	}
	return out
}

// Platforms is every platform any build targets, sorted.
func (c *Config) Platforms() []Platform {
	seen := map[Platform]bool{}
	var out []Platform
	for _, b := range c.Builds {
		for _, p := range b.Platforms() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// BinaryName is the file name of a build's binary on a platform (goreleaser adds .exe on Windows).
func (b Build) BinaryName(p Platform) string {
	if p.OS == "windows" {
		return b.Binary + ".exe"
	}
	return b.Binary
}

// Builds returns the builds an archive packs.
func (a Archive) Builds(c *Config) ([]Build, error) {
	if len(a.IDs) == 0 {
		return c.Builds, nil
	}
	var out []Build
	for _, id := range a.IDs {
		found := false
		for _, b := range c.Builds {
			if b.ID == id {
				out = append(out, b)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("archive %s: no build with id %q", a.ID, id)
		}
	}
	return out, nil
}

// Format is the archive format for a platform: the first of formats, or of the goos's override.
func (a Archive) Format(p Platform) string {
	formats := a.Formats
	for _, o := range a.FormatOverrides {
		if o.Goos == p.OS {
			formats = o.Formats
		}
	}
	if len(formats) == 0 {
		return "tar.gz"
	}
	return formats[0]
}

// Release identifies what is built: the version and the commit it is built from.
type Release struct {
	// Tag is the version as tagged, v-prefixed (v1.2.3); goreleaser's .Version drops the v.
	Tag        string
	Commit     string
	CommitTime time.Time
}

// tmplData holds the goreleaser template fields dist supports; a template using another fails.
type tmplData struct {
	ProjectName     string
	Version         string
	Tag             string
	Os, Arch        string
	Commit          string
	FullCommit      string
	ShortCommit     string
	CommitDate      string
	CommitTimestamp string
}

func (c *Config) data(r Release, p Platform) tmplData {
	short := r.Commit
	if len(short) > 7 {
		short = short[:7]
	}
	d := tmplData{ProjectName: c.ProjectName, Version: strings.TrimPrefix(r.Tag, "v"), Tag: r.Tag,
		Os: p.OS, Arch: p.Arch, Commit: r.Commit, FullCommit: r.Commit, ShortCommit: short}
	if !r.CommitTime.IsZero() {
		d.CommitDate = r.CommitTime.UTC().Format(time.RFC3339)
		d.CommitTimestamp = fmt.Sprint(r.CommitTime.Unix())
	}
	return d
}

// render executes one goreleaser template.
func (c *Config) render(s string, r Release, p Platform) (string, error) {
	t, err := template.New("").Option("missingkey=error").Parse(s)
	if err != nil {
		return "", fmt.Errorf("template %q: %w", s, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, c.data(r, p)); err != nil {
		return "", fmt.Errorf("template %q: %w", s, err)
	}
	return b.String(), nil
}

// Ldflags renders a build's ldflags as goreleaser passes them: joined by spaces.
func (c *Config) Ldflags(b Build, r Release, p Platform) (string, error) {
	var parts []string
	for _, f := range b.Ldflags {
		s, err := c.render(f, r, p)
		if err != nil {
			return "", fmt.Errorf("build %s: ldflags: %w", b.ID, err)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " "), nil
}

// ArchiveName is the archive's file name on a platform, with its extension.
func (c *Config) ArchiveName(a Archive, r Release, p Platform) (string, error) {
	tmpl := a.NameTemplate
	if tmpl == "" {
		tmpl = "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}"
	}
	name, err := c.render(tmpl, r, p)
	if err != nil {
		return "", fmt.Errorf("archive %s: %w", a.ID, err)
	}
	return name + "." + a.Format(p), nil
}

// ChecksumName is the checksums file's name.
func (c *Config) ChecksumName(r Release) (string, error) {
	tmpl := c.Checksum.NameTemplate
	if tmpl == "" {
		tmpl = "{{ .ProjectName }}_{{ .Version }}_checksums.txt"
	}
	return c.render(tmpl, r, Platform{})
}

// Destination is where an extra file lands in the archive, by goreleaser's rules for a plain path
// (no glob): as is; with strip_parent, its base name under dst; with dst alone, dst itself.
func (f ArchiveFile) Destination() (string, error) {
	if strings.ContainsAny(f.Src, "*?[{") {
		return "", fmt.Errorf("archive file %q: dist supports plain paths, not globs", f.Src)
	}
	switch {
	case f.StripParent:
		return path.Join(f.Dst, path.Base(f.Src)), nil
	case f.Dst != "":
		return path.Clean(f.Dst), nil
	default:
		return path.Clean(f.Src), nil
	}
}
