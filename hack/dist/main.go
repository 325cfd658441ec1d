// Command dist builds what a release ships with nothing but the go command: the builds and
// archives of .goreleaser.yaml (same platforms, flags, ldflags, archive names and contents), a
// checksums file, and the krew manifest rendered from plugins/unprune.yaml. `make dist` runs it;
// its tests keep .goreleaser.yaml honest.
//
//	go run ./hack/dist [-platforms linux/amd64,…] [-version v1.2.3] [-out dist] [-extra-files]
//	go run ./hack/dist -krew-only -checksums dist/checksums.txt -version v1.2.3   # after goreleaser
//	go run ./hack/dist -list -version v1.2.3                                       # the archive names
//	go run ./hack/dist -print-version                                              # the version a build stamps
//	go run ./hack/dist -check-extension -version v1.2.3  # extension/dist holds that release's bundle (the release's before hook)
//	go run ./hack/dist -pin-image -version v1.2.3     # deploy/ runs that release's image and bundle (before tagging)
//	go run ./hack/dist -check-image -version v1.2.3   # fails unless it does (the release's before hook)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", ".goreleaser.yaml", "goreleaser configuration; builds run in its directory")
	out := fs.String("out", "dist", "where binaries, archives, checksums and the krew manifest go")
	tag := fs.String("version", "", "version, v-prefixed (default: git describe of a v* tag, else v0.0.0-devel)")
	commit := fs.String("commit", "", "commit built (default: git rev-parse HEAD)")
	commitTime := fs.String("commit-time", "", "commit time, RFC 3339 or Unix seconds (default: the commit's)")
	only := fs.String("platforms", "", "comma-separated GOOS/GOARCH to build (default: all the configuration's)")
	krewTmpl := fs.String("krew", "plugins/unprune.yaml", "krew manifest template, relative to the configuration's directory")
	krewOnly := fs.Bool("krew-only", false, "build nothing: render the krew manifest from -checksums")
	checksums := fs.String("checksums", "", "with -krew-only: the checksums file of the archives (goreleaser's or dist's)")
	list := fs.Bool("list", false, "build nothing: print each platform's archive name")
	pinImage := fs.Bool("pin-image", false, "build nothing: pin deploy/'s image (and so the UI extension's bundle) to -version")
	checkImage := fs.Bool("check-image", false, "build nothing: fail unless deploy/'s image is pinned to -version")
	withExtras := fs.Bool("extra-files", false, "copy the release's extra files (the UI extension's bundle, built before: make extension VERSION=…) into -out and list them in the checksums file")
	printVersion := fs.Bool("print-version", false, "build nothing: print the version a build would stamp (-version, else git describe)")
	checkExtension := fs.Bool("check-extension", false, "build nothing: fail unless extension/dist holds the UI extension's bundle of -version, as the installer expects it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c, err := LoadConfig(*config)
	if err != nil {
		return err
	}
	root := filepath.Dir(*config)
	if *pinImage || *checkImage {
		if *tag == "" {
			return errors.New("-pin-image and -check-image need -version, the release's tag")
		}
		for _, k := range imageKustomizations {
			path := filepath.Join(root, k)
			if *checkImage {
				if err := CheckImage(path, *tag); err != nil {
					return err
				}
				continue
			}
			if err := PinImage(path, *tag); err != nil {
				return err
			}
			fmt.Fprintln(stdout, path)
		}
		return nil
	}
	rel, err := release(root, *tag, *commit, *commitTime)
	if err != nil {
		return err
	}
	if *list {
		return listArchives(c, rel, stdout)
	}
	if *printVersion {
		fmt.Fprintln(stdout, rel.Tag)
		return nil
	}
	if *checkExtension {
		return CheckExtension(filepath.Join(root, "extension", "dist"), rel.Tag)
	}
	manifest := filepath.Join(*out, filepath.Base(*krewTmpl))
	if *krewOnly {
		if *checksums == "" {
			return errors.New("-krew-only needs -checksums")
		}
		sums, err := ReadChecksums(*checksums)
		if err != nil {
			return err
		}
		return writeKrew(filepath.Join(root, *krewTmpl), manifest, c, rel, sums, stdout)
	}

	platforms := c.Platforms()
	partial := false
	if *only != "" {
		platforms = nil
		for _, s := range strings.Split(*only, ",") {
			p, err := ParsePlatform(strings.TrimSpace(s))
			if err != nil {
				return err
			}
			platforms = append(platforms, p)
		}
		partial = len(platforms) < len(c.Platforms())
	}
	d := &Dist{Config: c, Root: root, Out: *out, Release: rel, Log: stderr, ExtraFiles: *withExtras}
	arts, sumsFile, err := d.Run(platforms)
	if err != nil {
		return err
	}
	for _, a := range arts {
		fmt.Fprintln(stdout, filepath.Join(*out, a.Name))
	}
	for _, e := range d.Extras {
		fmt.Fprintln(stdout, e)
	}
	fmt.Fprintln(stdout, sumsFile)
	if partial {
		fmt.Fprintln(stderr, "dist: some platforms only: no krew manifest (it names every platform's archive)")
		return nil
	}
	sums, err := ReadChecksums(sumsFile)
	if err != nil {
		return err
	}
	return writeKrew(filepath.Join(root, *krewTmpl), manifest, c, rel, sums, stdout)
}

// listArchives prints "GOOS/GOARCH NAME" for every archive the configuration makes.
func listArchives(c *Config, r Release, stdout io.Writer) error {
	for _, a := range c.Archives {
		builds, err := a.Builds(c)
		if err != nil {
			return err
		}
		for _, p := range c.Platforms() {
			if !slices.ContainsFunc(builds, func(b Build) bool { return targets(b, p) }) {
				continue
			}
			name, err := c.ArchiveName(a, r, p)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s %s\n", p, name)
		}
	}
	return nil
}

func writeKrew(tmpl, file string, c *Config, r Release, sums map[string]string, stdout io.Writer) error {
	b, err := RenderKrew(tmpl, c, r, sums)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, file)
	return nil
}

// release resolves the version and commit from the flags, else from git.
func release(root, tag, commit, commitTime string) (Release, error) {
	if tag == "" {
		tag = git(root, "describe", "--tags", "--match", "v[0-9]*", "--dirty")
		if tag == "" {
			tag = "v0.0.0-devel"
		}
	}
	if !strings.HasPrefix(tag, "v") {
		return Release{}, fmt.Errorf("-version %q: use the release tag, v-prefixed (v1.2.3)", tag)
	}
	if commit == "" {
		commit = git(root, "rev-parse", "HEAD")
	}
	if commitTime == "" {
		commitTime = git(root, "log", "-1", "--format=%ct")
	}
	r := Release{Tag: tag, Commit: commit}
	if commitTime != "" {
		if secs, err := strconv.ParseInt(commitTime, 10, 64); err == nil {
			r.CommitTime = time.Unix(secs, 0).UTC()
		} else if t, err := time.Parse(time.RFC3339, commitTime); err == nil {
			r.CommitTime = t.UTC()
		} else {
			return Release{}, fmt.Errorf("-commit-time %q: use RFC 3339 or Unix seconds", commitTime)
		}
	}
	return r, nil
}

// git runs a git query in dir; an error (no git, no repository, no tag) answers "".
func git(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
