package check

import (
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
)

// TestNameFeeds: the sources whose rendering depends on the app's name (Helm's release name,
// $ARGOCD_APP_NAME, plugins), and when pinning helm.releaseName is all it takes.
func TestNameFeeds(t *testing.T) {
	for _, tt := range []struct {
		name     string
		spec     map[string]any
		types    []string
		feeds    int
		pinnable bool
	}{
		{"plain directory", map[string]any{"source": map[string]any{"path": "x"}}, []string{"Directory"}, 0, false},
		{"helm chart from a repository", map[string]any{"source": map[string]any{"chart": "redis"}}, nil, 1, true},
		{"helm detected in git", map[string]any{"source": map[string]any{"path": "chart"}}, []string{"Helm"}, 1, true},
		{"helm with releaseName", map[string]any{"source": map[string]any{"chart": "redis", "helm": map[string]any{"releaseName": "r"}}}, nil, 0, false},
		{"jsonnet with the app's name", map[string]any{"source": map[string]any{"directory": map[string]any{"jsonnet": map[string]any{
			"extVars": []any{map[string]any{"name": "app", "value": "$ARGOCD_APP_NAME"}}}}}}, []string{"Directory"}, 1, false},
		{"helm with the app's name in a parameter", map[string]any{"source": map[string]any{"chart": "c", "helm": map[string]any{
			"parameters": []any{map[string]any{"name": "fullnameOverride", "value": "${ARGOCD_APP_NAME}"}}}}}, nil, 2, false},
		{"plugin", map[string]any{"source": map[string]any{"plugin": map[string]any{"name": "p"}}}, nil, 1, false},
		{"second source is helm", map[string]any{"sources": []any{map[string]any{"path": "a"}, map[string]any{"chart": "c"}}}, []string{"Directory", "Helm"}, 1, true},
		// A hydrator app renders its dry source; its status's source type is the hydrated branch's.
		{"hydrator, helm dry source", hydrator(map[string]any{"path": "chart", "helm": map[string]any{"valueFiles": []any{"v.yaml"}}}), []string{"Directory"}, 1, false},
		{"hydrator, helm dry source with releaseName", hydrator(map[string]any{"path": "chart", "helm": map[string]any{"releaseName": "r"}}), []string{"Directory"}, 1, false},
		{"hydrator, dry source of no stated type", hydrator(map[string]any{"path": "chart"}), []string{"Directory"}, 1, false},
		{"hydrator, plugin dry source", hydrator(map[string]any{"path": "p", "plugin": map[string]any{"name": "p"}}), []string{"Directory"}, 1, false},
		{"hydrator, kustomize dry source", hydrator(map[string]any{"path": "k", "kustomize": map[string]any{"namePrefix": "x-"}}), []string{"Directory"}, 0, false},
		{"hydrator, jsonnet with the app's name", hydrator(map[string]any{"path": "j", "directory": map[string]any{"jsonnet": map[string]any{
			"extVars": []any{map[string]any{"name": "app", "value": "$ARGOCD_APP_NAME"}}}}}), nil, 1, false},
		// spec.source beside a hydrator is not what Argo CD renders.
		{"hydrator wins over spec.source", map[string]any{"source": map[string]any{"path": "x"},
			"sourceHydrator": map[string]any{"drySource": map[string]any{"path": "chart", "helm": map[string]any{}}}}, []string{"Directory"}, 1, false},
	} {
		feeds, pinnable := nameFeeds(tt.spec, tt.types)
		if len(feeds) != tt.feeds || pinnable != tt.pinnable {
			t.Errorf("%s: feeds %q, pinnable %v; want %d, %v", tt.name, feeds, pinnable, tt.feeds, tt.pinnable)
		}
	}
}

// hydrator is an Application spec rendered by the source hydrator from dry.
func hydrator(dry map[string]any) map[string]any {
	dry["repoURL"], dry["targetRevision"] = "https://git.example/dry.git", "main"
	return map[string]any{"sourceHydrator": map[string]any{"drySource": dry,
		"syncSource": map[string]any{"targetBranch": "environments/prod", "path": "shop"}}}
}

// TestRenameAdviceHydrator: a hydrator app's rename advice says that no comparison shows what the
// new name renders until the hydrator committed for it, and that the new app then prunes the
// objects named from the old one; it never promises that pinning the release name is enough.
func TestRenameAdviceHydrator(t *testing.T) {
	v36 := &argocd.Version{Major: 3, Minor: 6, Patch: 1}
	old := AppChange{App: argocd.Application{Namespace: "argocd", Name: "shop"}, Fate: Cascade, Finalizer: argocd.FinalizerResources,
		finalizers: []string{argocd.FinalizerResources}, sourceTypes: []string{"Directory"}}
	to := argocd.Whole{Name: "shop-v2", Spec: hydrator(map[string]any{"path": "chart", "helm": map[string]any{}})}
	fix, notes := renameAdvice(v36, old, to)
	for _, want := range []string{"renders through Argo CD's source hydrator", "prunes the ones named from shop", "syncSource.path of its own",
		"drySource.helm.releaseName: shop", "only at the next commit to the dry source"} {
		if !strings.Contains(fix, want) {
			t.Errorf("advice lacks %q: %q", want, fix)
		}
	}
	if strings.Contains(fix, "takes them over at its first sync") || strings.Contains(fix, "with helm.releaseName: shop on shop-v2") {
		t.Errorf("advice promises the same objects: %q", fix)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "Helm chart without helm.releaseName") || !strings.Contains(notes[0], "spec.sourceHydrator.drySource") {
		t.Errorf("notes %q", notes)
	}
	gen := appset.Generated{Name: "shop-v2", Whole: to}
	if fix, _ := setRenameAdvice(v36, old, gen, "argocd/teams", appset.PolicySync, true); !strings.Contains(fix, "prunes the ones named from shop") ||
		strings.Contains(fix, "in the template for it") {
		t.Errorf("set: %q", fix)
	}
}

