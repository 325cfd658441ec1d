package deletion

import (
	"fmt"
	"slices"

	"github.com/unprune/unprune/internal/guard"
)

// Together relates the verdicts of the objects one event reaches together — one app's prune, one
// app's cascade — and returns them refined: an object inside a Namespace that the same event
// deletes goes with the Namespace. Argo CD sends the DELETE of the Namespace; kube-controller-
// manager's namespace controller then deletes everything in it (pkg/controller/namespace/deletion,
// deleteAllContent), reading no Argo CD option: Prune=false, Delete=false, Prune=confirm and Helm's
// keep on the object guard only Argo CD's own DELETE of it. What still stops the namespace
// controller is the API server: unprune's admission policy refuses every user but its break-glass
// group, the controller's ServiceAccount too — the object is kept and the Namespace stays
// Terminating. A Namespace that waits for approval makes what it holds wait with it.
//
// objects and verdicts are parallel; the result is a new slice, in the same order.
func Together(objects []Object, verdicts []Verdict) []Verdict {
	out := slices.Clone(verdicts)
	namespaces := map[string]Verdict{}
	for i, o := range objects {
		if o.Group == "" && o.Kind == "Namespace" {
			namespaces[o.Name] = verdicts[i]
		}
	}
	for i, o := range objects {
		ns, ok := namespaces[o.Namespace]
		if o.Namespace == "" || !ok || (out[i].Outcome != Kept && out[i].Outcome != Waits) {
			continue
		}
		v := &out[i]
		v.Guards, v.Notes = slices.Clone(v.Guards), slices.Clone(v.Notes)
		switch {
		case ns.Outcome == Deleted && slices.Contains(v.Guards, guard.PolicyGuard):
			v.Notes = append(v.Notes, fmt.Sprintf("Namespace %s goes with the same %s: unprune's admission policy refuses the namespace controller's DELETE of this object, "+
				"so it stays and the Namespace stays Terminating", o.Namespace, eventWord(v.Event)))
		case ns.Outcome == Deleted:
			v.Outcome, v.Guarded, v.WithNamespace = Deleted, false, o.Namespace
			v.Notes = append(v.Notes, fmt.Sprintf("deleted with Namespace %s, which the same %s deletes: the namespace controller deletes everything in it, "+
				"and the object's own guards stop only Argo CD's DELETE", o.Namespace, eventWord(v.Event)))
		case ns.Outcome == Waits && v.Outcome == Kept && !slices.Contains(v.Guards, guard.PolicyGuard):
			v.Outcome, v.WithNamespace = Waits, o.Namespace
			v.Notes = append(v.Notes, fmt.Sprintf("waits with Namespace %s: once its deletion is approved, the namespace controller deletes everything in it", o.Namespace))
		}
	}
	return out
}

func eventWord(e Event) string {
	if e == Cascade {
		return "cascade"
	}
	return "prune"
}
