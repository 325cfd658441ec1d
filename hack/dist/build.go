package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Dist builds a configuration's binaries with the go command and packs its archives.
type Dist struct {
	Config  *Config
	Root    string // the module root: builds run and extra files are read here
	Out     string // where binaries, archives and the checksums file go
	Release Release
	Log     io.Writer
	// ExtraFiles copies the configuration's release.extra_files (the UI extension's bundle, built
	// before) into Out and lists checksum.extra_files in the checksums file, as goreleaser does.
	ExtraFiles bool
	// Extras are the extra files Run copied into Out.
	Extras []string
}

// Artifact is one archive written.
type Artifact struct {
	Name     string
	Platform Platform
	SHA256   string
}

// Run builds and packs every archive for the given platforms, then writes the checksums file. It
// returns the archives written and the checksums file's path.
func (d *Dist) Run(platforms []Platform) ([]Artifact, string, error) {
	if err := os.MkdirAll(d.Out, 0o755); err != nil {
		return nil, "", err
	}
	var arts []Artifact
	for _, a := range d.Config.Archives {
		builds, err := a.Builds(d.Config)
		if err != nil {
			return nil, "", err
		}
		for _, p := range platforms {
			entries, err := d.buildAll(builds, p)
			if err != nil {
				return nil, "", err
			}
			if len(entries) == 0 {
				continue
			}
			for _, f := range a.Files {
				dst, err := f.Destination()
				if err != nil {
					return nil, "", err
				}
				src := filepath.Join(d.Root, filepath.FromSlash(f.Src))
				st, err := os.Stat(src)
				if err != nil {
					return nil, "", fmt.Errorf("archive %s: %w", a.ID, err)
				}
				// Git keeps only the executable bit: the checkout's umask must not change the archive.
				mode := os.FileMode(0o644)
				if st.Mode().Perm()&0o111 != 0 {
					mode = 0o755
				}
				if f.Info.Mode != 0 {
					mode = os.FileMode(f.Info.Mode).Perm()
				}
				entries = append(entries, entry{src: src, dst: dst, mode: mode})
			}
			name, err := d.Config.ArchiveName(a, d.Release, p)
			if err != nil {
				return nil, "", err
			}
			file := filepath.Join(d.Out, name)
			if err := d.pack(file, a.Format(p), entries); err != nil {
				return nil, "", fmt.Errorf("%s: %w", name, err)
			}
			sum, err := sha256File(file)
			if err != nil {
				return nil, "", err
			}
			fmt.Fprintf(d.Log, "dist: %s\n", name)
			arts = append(arts, Artifact{Name: name, Platform: p, SHA256: sum})
		}
	}
	sort.Slice(arts, func(i, j int) bool { return arts[i].Name < arts[j].Name })
	name, err := d.Config.ChecksumName(d.Release)
	if err != nil {
		return nil, "", err
	}
	lines := []string{}
	for _, a := range arts {
		lines = append(lines, fmt.Sprintf("%s  %s", a.SHA256, a.Name))
	}
	if d.ExtraFiles {
		extra, err := d.copyExtraFiles()
		if err != nil {
			return nil, "", err
		}
		lines = append(lines, extra...)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	sums := filepath.Join(d.Out, name)
	if err := os.WriteFile(sums, []byte(b.String()), 0o644); err != nil {
		return nil, "", err
	}
	return arts, sums, nil
}

// copyExtraFiles checks the UI extension's bundle is this release's, copies the release's extra
// files into Out, and returns the checksum lines of checksum.extra_files.
func (d *Dist) copyExtraFiles() ([]string, error) {
	upload, summed, err := extraFiles(d.Config, d.Root)
	if err != nil {
		return nil, err
	}
	for _, f := range upload {
		if filepath.Base(f) == extensionTar {
			if err := CheckExtension(filepath.Dir(f), d.Release.Tag); err != nil {
				return nil, err
			}
		}
		if err := copyFile(f, d.Out); err != nil {
			return nil, err
		}
		d.Extras = append(d.Extras, filepath.Join(d.Out, filepath.Base(f)))
		fmt.Fprintf(d.Log, "dist: %s\n", filepath.Base(f))
	}
	var lines []string
	for _, f := range summed {
		sum, err := sha256File(f)
		if err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprintf("%s  %s", sum, filepath.Base(f)))
	}
	return lines, nil
}

func targets(b Build, p Platform) bool {
	for _, q := range b.Platforms() {
		if q == p {
			return true
		}
	}
	return false
}

// buildAll builds a platform's binaries side by side (each go build links one binary on its own;
// linking is most of the time) and returns them in the builds' order.
func (d *Dist) buildAll(builds []Build, p Platform) ([]entry, error) {
	type result struct {
		e   entry
		err error
	}
	results := make([]*result, len(builds))
	// The builds' logs interleave line by line, never within a write.
	locked := *d
	locked.Log = &lockedWriter{w: d.Log}
	var wg sync.WaitGroup
	for i, b := range builds {
		if !targets(b, p) {
			continue
		}
		results[i] = &result{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			bin, err := locked.build(b, p)
			results[i].e, results[i].err = entry{src: bin, dst: b.BinaryName(p), mode: 0o755}, err
		}()
	}
	wg.Wait()
	var entries []entry
	for _, r := range results {
		if r == nil {
			continue
		}
		if r.err != nil {
			return nil, r.err
		}
		entries = append(entries, r.e)
	}
	return entries, nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// build runs go build as goreleaser would: the build's env, flags and rendered ldflags.
func (d *Dist) build(b Build, p Platform) (string, error) {
	ldflags, err := d.Config.Ldflags(b, d.Release, p)
	if err != nil {
		return "", err
	}
	out, err := filepath.Abs(filepath.Join(d.Out, p.OS+"_"+p.Arch, b.BinaryName(p)))
	if err != nil {
		return "", err
	}
	args := append([]string{"build", "-o", out}, b.Flags...)
	args = append(args, "-ldflags="+ldflags, b.Main)
	cmd := exec.Command("go", args...)
	cmd.Dir = d.Root
	cmd.Env = append(append(os.Environ(), b.Env...), "GOOS="+p.OS, "GOARCH="+p.Arch)
	cmd.Stdout, cmd.Stderr = d.Log, d.Log
	fmt.Fprintf(d.Log, "dist: GOOS=%s GOARCH=%s %s go %s\n", p.OS, p.Arch, strings.Join(b.Env, " "), strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s for %s: %w", b.ID, p, err)
	}
	return out, nil
}

type entry struct {
	src, dst string
	mode     os.FileMode
}

// pack writes an archive whose entries carry the commit's time, so the same commit packs the
// same bytes.
func (d *Dist) pack(file, format string, entries []entry) error {
	mtime := d.Release.CommitTime
	if mtime.IsZero() {
		mtime = time.Date(1980, 1, 2, 0, 0, 0, 0, time.UTC) // zip's epoch, with a day's margin
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	switch format {
	case "tar.gz", "tgz":
		err = packTarGz(f, entries, mtime)
	case "zip":
		err = packZip(f, entries, mtime)
	default:
		err = fmt.Errorf("archive format %q: dist packs tar.gz and zip", format)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func packTarGz(w io.Writer, entries []entry, mtime time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: e.dst, Mode: int64(e.mode), Size: int64(len(data)), ModTime: mtime,
			Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func packZip(w io.Writer, entries []entry, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: e.dst, Method: zip.Deflate, Modified: mtime}
		h.SetMode(e.mode)
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}

func sha256File(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