// TestRenameAdvice: the advice says what the new app renders: the same objects, the same with
// helm.releaseName pinned, or its own beside the old ones; and what the release line shows.
func TestRenameAdvice(t *testing.T) {
	v36, v34 := &argocd.Version{Major: 3, Minor: 6, Patch: 1}, &argocd.Version{Major: 3, Minor: 4, Patch: 5}
	old := AppChange{App: argocd.Application{Namespace: "argocd", Name: "shop"}, Fate: Cascade, Finalizer: argocd.FinalizerResources,
		finalizers: []string{argocd.FinalizerResources, "other"}}
	to := func(src map[string]any) argocd.Whole {
		return argocd.Whole{Name: "shop-v2", Spec: map[string]any{"source": src}}
	}
	fix, notes := renameAdvice(v36, old, to(map[string]any{"path": "x"}))
	if !strings.Contains(fix, "only drops resources-finalizer.argocd.argoproj.io from argocd/shop's manifest") || !strings.Contains(fix, "renders the same objects") ||
		len(notes) != 1 || !strings.Contains(notes[0], "counts a stale tracking-id as a difference") {
		t.Errorf("plain: %q %q", fix, notes)
	}
	fix, notes = renameAdvice(v34, old, to(map[string]any{"chart": "redis"}))
	if !strings.Contains(fix, "with helm.releaseName: shop on shop-v2") || !strings.Contains(strings.Join(notes, " "), "shows Synced instead") {
		t.Errorf("helm on v3.4.5: %q %q", fix, notes)
	}
	fix, _ = renameAdvice(v36, old, to(map[string]any{"plugin": map[string]any{}}))
	if !strings.Contains(fix, "renders its own objects from its name") || strings.Contains(fix, "takes them over") {
		t.Errorf("plugin: %q", fix)
	}
	if got := old.finalizerPatch().remove(); !strings.Contains(got, `{"metadata":{"finalizers":["other"]}}`) {
		t.Errorf("patch %q: want the other finalizers kept", got)
	}
}

// TestRenameAdviceNamesDeleteHooks: an old app with delete-hook finalizers (and live hooks of that
// kind) runs them when it is deleted: the advice names them and drops their finalizers in the patch
// that marks the app skip-reconcile, before the deletion; a set that writes its apps' annotations
// back until it deletes the app must preserve the mark.
func TestRenameAdviceNamesDeleteHooks(t *testing.T) {
	v36 := &argocd.Version{Major: 3, Minor: 6, Patch: 1}
	hooks := []string{argocd.FinalizerPostDelete, argocd.FinalizerPostDelete + "/cleanup"}
	old := AppChange{App: argocd.Application{Namespace: "argocd", Name: "shop"}, Fate: Cascade, Finalizer: argocd.FinalizerResources,
		finalizers: append([]string{argocd.FinalizerResources, "other"}, hooks...), deleteHooks: []string{"ConfigMap/shop/cleanup (PostDelete)"}}
	to := argocd.Whole{Name: "shop-v2", Spec: map[string]any{"source": map[string]any{"path": "x"}}}
	fix, notes := renameAdvice(v36, old, to)
	unhook := `{"metadata":{"annotations":{"argocd.argoproj.io/skip-reconcile":"true"},"finalizers":["other"]}}`
	if !strings.Contains(fix, unhook) || !strings.Contains(fix, "deletes nothing and runs no hook") ||
		strings.Index(fix, "only drops") > strings.Index(fix, unhook) || strings.Index(fix, unhook) > strings.Index(fix, "merge the rename:") {
		t.Errorf("cascade: %q", fix)
	}
	if !strings.Contains(fix, "ConfigMap/shop/cleanup (PostDelete)") || !strings.Contains(fix, hooks[1]) || !strings.Contains(fix, "unprune rename") || len(notes) != 1 {
		t.Errorf("cascade: %q %q", fix, notes)
	}
	orphan := old
	orphan.Fate, orphan.Finalizer = Orphaned, ""
	if fix, _ := renameAdvice(v36, orphan, to); !strings.Contains(fix, "but its deletion runs its delete hooks") || !strings.Contains(fix, unhook) {
		t.Errorf("orphaned: %q", fix)
	}
	plain := old
	plain.finalizers, plain.deleteHooks = []string{argocd.FinalizerResources}, nil
	if fix, _ := renameAdvice(v36, plain, to); strings.Contains(fix, "skip-reconcile") || strings.Contains(fix, "delete hooks") {
		t.Errorf("no hooks: %q", fix)
	}
	gen := appset.Generated{Name: "shop-v2", Whole: to}
	for policy, preserve := range map[string]bool{appset.PolicySync: true, appset.PolicyCreateDelete: false, appset.PolicyCreateUpdate: false} {
		fix, _ := setRenameAdvice(v36, old, gen, "argocd/teams", policy, true)
		if !strings.Contains(fix, unhook) || strings.Contains(fix, "spec.preservedFields.annotations") != preserve {
			t.Errorf("set under %s: %q", policy, fix)
		}
	}
}
