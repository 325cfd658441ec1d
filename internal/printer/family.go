package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/unprune/unprune/internal/check"
)

// CheckApp is one Application a change deletes or renames (`applications` in a CheckReport), with
// what Argo CD then does to the resources it tracks.
type CheckApp struct {
	Application AppRef `json:"application"`
	// DeletedBy says who deletes the app, and when.
	DeletedBy string `json:"deletedBy"`
	// Through lists the apps (namespace/name) whose cascade deletion reaches this one, outermost first.
	Through   []string `json:"through,omitempty"`
	RenamedTo string   `json:"renamedTo,omitempty"`
	// Fate is Cascade, Orphaned, NotDeleted or NotEvaluated.
	Fate      string      `json:"fate"`
	Finalizer string      `json:"finalizer,omitempty"`
	Cluster   *ClusterRef `json:"cluster,omitempty"`
	// Deleted counts the resources the cascade deletes; High the unguarded high-risk ones.
	Deleted          int         `json:"deleted"`
	High             int         `json:"high"`
	WaitsForApproval bool        `json:"waitsForApproval,omitempty"`
	Resources        []CheckItem `json:"resources"`
	Fix              string      `json:"fix,omitempty"`
	Notes            []string    `json:"notes,omitempty"`
	Error            string      `json:"error,omitempty"`
}

// newCheckApps converts whole-app changes.
func newCheckApps(changes []check.AppChange) []CheckApp {
	var out []CheckApp
	for _, c := range changes {
		a := CheckApp{Application: AppRef{c.App.Namespace, c.App.Name}, DeletedBy: c.DeletedBy, Through: c.Through, RenamedTo: c.RenamedTo,
			Fate: string(c.Fate), Finalizer: c.Finalizer, Deleted: c.Deleted, High: c.High, WaitsForApproval: c.Waits,
			Resources: []CheckItem{}, Fix: c.Fix, Notes: c.Notes, Error: c.Error}
		if c.Cluster.Name != "" || c.Cluster.Server != "" {
			ref := NewClusterRef(c.Cluster)
			a.Cluster = &ref
		}
		for _, it := range c.Resources {
			a.Resources = append(a.Resources, newCheckItem(it))
		}
		out = append(out, a)
	}
	return out
}

// fate says in words what happens to the app and its resources.
func (a CheckApp) fate() string {
	var s string
	switch check.Fate(a.Fate) {
	case check.Cascade:
		s = fmt.Sprintf("deleted with %s: cascade deletes %d resource(s)", a.Finalizer, a.Deleted)
		if a.WaitsForApproval {
			s += " once deletion is approved"
		}
	case check.Orphaned:
		s = fmt.Sprintf("deleted without a resources finalizer: its %d resource(s) stay, still tracked", len(a.Resources))
	case check.NotDeleted:
		s = "not deleted"
	default:
		s = "not evaluated"
	}
	if a.RenamedTo != "" {
		s = "renamed to " + a.RenamedTo + " (a deletion and a creation): " + s
	}
	return s
}

func (a CheckApp) name() string {
	n := a.Application.Namespace + "/" + a.Application.Name
	if len(a.Through) > 0 {
		n += " (via " + strings.Join(a.Through, " → ") + ")"
	}
	return n
}

// checkAppsTable writes one row per resource of each deleted app.
func checkAppsTable(w io.Writer, o Output, apps []CheckApp) error {
	var rows [][]string
	for _, a := range apps {
		head := []string{a.name(), a.fate()}
		if len(a.Resources) == 0 {
			detail := a.Error
			if detail == "" {
				detail = a.DeletedBy
			}
			rows = append(rows, append(head, "<none>", orNone(detail), "", "", ""))
		}
		for _, it := range a.Resources {
			contents := describeContents(it.Contents)
			if it.Error != "" {
				contents = "<unreadable: " + firstLine(it.Error) + ">"
			}
			rows = append(rows, append(head, it.Resource.String(), it.what(), it.Risk, orNone(contents), orNone(strings.Join(it.Guards, ","))))
		}
	}
	return o.Rows(w, []string{"APPLICATION", "WHAT HAPPENS TO IT", "RESOURCE", "WHAT HAPPENS", "RISK", "CONTENTS", "GUARDS"}, rows)
}

