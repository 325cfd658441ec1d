// Package version tells which build of unprune is running: set at link time
// (-ldflags "-X github.com/unprune/unprune/internal/version.version=v1.2.3 ..."), else read from the
// module information Go embeds in every binary (a `go install …@v1.2.3` or a VCS-stamped build).
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by the linker for release builds.
var (
	version   = ""
	commit    = ""
	buildDate = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	BuildDate string `json:"buildDate,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build information, from ldflags where set and the embedded build info otherwise.
func Get() Info {
	info := Info{Version: version, Commit: commit, BuildDate: buildDate, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "vcs.time":
				if info.BuildDate == "" {
					info.BuildDate = s.Value
				}
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// String is the short form, e.g. "v1.2.3" or "devel+3f2a1b9c".
func (i Info) String() string {
	s := i.Version
	if i.Version == "devel" && i.Commit != "" {
		s += "+" + shortCommit(i.Commit)
		if i.Modified {
			s += "-dirty"
		}
	}
	return s
}

// UserAgent is how unprune introduces itself to API servers: unprune/<version> (<os>/<arch>).
func UserAgent() string {
	i := Get()
	return "unprune/" + strings.TrimPrefix(i.String(), "+") + " (" + i.Platform + ")"
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
