package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/risk"
)

// Move is a kind of item: one object that the change removes from one app and gives to another. It
// stands for the two items it replaces (the first app's Prune and the second app's Adoption of the
// object from the first), which are one safe operation with `unprune move`, not two alarms.
const Move Kind = "Move"

// Moved is the reason of a Move item.
const Moved Reason = "MovedBetweenApps"

// MoveRecipe is what to run so that the object changes apps without a deletion window: mark it in
// the app it leaves before the merge (so that app cannot prune it), then hand it over once the app
// it joins lists it.
func MoveRecipe(ctx context.Context, from, to string, res argocd.Resource) []string {
	prepare := moveCommand(from, to, res, option.Flag(option.Prepare), option.Flag(option.Yes))
	move := moveCommand(from, to, res, option.Flag(option.Yes))
	return []string{
		"before merging: " + prepare.In(ctx),
		"merge the change, and wait until " + to + " lists the resource (OutOfSync, shared with " + from + ")",
		"then: " + move.In(ctx),
	}
}

func moveCommand(from, to string, res argocd.Resource, flags ...option.Setting) option.Command {
	return option.Command{Path: []string{"move"}, Args: []string{from, res.String()},
		Options: append([]option.Setting{{Name: option.To, Value: to}}, flags...)}
}

// appOf turns an instance name back into the app's NAMESPACE/NAME (apps in Argo CD's own namespace
// keep their bare name): Argo CD writes <namespace>_<name> for apps elsewhere (argocd.InstanceName).
func appOf(instance, controllerNamespace string) string {
	if ns, name, ok := strings.Cut(instance, "_"); ok && ns != controllerNamespace {
		return ns + "/" + name
	}
	return instance
}

func appRef(a argocd.Application, controllerNamespace string) string {
	if a.Namespace == "" || a.Namespace == controllerNamespace {
		return a.Name
	}
	return a.Namespace + "/" + a.Name
}

// NoteMoves adds the move recipe to every adoption of an object another app tracks: if the same
// change removes it from that app, it is a move, and the other app may prune it before this one
// takes it over.
func NoteMoves(ctx context.Context, rep *Report, controllerNamespace string) {
	for i := range rep.Items {
		it := &rep.Items[i]
		if it.Kind != Adoption || it.Reason != TrackedByOtherApp || it.OtherInstance == "" {
			continue
		}
		to := appRef(rep.App, controllerNamespace)
		recipe := MoveRecipe(ctx, appOf(it.OtherInstance, controllerNamespace), to, it.Resource)
		it.Notes = append(it.Notes, "if this change also removes it from "+appOf(it.OtherInstance, controllerNamespace)+
			", that app prunes it before this one takes it over; move it instead: "+strings.Join(recipe, "; ")+"; "+InBetween(rep.Version, to, "it"))
	}
}

// FoldMoves recognises moves across the reports of one check run: a Prune of an object by one app
// and an Adoption of the same object (same cluster, same resource) by another app from it become one
// Move item, in the adopting app's report, carrying the recipe; the Prune leaves the first app's
// report, which names the object in MovedOut. Everything else is kept as it is, in order.
//
// A move is still the prune it folds until it is prepared: the app it leaves prunes the object as
// soon as the change lands (an automated prune, or any sync with PRUNE ticked), before the app it
// joins syncs — gitops-engine's pruneObject reads only the live object's own Prune= option
// (pkg/sync/sync_context.go). So the Move keeps the prune's verdict: its guards, Guarded, risk and
// contents; an unguarded Move is counted as a prune wherever prunes are.
func FoldMoves(ctx context.Context, reps []Report, controllerNamespace string) []Report {
	type prune struct{ rep, item int }
	prunes := map[string]prune{}
	for r, rep := range reps {
		for i, it := range rep.Items {
			if it.Kind == Prune {
				prunes[rep.Instance+"|"+moveKey(it)] = prune{r, i}
			}
		}
	}
	drop := map[prune]bool{}
	out := make([]Report, len(reps))
	for r, rep := range reps {
		out[r] = rep
		out[r].Items = append([]Item(nil), rep.Items...)
	}
	for r, rep := range reps {
		for i, it := range rep.Items {
			p, ok := prunes[it.OtherInstance+"|"+moveKey(it)]
			if it.Kind != Adoption || it.Reason != TrackedByOtherApp || !ok {
				continue
			}
			drop[p] = true
			from, to := appOf(it.OtherInstance, controllerNamespace), appRef(rep.App, controllerNamespace)
			out[r].Items[i] = foldMove(ctx, it, reps[p.rep].Items[p.item], from, to, rep.Version)
			out[p.rep].MovedOut = append(out[p.rep].MovedOut, MovedOut{Resource: it.Resource, To: to})
		}
	}
	for r := range out {
		kept := out[r].Items[:0]
		for i, it := range out[r].Items {
			if !drop[prune{r, i}] {
				kept = append(kept, it)
			}
		}
		out[r].Items = kept
	}
	return out
}

// foldMove is the Move item for an adoption by to and the prune by from of the same object: the
// prune's verdict, and the recipe that prepares it where nothing guards it yet.
func foldMove(ctx context.Context, adoption, pruned Item, from, to string, v *argocd.Version) Item {
	m := adoption
	m.Kind, m.Reason = Move, Moved
	m.Guards, m.Guarded = pruned.Guards, pruned.Guarded
	if pruned.Risk != "" {
		m.Risk, m.RiskWhy = pruned.Risk, pruned.RiskWhy
	}
	if pruned.Contents != nil {
		m.Contents = pruned.Contents
	}
	if pruned.Error != "" {
		m.Error = pruned.Error
	}
	how := "any sync of " + from + " with PRUNE ticked deletes it"
	if pruned.Reason == DeletedAtNextSync {
		how = from + "'s automated sync deletes it as soon as the change lands"
	}
	first := fmt.Sprintf("moved from %s to %s by this change: not prepared, so it is the prune it looks like — %s, before %s adopts it", from, to, how, to)
	if pruned.Guarded {
		first = fmt.Sprintf("moved from %s to %s by this change: guarded (%s), so %s cannot prune it before %s adopts it",
			from, to, guardList(pruned.Guards), from, to)
	}
	m.Notes = append(append([]string{first}, MoveRecipe(ctx, from, to, adoption.Resource)...), InBetween(v, to, "it"))
	return m
}

func guardList(gs []risk.Guard) string {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = string(g)
	}
	return strings.Join(names, ", ")
}

func moveKey(it Item) string {
	return it.Cluster.Server + "|" + it.Cluster.Name + "|" + it.Resource.Key()
}
