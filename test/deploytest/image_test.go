package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// release is what of .goreleaser.yaml the image depends on.
type release struct {
	Before struct {
		Hooks []any `json:"hooks"`
	} `json:"before"`
	Builds []build `json:"builds"`
	Kos    []struct {
		ID           string   `json:"id"`
		Build        string   `json:"build"`
		Main         string   `json:"main"`
		Repositories []string `json:"repositories"`
		BaseImage    string   `json:"base_image"`
		Platforms    []string `json:"platforms"`
		Tags         []string `json:"tags"`
		Bare         bool     `json:"bare"`
	} `json:"kos"`
}

type build struct {
	ID     string   `json:"id"`
	Main   string   `json:"main"`
	Goos   []string `json:"goos"`
	Goarch []string `json:"goarch"`
}

// releaseTagRE is a release's tag: semver, v-prefixed.
var releaseTagRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// distrolessNonroot is the user distroless's :nonroot images run as.
const distrolessNonroot = "65532"

// TestImageIsTheRelease: the image deploy/base runs is the one the release builds with ko — the same
// repository, from the unprune build (its flags and version stamps), for Linux platforms that build
// has, on a nonroot base whose user is the one the Deployment's securityContext requires — and is
// pinned to a release's tag, which the release checks is its own.
func TestImageIsTheRelease(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(Dir(), "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var r release
	if err := yaml.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	dep := Kind(Build(t, "base"), "Deployment")[0]
	pod := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	image := asSlice(pod["containers"])[0].(map[string]any)["image"].(string)
	repo, tag, _ := strings.Cut(image, ":")
	if len(r.Kos) != 1 {
		t.Fatalf(".goreleaser.yaml has %d kos entries; want the one image deploy/ runs", len(r.Kos))
	}
	ko := r.Kos[0]
	if !ko.Bare || !slices.Contains(ko.Repositories, repo) {
		t.Errorf("ko pushes to %v (bare %v); deploy/base runs %s", ko.Repositories, ko.Bare, image)
	}
	idx := slices.IndexFunc(r.Builds, func(b build) bool { return b.ID == ko.Build })
	if idx < 0 || r.Builds[idx].Main != ko.Main || ko.Main != "./cmd/unprune" {
		t.Fatalf("ko builds %s from build %q; want ./cmd/unprune from the unprune build", ko.Main, ko.Build)
	}
	b := r.Builds[idx]
	for _, p := range ko.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		if goos != "linux" || !slices.Contains(b.Goos, goos) || !slices.Contains(b.Goarch, goarch) {
			t.Errorf("ko platform %s: not a Linux platform the %s build has (%v × %v)", p, b.ID, b.Goos, b.Goarch)
		}
	}
	// Pinned to a release, not latest: the tag is one ko pushes for a release (v{{ .Version }}),
	// and the release checks it is its own before it builds (hack/dist -check-image).
	if !releaseTagRE.MatchString(tag) || !slices.Contains(ko.Tags, "v{{ .Version }}") {
		t.Errorf("deploy/base runs %s; want a release's tag (vX.Y.Z) of those ko pushes, %v", image, ko.Tags)
	}
	if !slices.ContainsFunc(r.Before.Hooks, func(h any) bool { return fmt.Sprint(h) == "go run ./hack/dist -check-image -version {{ .Tag }}" }) {
		t.Errorf(".goreleaser.yaml before hooks %v: the release must check deploy/base runs its image", r.Before.Hooks)
	}
	sc, _ := pod["securityContext"].(map[string]any)
	if !strings.HasSuffix(ko.BaseImage, ":nonroot") || fmt.Sprint(sc["runAsUser"]) != distrolessNonroot || sc["runAsNonRoot"] != true {
		t.Errorf("base image %s, pod securityContext %v: the Deployment must run as the base image's nonroot user %s", ko.BaseImage, sc, distrolessNonroot)
	}
}
