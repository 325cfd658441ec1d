package argocd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is an Argo CD release. Pre-releases and build metadata are not modelled because no
// tracking rule depends on them, and guessing where a release candidate falls relative to a
// behaviour change would be worse than admitting the version is unknown.
type Version struct {
	Major, Minor, Patch int
}

// The releases where behaviour changed are kept per release line in rules.go.

// Line is a release line, major.minor.
type Line struct{ Major, Minor int }

// Line returns the version's release line.
func (v Version) Line() Line { return Line{v.Major, v.Minor} }

// String formats the version the way Argo CD tags its images, e.g. "v3.6.1".
func (v Version) String() string {
	return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Less reports whether v is an earlier release than other.
func (v Version) Less(other Version) bool {
	if v.Major != other.Major {
		return v.Major < other.Major
	}
	if v.Minor != other.Minor {
		return v.Minor < other.Minor
	}
	return v.Patch < other.Patch
}

// AtLeast reports whether v is other or a later release.
func (v Version) AtLeast(other Version) bool {
	return !v.Less(other)
}

// ParseVersion parses an Argo CD version as users and images spell it: "v3.6.1", "3.6.1",
// "v2.14.11+abc123" (build metadata is dropped) or "3.0" (patch 0).
func ParseVersion(s string) (Version, error) {
	v, err := parseVersion(s)
	if err != nil {
		return Version{}, fmt.Errorf("invalid Argo CD version %q: %w", s, err)
	}
	return v, nil
}

func parseVersion(s string) (Version, error) {
	core := strings.TrimSpace(s)
	if core == "" {
		return Version{}, errors.New("empty; want MAJOR.MINOR[.PATCH], like v3.6.1")
	}
	core = strings.TrimPrefix(strings.TrimPrefix(core, "v"), "V")
	core, _, _ = strings.Cut(core, "+")
	if _, suffix, found := strings.Cut(core, "-"); found {
		return Version{}, fmt.Errorf("pre-release %q is not supported; pass a release version, like v3.6.1", suffix)
	}
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, errors.New("want MAJOR.MINOR[.PATCH], like v3.6.1")
	}
	names := []string{"major", "minor", "patch"}
	numbers := make([]int, 3)
	for i, part := range parts {
		n, err := parseVersionNumber(part)
		if err != nil {
			return Version{}, fmt.Errorf("%s version %q %w", names[i], part, err)
		}
		numbers[i] = n
	}
	return Version{Major: numbers[0], Minor: numbers[1], Patch: numbers[2]}, nil
}

// parseVersionNumber accepts only plain digits: strconv.Atoi alone would let "+1" or "-1" through.
func parseVersionNumber(s string) (int, error) {
	if s == "" {
		return 0, errors.New("is empty")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, errors.New("is not a number")
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("is out of range: %w", err)
	}
	return n, nil
}

// Container is the part of a workload's container spec that tells which program it runs.
type Container struct {
	Name    string
	Image   string
	Command []string
	Args    []string
}

// controllerContainerNames are the names Argo CD's manifests (argocd-application-controller) and
// its Helm chart (application-controller) give the controller's container.
var controllerContainerNames = map[string]bool{"argocd-application-controller": true, "application-controller": true}

// IsArgoCDContainer reports whether the container runs Argo CD's application controller: by its
// name, by the program it starts, or by an image whose repository is argocd. A sidecar (a proxy, a
// log shipper, a plugin) is none of these, and its image tag says nothing about Argo CD.
func IsArgoCDContainer(c Container) bool {
	if controllerContainerNames[c.Name] {
		return true
	}
	for _, arg := range append(append([]string{}, c.Command...), c.Args...) {
		if strings.HasSuffix(arg, "argocd-application-controller") {
			return true
		}
	}
	return imageRepositoryName(c.Image) == "argocd"
}

// VersionFromContainers reads the Argo CD version from the image tag of the container that runs
// Argo CD, never from another container's. found is false when no container is Argo CD's or its
// image has no release tag (a digest, "latest", a custom build).
func VersionFromContainers(containers []Container) (v Version, found bool) {
	for _, c := range containers {
		if IsArgoCDContainer(c) {
			return VersionFromImage(c.Image)
		}
	}
	return Version{}, false
}

// imageRepositoryName is the last path element of an image reference, without tag or digest:
// "argocd" for "quay.io/argoproj/argocd:v3.6.1".
func imageRepositoryName(image string) string {
	reference, _, _ := strings.Cut(strings.TrimSpace(image), "@")
	if i := strings.LastIndex(reference, "/"); i >= 0 {
		reference = reference[i+1:]
	}
	name, _, _ := strings.Cut(reference, ":")
	return name
}

// VersionFromImage reads the Argo CD version from a container image reference's tag, as in
// "quay.io/argoproj/argocd:v3.6.1", "ghcr.io/x/argocd:v2.14.11@sha256:..." or
// "localhost:5000/argocd:v3.6.1". It reports false when the reference has no tag (digest only)
// or a tag that is not a release version such as "latest": the version is then unknown.
func VersionFromImage(image string) (Version, bool) {
	reference, _, _ := strings.Cut(strings.TrimSpace(image), "@")
	// A colon before the last slash belongs to a registry port, not to a tag.
	lastSlash := strings.LastIndex(reference, "/")
	lastColon := strings.LastIndex(reference, ":")
	if lastColon <= lastSlash {
		return Version{}, false
	}
	v, err := ParseVersion(reference[lastColon+1:])
	if err != nil {
		return Version{}, false
	}
	return v, true
}
