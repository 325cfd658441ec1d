package exposition

import (
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/risk"
)

// Risk label values: lower case, as Prometheus label values usually are; every series exists for
// both, so that a resolved alert sees 0 rather than a vanished series.
const (
	riskHigh   = "high"
	riskNormal = "normal"
)

var riskLabels = []string{riskHigh, riskNormal}

// When label values of the unguarded-candidates metric: a prune deletes the resource at the next
// sync with prune ("now"); for an app that prunes automatically, when it is removed from git; or the
// row is the Application itself, which its parent app or ApplicationSet may delete, taking high-risk
// resources with it through its resources finalizer (audit's WhenItsAppIsDeleted).
const (
	whenNow            = "now"
	whenRemovedFromGit = "removed_from_git"
	whenAppDeleted     = "app_deleted"
)

var whenLabels = []string{whenNow, whenRemovedFromGit, whenAppDeleted}

// Summary is one app's evaluation: what the metrics show and what events are about.
type Summary struct {
	Namespace, Name, UID, Project, Destination string
	// Pruning counts the rows that require pruning (hooks left out), by risk label.
	Pruning map[string]int
	// Unguarded counts the prune candidates no hard guard stops, by when and risk label.
	Unguarded map[string]map[string]int
	// Unknown counts the prune candidates whose guards could not be read (no good answer to fall
	// back on), by risk label: neither guarded nor unguarded.
	Unknown map[string]int
	// CascadeHighRisk counts the high-risk resources deleting the app would delete with it
	// (audit.CascadeHighRisk): zero when the app has no resources finalizer.
	CascadeHighRisk int
	// AutoPrune: the app's automated sync prunes, so its next sync deletes what requires pruning.
	AutoPrune bool
	// HighRiskPruning and UnguardedHighRisk are the rows events are about, by resource key;
	// UnknownHighRisk those of HighRiskPruning whose guards could not be read.
	HighRiskPruning   map[string]Finding
	UnguardedHighRisk map[string]Finding
	UnknownHighRisk   map[string]Finding
	// LiveErrors counts rows whose live object could not be read.
	LiveErrors int
	// Uncounted names the kinds left out of a Namespace's count of contents ("Pods, ConfigMaps and
	// Secrets"), when any are.
	Uncounted string
}

// Unread is what an evaluation could not read, with no good answer to fall back on: it decides
// which rows' guards are unknown (SummarizeUnread).
type Unread struct {
	// Destination: the app's destination cluster could not be reached at all.
	Destination bool
	// Objects are the live objects (cluster.Ref.Key) whose read failed.
	Objects map[string]bool
	// Policy: unprune's admission policy (or its binding) could not be read.
	Policy bool
}

// Any reports whether anything could not be read.
func (u Unread) Any() bool { return u.Destination || u.Policy || len(u.Objects) > 0 }

// Finding is one row an event may be about.
type Finding struct {
	Resource argocd.Resource
	Why      string
	Contents *risk.Contents
	Guards   []string
}

// Summarize turns audit's rows for one app into its summary, everything read. It is pure: cascade
// are the high-risk resources deleting the app would delete with it.
func Summarize(app argocd.Application, rows []audit.Row, cascade []argocd.Resource) Summary {
	return SummarizeUnread(app, rows, cascade, Unread{})
}

// SummarizeUnread is Summarize when u could not be read. A row
// whose guards could not be read — its destination unreachable, its object's read failed, or, for a
// row nothing else guards, unprune's admission policy unreadable — is unknown: never counted as
// unguarded, never as guarded.
func SummarizeUnread(app argocd.Application, rows []audit.Row, cascade []argocd.Resource, u Unread) Summary {
	s := Summary{
		Namespace: app.Namespace, Name: app.Name, UID: app.UID, Project: app.Project, Destination: app.Destination.String(),
		AutoPrune:         app.Automated && app.AutoPrune,
		Pruning:           map[string]int{riskHigh: 0, riskNormal: 0},
		Unguarded:         map[string]map[string]int{},
		Unknown:           map[string]int{riskHigh: 0, riskNormal: 0},
		HighRiskPruning:   map[string]Finding{},
		UnguardedHighRisk: map[string]Finding{},
		UnknownHighRisk:   map[string]Finding{},
	}
	for _, w := range whenLabels {
		s.Unguarded[w] = map[string]int{riskHigh: 0, riskNormal: 0}
	}
	for _, row := range rows {
		if row.App.Ref() != app.Ref() {
			continue
		}
		r := riskLabel(row.Risk)
		f := Finding{Resource: row.Resource, Why: row.RiskWhy, Contents: row.Contents}
		for _, g := range row.Guards {
			f.Guards = append(f.Guards, string(g))
		}
		if row.LiveError != "" {
			s.LiveErrors++
		}
		var when string
		switch row.When {
		case audit.Now:
			when = whenNow
		case audit.WhenRemovedFromGit:
			when = whenRemovedFromGit
		case audit.WhenItsAppIsDeleted:
			when = whenAppDeleted
		default:
			continue
		}
		if when == whenNow {
			s.Pruning[r]++
			if r == riskHigh {
				s.HighRiskPruning[row.Resource.Key()] = f
			}
		}
		if when != whenAppDeleted && guardsUnknown(row, u) {
			s.Unknown[r]++
			if r == riskHigh && when == whenNow {
				s.UnknownHighRisk[row.Resource.Key()] = f
			}
			continue
		}
		if !row.Guarded {
			s.Unguarded[when][r]++
			if r == riskHigh && when == whenNow {
				s.UnguardedHighRisk[row.Resource.Key()] = f
			}
		}
	}
	s.CascadeHighRisk = len(cascade)
	return s
}

// guardsUnknown: the row shows no guard, and what would show one could not be read. A guard seen
// (one its identity or its row carries) is a guard whatever else failed.
func guardsUnknown(row audit.Row, u Unread) bool {
	if row.Guarded {
		return false
	}
	return u.Destination || u.Policy || (row.LiveError != "" && u.Objects[row.Resource.Key()])
}

func riskLabel(c risk.Class) string {
	if c == risk.High {
		return riskHigh
	}
	return riskNormal
}
