package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

func rewritten(field journal.Field, key, before, after string) string {
	return journal.Rewrite(field, key, before, after).String()
}

func TestBuildMove(t *testing.T) {
	long := strings.Repeat("a", 60) + "-b-c" // 64 characters
	longTrunc, _ := argocd.TruncatedLabelValue(long)
	nsApp := argocd.InstanceName("team", "api", "argocd")
	to := MoveTo{Instance: "shop", DestinationNamespace: "shop-ns"}
	cases := []struct {
		name        string
		s           argocd.Settings
		instance    string
		to          MoveTo
		ref         argocd.ObjectRef
		labels      map[string]string
		annotations map[string]string
		want        []string
		refusal     RefusalCode
	}{
		{name: "label mode rewrites the label", s: labelMode, instance: "guestbook", to: to, ref: ui,
			labels: map[string]string{keyInstance: "guestbook"},
			want:   []string{rewritten(journal.FieldLabel, keyInstance, "guestbook", "shop")}},
		{name: "label mode with a custom key", s: customKeyLabelMode, instance: "guestbook", to: to, ref: ui,
			labels: map[string]string{keyCustom: "guestbook", keyInstance: "helm-release"},
			want:   []string{rewritten(journal.FieldLabel, keyCustom, "guestbook", "shop")}},
		{name: "label mode also rewrites a tracking-id naming the app", s: labelMode, instance: "guestbook", to: to, ref: ui,
			labels: map[string]string{keyInstance: "guestbook"}, annotations: map[string]string{keyTracking: uiID},
			want: []string{rewritten(journal.FieldLabel, keyInstance, "guestbook", "shop"),
				rewritten(journal.FieldAnnotation, keyTracking, uiID, "shop:apps/Deployment:guestbook/ui")}},
		{name: "annotation mode rewrites the id, keeps the installation-id and leaves Helm's label", s: settings("annotation", argocd.SettingInstallationID, "prod"),
			instance: "guestbook", to: to, ref: ui,
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: map[string]string{keyTracking: uiID, keyInstallID: "prod"},
			want:        []string{rewritten(journal.FieldAnnotation, keyTracking, uiID, "shop:apps/Deployment:guestbook/ui")}},
		{name: "cluster-scoped: the id carries the new app's destination namespace", s: annotationMode, instance: "guestbook", to: to, ref: teamA,
			annotations: map[string]string{keyTracking: "guestbook:/Namespace:guestbook/team-a"},
			want:        []string{rewritten(journal.FieldAnnotation, keyTracking, "guestbook:/Namespace:guestbook/team-a", "shop:/Namespace:shop-ns/team-a")}},
		{name: "annotation+label rewrites both", s: annotationAndLabel, instance: "guestbook", to: to, ref: ui,
			labels: map[string]string{keyInstance: "guestbook"}, annotations: map[string]string{keyTracking: uiID},
			want: []string{rewritten(journal.FieldLabel, keyInstance, "guestbook", "shop"),
				rewritten(journal.FieldAnnotation, keyTracking, uiID, "shop:apps/Deployment:guestbook/ui")}},
		{name: "annotation+label truncates a long new instance as Argo CD does", s: annotationAndLabel, instance: "guestbook", to: MoveTo{Instance: long}, ref: ui,
			labels: map[string]string{keyInstance: "guestbook"}, annotations: map[string]string{keyTracking: uiID},
			want: []string{rewritten(journal.FieldLabel, keyInstance, "guestbook", longTrunc),
				rewritten(journal.FieldAnnotation, keyTracking, uiID, long+":apps/Deployment:guestbook/ui")}},
		{name: "annotation+label from a long, truncated instance", s: annotationAndLabel, instance: long, to: to, ref: ui,
			labels: map[string]string{keyInstance: longTrunc}, annotations: map[string]string{keyTracking: long + ":apps/Deployment:guestbook/ui"},
			want: []string{rewritten(journal.FieldLabel, keyInstance, longTrunc, "shop"),
				rewritten(journal.FieldAnnotation, keyTracking, long+":apps/Deployment:guestbook/ui", "shop:apps/Deployment:guestbook/ui")}},
		{name: "apps in any namespace", s: annotationMode, instance: nsApp, to: MoveTo{Instance: "shop_web"}, ref: ui,
			annotations: map[string]string{keyTracking: nsApp + ":apps/Deployment:guestbook/ui"},
			want:        []string{rewritten(journal.FieldAnnotation, keyTracking, nsApp+":apps/Deployment:guestbook/ui", "shop_web:apps/Deployment:guestbook/ui")}},
		{name: "label mode refuses a new instance too long for a label", s: labelMode, instance: "guestbook", to: MoveTo{Instance: long}, ref: ui,
			labels: map[string]string{keyInstance: "guestbook"}, refusal: RefuseLabelTooLong},
		{name: "tracked by another app", s: annotationMode, instance: "guestbook", to: to, ref: ui,
			annotations: map[string]string{keyTracking: "other:apps/Deployment:guestbook/ui"}, refusal: RefuseOtherOwner},
		{name: "a copy whose id names another object", s: annotationMode, instance: "guestbook", to: to, ref: ui,
			annotations: map[string]string{keyTracking: "guestbook:apps/Deployment:guestbook/web"}, refusal: RefuseNamesOtherObject},
		{name: "another installation", s: settings("annotation", argocd.SettingInstallationID, "prod"), instance: "guestbook", to: to, ref: ui,
			annotations: map[string]string{keyTracking: uiID, keyInstallID: "staging"}, refusal: RefuseOtherInstallation},
		{name: "untracked", s: annotationMode, instance: "guestbook", to: to, ref: ui, refusal: RefuseNotTracked},
		{name: "a CRD carries no tracking: nothing to rewrite", s: annotationMode, instance: "guestbook", to: to,
			ref: argocd.ObjectRef{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com", ClusterScoped: true}},
		{name: "a CRD labelled for the app in label mode is moved", s: labelMode, instance: "guestbook", to: to,
			ref:    argocd.ObjectRef{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com", ClusterScoped: true},
			labels: map[string]string{keyInstance: "guestbook"},
			want:   []string{rewritten(journal.FieldLabel, keyInstance, "guestbook", "shop")}},
		{name: "tracked by the new app already: nothing to do", s: annotationMode, instance: "guestbook", to: to, ref: ui,
			annotations: map[string]string{keyTracking: "shop:apps/Deployment:guestbook/ui"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := Target{Instance: c.instance, Ref: c.ref, Labels: c.labels, Annotations: c.annotations}
			p := BuildMove(c.s, target, c.to)
			hook := target
			hook.Hook = true
			if h := BuildMove(c.s, hook, c.to); h.Refusal == nil || h.Refusal.Code != RefuseHook {
				t.Errorf("a hook is not refused: %+v", h.Refusal)
			}
			if c.refusal != "" {
				if p.Refusal == nil || p.Refusal.Code != c.refusal {
					t.Fatalf("refusal = %+v, want %s", p.Refusal, c.refusal)
				}
				return
			}
			if p.Refusal != nil {
				t.Fatalf("refused: %v", p.Refusal)
			}
			if got := changeStrings(p.Changes); !slices.Equal(got, c.want) {
				t.Errorf("changes:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// The rewritten tracking is what Argo CD then reads as the new app's: the planner and the ownership
// rules agree.
func TestBuildMoveResultIsTrackedByNewApp(t *testing.T) {
	for _, s := range []argocd.Settings{labelMode, annotationMode, annotationAndLabel} {
		target := Target{Instance: "guestbook", Ref: ui, Labels: map[string]string{keyInstance: "guestbook"}, Annotations: map[string]string{keyTracking: uiID}}
		p := BuildMove(s, target, MoveTo{Instance: "shop"})
		labels, annotations := apply(target.Labels, p.Changes, journal.FieldLabel), apply(target.Annotations, p.Changes, journal.FieldAnnotation)
		if own := s.Owner(labels, annotations, ui); !own.TrackedBy("shop") {
			t.Errorf("%s: after the move Argo CD would see %+v", s.Method, own)
		}
	}
}

func apply(m map[string]string, changes []journal.Change, field journal.Field) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for _, c := range changes {
		if c.Field != field {
			continue
		}
		if v, ok := c.Value(); ok {
			out[c.Key] = v
		} else {
			delete(out, c.Key)
		}
	}
	return out
}

func TestBuildUnprepareTakesOffWhatPrepareAdded(t *testing.T) {
	user := "Validate=false"
	cases := []struct {
		name     string
		prepared *Prepared
		live     *string
		want     []string
	}{
		{name: "absent before, unchanged since: removed", prepared: &Prepared{After: "Prune=false,Delete=false"}, live: ptr("Prune=false,Delete=false"),
			want: []string{removed(journal.FieldAnnotation, keySync, "Prune=false,Delete=false")}},
		{name: "the user's options come back as they were", prepared: &Prepared{Before: ptr("Prune=confirm,Validate=false"), After: "Prune=false,Validate=false,Delete=false"},
			live: ptr("Prune=false,Validate=false,Delete=false"),
			want: []string{rewritten(journal.FieldAnnotation, keySync, "Prune=false,Validate=false,Delete=false", "Prune=confirm,Validate=false")}},
		{name: "changed since: only the added options go", prepared: &Prepared{After: "Prune=false,Delete=false"}, live: ptr("Prune=false,Delete=false," + user),
			want: []string{rewritten(journal.FieldAnnotation, keySync, "Prune=false,Delete=false,"+user, user)}},
		{name: "the user removed them already: nothing", prepared: &Prepared{After: "Prune=false,Delete=false"}, live: ptr(user)},
		{name: "the annotation is gone", prepared: &Prepared{After: "Prune=false,Delete=false"}},
		{name: "no prepare journal: left alone", live: ptr("Prune=false,Delete=false")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			annotations := map[string]string{keyTracking: uiID}
			if c.live != nil {
				annotations[keySync] = *c.live
			}
			// The tracking moves first, and leaves the marks alone.
			moved := BuildMove(annotationMode, Target{Instance: "guestbook", Ref: ui, Annotations: annotations}, MoveTo{Instance: "shop"})
			if got, want := changeStrings(moved.Changes), []string{rewritten(journal.FieldAnnotation, keyTracking, uiID, "shop:apps/Deployment:guestbook/ui")}; !slices.Equal(got, want) {
				t.Errorf("move changes:\n got %q\nwant %q", got, want)
			}
			p := BuildUnprepare(Target{Instance: "guestbook", Ref: ui, Annotations: annotations}, c.prepared)
			if got, want := changeStrings(p.Changes), c.want; !slices.Equal(got, want) {
				t.Errorf("changes:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestBuildPrepare(t *testing.T) {
	tracked := map[string]string{keyTracking: uiID}
	p := BuildPrepare(annotationMode, Target{Instance: "guestbook", Ref: ui, Annotations: tracked}, false)
	if got, want := changeStrings(p.Changes), []string{journal.Addition(journal.FieldAnnotation, keySync, "Prune=false,Delete=false").String()}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	withUser := map[string]string{keyTracking: uiID, keySync: "Validate=false"}
	p = BuildPrepare(annotationMode, Target{Instance: "guestbook", Ref: ui, Annotations: withUser}, false)
	if got, want := changeStrings(p.Changes), []string{rewritten(journal.FieldAnnotation, keySync, "Validate=false", "Validate=false,Prune=false,Delete=false")}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	for name, target := range map[string]Target{
		"other app": {Instance: "guestbook", Ref: ui, Annotations: map[string]string{keyTracking: "other:apps/Deployment:guestbook/ui"}},
		"untracked": {Instance: "guestbook", Ref: ui},
		"hook":      {Instance: "guestbook", Ref: ui, Annotations: tracked, Hook: true},
		"owned":     {Instance: "guestbook", Ref: ui, Annotations: tracked, OwnerReferences: []string{"ReplicaSet/x"}},
		"deleting":  {Instance: "guestbook", Ref: ui, Annotations: tracked, Deleting: true},
	} {
		if p := BuildPrepare(annotationMode, target, false); p.Refusal == nil {
			t.Errorf("%s: not refused: %q", name, changeStrings(p.Changes))
		}
	}
}

// A mark placed where Argo CD writes from the manifest does not hold: prepare refuses, on an object
// the app still declares, when the manifest Argo CD applied sets sync-options (client-side: the
// last-applied record; server-side: argocd-controller's Apply entry), or the app syncs with
// Replace=true. On an object no longer in git, nothing writes it back.
func TestBuildPrepareRefusesAMarkArgoCDReverts(t *testing.T) {
	lastApplied := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"argocd.argoproj.io/sync-options":"SkipDryRunOnMissingResource=true"},"name":"x"}}`
	ssa := []cluster.ManagedFieldsEntry{{Manager: ArgoCDFieldManager, Operation: "Apply", APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: []byte(`{"f:metadata":{"f:annotations":{"f:argocd.argoproj.io/sync-options":{}}}}`)}}
	withLast := map[string]string{keyTracking: uiID, keySync: "SkipDryRunOnMissingResource=true", argocd.AnnotationLastAppliedConfiguration: lastApplied}
	cases := []struct {
		name    string
		target  Target
		replace bool
		code    RefusalCode
	}{
		{name: "client-side manifest sets it", target: Target{Instance: "guestbook", Ref: ui, Annotations: withLast, Declared: true}, code: RefuseMarkReverted},
		{name: "server-side apply owns it", target: Target{Instance: "guestbook", Ref: ui, Annotations: map[string]string{keyTracking: uiID}, ManagedFields: ssa, Declared: true}, code: RefuseMarkReverted},
		{name: "the app replaces", target: Target{Instance: "guestbook", Ref: ui, Annotations: map[string]string{keyTracking: uiID}, Declared: true}, replace: true, code: RefuseReplacedBySync},
		{name: "not in git any more", target: Target{Instance: "guestbook", Ref: ui, Annotations: withLast, RequiresPruning: true}},
		{name: "the manifest sets other annotations", target: Target{Instance: "guestbook", Ref: ui, Declared: true,
			Annotations: map[string]string{keyTracking: uiID, argocd.AnnotationLastAppliedConfiguration: `{"metadata":{"annotations":{"team":"a"}}}`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := BuildPrepare(annotationMode, c.target, c.replace)
			switch {
			case c.code == "" && p.Refusal != nil:
				t.Fatalf("refused: %s", p.Refusal.Message)
			case c.code == "" && len(p.Changes) != 1:
				t.Fatalf("changes %q", changeStrings(p.Changes))
			case c.code != "" && (p.Refusal == nil || p.Refusal.Code != c.code):
				t.Fatalf("want %s, got %+v", c.code, p.Refusal)
			case c.code != "" && !strings.Contains(p.Refusal.Message, "Put Prune=false,Delete=false into the manifest's sync-options instead"):
				t.Fatalf("no way out said: %s", p.Refusal.Message)
			}
		})
	}
}
