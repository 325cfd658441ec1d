package main

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The UI extension's bundle, as extension/build.mjs packs it for argocd-extension-installer, which
// untars it and copies resources/* into argocd-server's /tmp/extensions/resources/.
const (
	extensionTar      = "extension-unprune.tar"
	extensionChecksum = "extension-unprune_checksums.txt"
	extensionJS       = "resources/unprune/extension-unprune.js"
)

// extraFiles resolves the configuration's extra files — release.extra_files, which a release
// uploads, and checksum.extra_files, which its checksums file lists — relative to root. A glob that
// matches nothing is an error: the release would ship without them.
func extraFiles(c *Config, root string) (upload, summed []string, err error) {
	resolve := func(section string, files []ExtraFile) ([]string, error) {
		var out []string
		for _, f := range files {
			matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(f.Glob)))
			if err != nil {
				return nil, fmt.Errorf("%s glob %s: %w", section, f.Glob, err)
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("%s: nothing matches %s (the UI extension is built by `make extension VERSION=…`)", section, f.Glob)
			}
			out = append(out, matches...)
		}
		return out, nil
	}
	if upload, err = resolve("release.extra_files", c.Release.ExtraFiles); err != nil {
		return nil, nil, err
	}
	if summed, err = resolve("checksum.extra_files", c.Checksum.ExtraFiles); err != nil {
		return nil, nil, err
	}
	return upload, summed, nil
}

// CheckExtension fails unless a directory's extension bundle is what argocd-extension-installer
// installs for release tag: the tar holds resources/unprune/extension-unprune.js, whose banner
// names the tag (extension/build.mjs stamps it), and the checksum file beside it gives the tar's
// sha256 — the installer compares the two, and refuses the bundle when they differ.
func CheckExtension(dir, tag string) error {
	tarPath := filepath.Join(dir, extensionTar)
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var banner string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tarPath, err)
		}
		if h.Name == extensionJS && h.Typeflag == tar.TypeReg {
			line, err := bufio.NewReader(tr).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("%s: %s: %w", tarPath, extensionJS, err)
			}
			banner = line
		}
	}
	switch {
	case banner == "":
		return fmt.Errorf("%s holds no %s: argocd-extension-installer would install nothing argocd-server serves", tarPath, extensionJS)
	case !strings.Contains(banner, " UI extension "+tag+" "):
		return fmt.Errorf("%s is not the bundle of %s (its banner: %q): build it with `make extension VERSION=%s`", tarPath, tag, strings.TrimSpace(banner), tag)
	}
	sums, err := ReadChecksums(filepath.Join(dir, extensionChecksum))
	if err != nil {
		return err
	}
	sum, err := sha256File(tarPath)
	if err != nil {
		return err
	}
	if sums[extensionTar] != sum {
		return fmt.Errorf("%s gives %s for %s, which is %s: the installer would refuse it", extensionChecksum, sums[extensionTar], extensionTar, sum)
	}
	return nil
}

// copyFile copies a file into dir, keeping its name.
func copyFile(src, dir string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644)
}