// checkAppsMarkdown writes the whole-app section of the pull-request comment.
func checkAppsMarkdown(b *strings.Builder, apps []CheckApp) {
	if len(apps) == 0 {
		return
	}
	b.WriteString("\n#### Applications this change deletes\n")
	for _, a := range apps {
		mark := ""
		if a.High > 0 {
			mark = "⚠️ "
		}
		fmt.Fprintf(b, "\n%s**`%s`**: %s.  \n_Deleted because_: %s.\n", mark, mdCell(a.name()), mdCell(a.fate()), mdCell(a.DeletedBy))
		if a.Fix != "" {
			fmt.Fprintf(b, "_Without a deletion window_: %s.\n", strings.ReplaceAll(Line(a.Fix), "|", `\|`))
		}
		if len(a.Resources) > 0 {
			b.WriteString("\n| | Resource | What happens | Risk | Contents | Guards |\n|---|---|---|---|---|---|\n")
			for _, it := range a.Resources {
				m := ""
				if it.Risk == "High" && it.Reason == string(check.DeletedWithApp) && !a.WaitsForApproval {
					m = "⚠️"
				}
				fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s | %s |\n", m, mdCell(it.Resource.String()), mdCell(it.what()), it.Risk,
					mdCell(orNone(describeContents(it.Contents))), mdCell(orNone(strings.Join(it.Guards, ", "))))
			}
		}
		for _, n := range a.Notes {
			fmt.Fprintf(b, "\n- %s", mdCell(n))
		}
		if a.Error != "" {
			fmt.Fprintf(b, "\n- error: %s", mdCell(a.Error))
		}
		if len(a.Notes) > 0 || a.Error != "" {
			b.WriteString("\n")
		}
	}
}

// CheckSet is what a check of an ApplicationSet found (`applicationSet` in a CheckReport).
type CheckSet struct {
	// Policy is the set's own applicationsSync after the change (sync when unset).
	Policy string `json:"policy"`
	// EffectivePolicy is what the controller applies to the set: Policy, unless the controller's
	// applicationsetcontroller.policy overrides it; ControllerPolicy is the controller's (absent when
	// it has none); PolicyKnown is false when argocd-cmd-params-cm could not be read (the effective
	// policy is then taken to be the set's own, and a deletion is reported as possible).
	EffectivePolicy             string `json:"effectivePolicy"`
	ControllerPolicy            string `json:"controllerPolicy,omitempty"`
	PolicyKnown                 bool   `json:"policyKnown"`
	PreserveResourcesOnDeletion bool   `json:"preserveResourcesOnDeletion"`
	// Owned are the apps the live set owns; Generated those the changed set generates; Created
	// the new ones among them.
	Owned     []string `json:"owned"`
	Generated []string `json:"generated"`
	Created   []string `json:"created,omitempty"`
	// GeneratedBefore are the apps the live set generates now.
	GeneratedBefore []string `json:"generatedBefore,omitempty"`
	// GeneratedBy is ArgoCD (argocd-server's own generation, at server) or Offline (unprune).
	GeneratedBy string `json:"generatedBy"`
	Server      string `json:"server,omitempty"`
	// NotEvaluated says which generators or templates unprune could not evaluate, and why.
	NotEvaluated []string `json:"notEvaluated,omitempty"`
	// Failed is the error Argo CD's generation meets with the changed set: the controller then
	// creates, updates and deletes nothing for it.
	Failed string `json:"failed,omitempty"`
	// Notes say what the change does to the apps the set keeps generating (their finalizers).
	Notes []string `json:"notes,omitempty"`
}

func newCheckSet(s *check.SetInfo) *CheckSet {
	if s == nil {
		return nil
	}
	return &CheckSet{Policy: s.SetPolicy, EffectivePolicy: s.Policy, ControllerPolicy: s.ControllerPolicy, PolicyKnown: s.PolicyKnown,
		PreserveResourcesOnDeletion: s.Preserve, Owned: orEmpty(s.Owned), Generated: orEmpty(s.Generated), Created: s.Created,
		GeneratedBefore: s.GeneratedBefore, GeneratedBy: s.GeneratedBy, Server: s.Server, NotEvaluated: s.NotEvaluated, Failed: s.Failed, Notes: s.Notes}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkSetMarkdown says what the set generates before and after the change.
func checkSetMarkdown(b *strings.Builder, s *CheckSet) {
	if s == nil {
		return
	}
	fmt.Fprintf(b, "applicationsSync `%s` (%s), preserveResourcesOnDeletion `%v`: it owns %d app(s) and, after the change, generates %d (%d new).\n",
		s.EffectivePolicy, policyWords(s), s.PreserveResourcesOnDeletion, len(s.Owned), len(s.Generated), len(s.Created))
	if s.Failed != "" {
		fmt.Fprintf(b, "⚠️ Argo CD's generation fails with the change (%s): the controller creates, updates and deletes nothing for the set while it does.\n", mdCell(s.Failed))
	}
	for _, n := range s.Notes {
		fmt.Fprintf(b, "- %s\n", mdCell(n))
	}
	if len(s.NotEvaluated) > 0 {
		b.WriteString("⚠️ Part of the set could not be evaluated (see the warnings): apps it may generate are not known.\n")
	}
	b.WriteString("\n")
}

// policyWords says whose policy the controller applies.
func policyWords(s *CheckSet) string {
	switch {
	case !s.PolicyKnown:
		return "the set's own; the controller's policy could not be read"
	case s.ControllerPolicy == "":
		return "the set's own"
	case s.EffectivePolicy == s.ControllerPolicy && s.Policy != s.ControllerPolicy:
		return "the controller's, which overrides the set's " + s.Policy
	case s.EffectivePolicy == s.ControllerPolicy:
		return "the controller's"
	}
	return "the set's own, which the controller lets override its " + s.ControllerPolicy
}
