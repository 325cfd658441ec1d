package argocd

import "github.com/gobwas/glob"

// globMatch matches text against a pattern the way Argo CD's util/glob.Match does for
// resource.exclusions and resource.inclusions (util/settings/filtered_resource.go, v2.14.11 through
// v3.6.1): gobwas/glob compiled without separators, so `*` also matches `/` and `.` (`https://*`
// matches a server URL with a path), `**` is the same as `*`, `{a,b}` is alternation, and `[!a]`
// negates (`[^a]` does not: `^` is an ordinary character there). A pattern that does not compile
// matches nothing, as in Argo CD, which only logs it.
//
// The library is the one Argo CD v3.6 links (gobwas/glob v1.0.0). Argo CD v2.14 to v3.5 link v0.2.3,
// which differs on a few rarely written patterns through its bugs: there `?` also matches the empty
// string and `br*r` matches "br" (a `*` between a prefix and a suffix that overlap).
//
// Patterns are compiled per call: a cache would be package-level mutable state, and a filter holds a
// handful of patterns; Excluded with five user patterns takes about 8 µs, 8 ms for 1,000 objects.
func globMatch(pattern, text string) bool {
	g, err := glob.Compile(pattern)
	if err != nil {
		return false
	}
	return g.Match(text)
}
