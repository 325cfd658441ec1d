package main

import (
	"fmt"
	"os"
	"regexp"
)

// The images deploy/ runs are pinned to a release: the images: entry for the repository ko pushes to,
// in deploy/base (the watch) and deploy/ui-extension/backend (the UI extension's backend, whose tag
// also names the release whose bundle deploy/components/ui-extension installs), carries the
// release's tag. Before tagging vX.Y.Z,
//
//	go run ./hack/dist -pin-image -version vX.Y.Z
//
// writes them (commit that, then tag), and the release's before hook runs -check-image with the tag,
// so a release whose deploy/ would run another image, or install another bundle, fails before it
// builds anything.
const imageRepo = "ghcr.io/unprune/unprune"

// imageKustomizations are the kustomizations that pin imageRepo, relative to the repository.
var imageKustomizations = []string{"deploy/base/kustomization.yaml", "deploy/ui-extension/backend/kustomization.yaml"}

// imageEntryRE is the images: entry of imageRepo and its newTag, as kustomize edit writes it.
var imageEntryRE = regexp.MustCompile(`(?m)^(\s*- name: ` + regexp.QuoteMeta(imageRepo) + `\n\s+newTag: )(\S+)$`)

// releaseTagRE is a release's tag: semver, v-prefixed.
var releaseTagRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// ImageTag returns the tag a kustomization pins imageRepo to.
func ImageTag(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m := imageEntryRE.FindAllSubmatch(b, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("%s: %d images: entries for %s with a newTag; want one", path, len(m), imageRepo)
	}
	return string(m[0][2]), nil
}

// PinImage sets the tag a kustomization pins imageRepo to, changing nothing else in the file.
func PinImage(path, tag string) error {
	if !releaseTagRE.MatchString(tag) {
		return fmt.Errorf("-version %q: the image is pinned to a release tag (v1.2.3)", tag)
	}
	if _, err := ImageTag(path); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, imageEntryRE.ReplaceAll(b, []byte("${1}"+tag)), 0o644)
}

// CheckImage fails unless a kustomization pins imageRepo to tag.
func CheckImage(path, tag string) error {
	got, err := ImageTag(path)
	if err != nil {
		return err
	}
	if got != tag {
		return fmt.Errorf("%s runs %s:%s, but the release is %s: run `go run ./hack/dist -pin-image -version %s`, commit, and tag that commit",
			path, imageRepo, got, tag, tag)
	}
	return nil
}
