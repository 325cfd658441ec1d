package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

var v361 = argocd.Version{Major: 3, Minor: 6, Patch: 1}

// world is an Argo CD with one app, "guestbook", stuck on namespaces that require pruning.
type world struct {
	t        *testing.T
	cluster  *clustertest.Cluster
	argo     *clustertest.ArgoCD
	settings argocd.Settings
	store    *journal.Store
	refs     map[string]cluster.Ref
	// clock, when set, is the one timeline of the engine and the fakes (shareClock).
	clock *clustertest.Clock
}

// shareClock puts the engine, the fake cluster and the fake controller on one timeline.
func (w *world) shareClock() {
	w.clock = clustertest.NewClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	w.cluster.Clock, w.argo.Clock = w.clock, w.clock
}

func newWorld(t *testing.T, namespaces ...string) *world {
	t.Helper()
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation+label"}, &v361)
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	w := &world{t: t, cluster: c, argo: clustertest.NewArgoCD("argocd", c, s), settings: s, refs: map[string]cluster.Ref{},
		store: journal.NewStore(filepath.Join(t.TempDir(), "journal"), nil)}
	w.store.FlushInterval = time.Millisecond
	app := argocd.Application{Name: "guestbook", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "default"}, SyncStatus: "OutOfSync"}
	for _, ns := range namespaces {
		w.refs[ns] = c.Add("", "Namespace", "", ns, map[string]string{argocd.DefaultInstanceLabelKey: "guestbook", "team": "storage"},
			map[string]string{argocd.AnnotationTrackingID: "guestbook:/Namespace:default/" + ns, "note": "keep me"})
		app.Resources = append(app.Resources, argocd.Resource{Version: "v1", Kind: "Namespace", Name: ns, Status: "OutOfSync", RequiresPruning: true})
	}
	w.argo.AddApp(app)
	return w
}

func (w *world) engine() *Engine {
	e := &Engine{ArgoCD: w.argo, Settings: w.settings, Journals: w.store, ToolVersion: "test", Poll: time.Millisecond}
	if w.clock != nil {
		e.Now = w.clock.Now
	}
	return e
}

func (w *world) detach(req DetachRequest) *Change {
	w.t.Helper()
	if req.Strategy == "" {
		req.Strategy = plan.StrategyUntrack
	}
	if len(req.Apps) == 0 && req.Selector == nil {
		req.Apps = []AppName{{Name: "guestbook"}}
	}
	run, err := w.engine().PlanDetach(context.Background(), req)
	if err != nil {
		w.t.Fatalf("plan: %v", err)
	}
	return run
}

// outcomes are the outcomes by object name: as done, or as planned when done is nil.
func outcomes(p *Planned, done *Applied) map[string]Outcome {
	out := map[string]Outcome{}
	for name, r := range results(p, done) {
		out[name] = r.Outcome
	}
	return out
}

// results are the items' results by object name: as done, or as planned when done is nil.
func results(p *Planned, done *Applied) map[string]ItemResult {
	if done == nil {
		done = p.Preview()
	}
	out := map[string]ItemResult{}
	for i, it := range p.Items {
		out[it.Ref.Name] = done.Items[i]
	}
	return out
}

func (w *world) tracked(ns string) bool {
	o := w.cluster.Object(w.refs[ns])
	_, label := o.Labels[argocd.DefaultInstanceLabelKey]
	_, annotation := o.Annotations[argocd.AnnotationTrackingID]
	return label || annotation
}

func TestDetachPreviewThenApplyThenVerify(t *testing.T) {
	w := newWorld(t, "team-a", "team-b")
	e := w.engine()
	run := w.detach(DetachRequest{All: true})
	if got := run.Counts()[OutcomePlanned]; got != 2 {
		t.Fatalf("planned %d, want 2: %v", got, outcomes(run.Planned, nil))
	}
	if preview, err := e.Execute(context.Background(), run, DryRunClient); err != nil || preview.Journal != "" || preview.Mode != ModePreview {
		t.Fatalf("a preview wrote a journal or failed: %v %+v", err, preview)
	}
	for _, c := range w.cluster.Calls() {
		if c.Verb == "patch" {
			t.Fatalf("a preview sent a patch: %+v", c)
		}
	}
	done, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if got := done.Counts()[OutcomeApplied]; got != 2 {
		t.Fatalf("applied %d: %v", got, outcomes(run.Planned, done.Applied))
	}
	if run.Counts()[OutcomePlanned] != 2 {
		t.Fatalf("Apply changed the plan: %v", outcomes(run.Planned, nil))
	}
	for _, ns := range []string{"team-a", "team-b"} {
		o := w.cluster.Object(w.refs[ns])
		if w.tracked(ns) || o.Labels["team"] != "storage" || o.Annotations["note"] != "keep me" {
			t.Errorf("%s after detach: labels %v annotations %v", ns, o.Labels, o.Annotations)
		}
	}
	v := e.VerifyChange(context.Background(), run, done, time.Second)[0]
	if v == nil || !v.Verified || !v.Synced || len(v.StillListed) != 0 {
		t.Fatalf("verification %+v", v)
	}
	j, _, err := w.store.Load(done.Journal)
	if err != nil {
		t.Fatal(err)
	}
	if c := j.Counts(); c[journal.StateApplied] != 2 || j.Entries[0].Application.Instance != "guestbook" || j.Clusters[0].Name != argocd.InClusterName {
		t.Fatalf("journal %+v", j)
	}
}

func TestServerDryRunPersistsNothing(t *testing.T) {
	w := newWorld(t, "team-a")
	run := w.detach(DetachRequest{All: true})
	done, err := w.engine().Execute(context.Background(), run, DryRunServer)
	if err != nil {
		t.Fatal(err)
	}
	if done.Items[0].Outcome != OutcomeDryRunAccepted || !w.tracked("team-a") || done.Journal != "" {
		t.Fatalf("outcome %s, tracked %v, journal %q", done.Items[0].Outcome, w.tracked("team-a"), done.Journal)
	}
}

// TestHooksAreNeverSelected: --all leaves hook rows out; naming one is refused with the reason.
func TestHooksAreNeverSelected(t *testing.T) {
	w := newWorld(t, "team-a")
	hook := w.cluster.Add("", "ConfigMap", "default", "migrate", map[string]string{argocd.DefaultInstanceLabelKey: "guestbook"},
		map[string]string{argocd.AnnotationTrackingID: "guestbook:/ConfigMap:default/migrate", argocd.AnnotationHook: "PreSync"})
	app, _ := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
	app.Resources = append(app.Resources, argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "migrate", RequiresPruning: true, Hook: true})
	w.argo.AddApp(app)

	run := w.detach(DetachRequest{All: true})
	if len(run.Items) != 1 || run.Items[0].Ref.Name != "team-a" {
		t.Fatalf("--all selected %v; want only the namespace", outcomes(run.Planned, nil))
	}
	arg, _ := ParseResourceArg("ConfigMap/default/migrate")
	run = w.detach(DetachRequest{Resources: []ResourceArg{arg}})
	if it := run.Items[0]; it.Outcome != OutcomeRefused || it.Reason != string(plan.RefuseHook) {
		t.Fatalf("named hook: %s %s %s", it.Outcome, it.Reason, it.Message)
	}
	if o := w.cluster.Object(hook); o.Annotations[argocd.AnnotationTrackingID] == "" {
		t.Fatal("the hook was untracked")
	}
}

// TestGoneObjectIsSkipped: an object deleted since the app's status was written does not stop the
// rest.
func TestGoneObjectIsSkipped(t *testing.T) {
	w := newWorld(t, "team-a", "team-b")
	w.cluster.Delete(w.refs["team-a"])
	run := w.detach(DetachRequest{All: true})
	done, err := w.engine().Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(run.Planned, done.Applied)
	if got["team-a"] != OutcomeGone || got["team-b"] != OutcomeApplied {
		t.Fatalf("outcomes %v", got)
	}
}

// TestConflictIsReplannedNeverClobbered: another writer between plan and patch makes the patch
// conflict; unprune re-reads and re-plans, keeping the other writer's change; an object handed to
// another app meanwhile is refused and left alone.
func TestConflictIsReplannedNeverClobbered(t *testing.T) {
	w := newWorld(t, "race-keep", "race-moved")
	run := w.detach(DetachRequest{All: true})
	w.cluster.Update(w.refs["race-keep"], func(o *cluster.Object) { o.Labels["someone"] = "else" })
	w.cluster.Update(w.refs["race-moved"], func(o *cluster.Object) {
		o.Labels[argocd.DefaultInstanceLabelKey] = "thief"
		o.Annotations[argocd.AnnotationTrackingID] = "thief:/Namespace:default/race-moved"
	})
	done, err := w.engine().Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	byName := results(run.Planned, done.Applied)
	if it := byName["race-keep"]; it.Outcome != OutcomeApplied || it.Attempts != 2 {
		t.Errorf("race-keep: %s after %d attempts", it.Outcome, it.Attempts)
	}
	if o := w.cluster.Object(w.refs["race-keep"]); o.Labels["someone"] != "else" || w.tracked("race-keep") {
		t.Errorf("race-keep: %v", o.Labels)
	}
	if it := byName["race-moved"]; it.Outcome != OutcomeRefused || it.Reason != string(plan.RefuseOtherOwner) {
		t.Errorf("race-moved: %s %s", it.Outcome, it.Reason)
	}
	if o := w.cluster.Object(w.refs["race-moved"]); o.Labels[argocd.DefaultInstanceLabelKey] != "thief" {
		t.Errorf("race-moved: the other app's tracking was touched: %v", o.Labels)
	}
	j, _, _ := w.store.Load(done.Journal)
	states := map[string]journal.State{}
	for _, e := range j.Entries {
		states[e.Object.Name] = e.State
	}
	if states["race-keep"] != journal.StateApplied || states["race-moved"] != journal.StateSkipped {
		t.Errorf("journal states %v", states)
	}
}

// TestRBACRefusalIsRecordedAsNothingChanged: a patch the API server refuses leaves the entry failed
// with no changes, so undo never "restores" keys unprune did not remove.
func TestRBACRefusalIsRecordedAsNothingChanged(t *testing.T) {
	w := newWorld(t, "team-a")
	w.cluster.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
		return false, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "team-a", errors.New(`User "reader" cannot patch resource "namespaces"`))
	}
	run := w.detach(DetachRequest{All: true})
	done, _ := w.engine().Execute(context.Background(), run, DryRunNone)
	it := done.Items[0]
	if it.Outcome != OutcomeFailed || it.Reason != string(cluster.FailureRBAC) || !strings.Contains(it.Message, "your user may not patch") {
		t.Fatalf("%s %s %s", it.Outcome, it.Reason, it.Message)
	}
	j, _, _ := w.store.Load(done.Journal)
	if e := j.Entries[0]; e.State != journal.StateFailed || len(e.Changes) != 0 {
		t.Fatalf("journal entry %+v", e)
	}
}

// TestAdmissionDenialIsNotCalledRBAC: a policy denying the patch is reported as such.
func TestAdmissionDenialIsNotCalledRBAC(t *testing.T) {
	w := newWorld(t, "team-a")
	w.cluster.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
		return false, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "team-a",
			errors.New("ValidatingAdmissionPolicy 'freeze' with binding 'freeze' denied request: frozen"))
	}
	run := w.detach(DetachRequest{All: true})
	done, _ := w.engine().Execute(context.Background(), run, DryRunNone)
	if it := done.Items[0]; it.Reason != string(cluster.FailureAdmission) || strings.Contains(it.Message, "your user may not") {
		t.Fatalf("%s: %s", it.Reason, it.Message)
	}
}

// TestInterruptStopsDispatchingAndKeepsTheJournalTrue: a cancelled context stops new patches at
// once; patches in flight finish; the journal matches the cluster; a rerun finishes the job.
func TestInterruptStopsDispatchingAndKeepsTheJournalTrue(t *testing.T) {
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("ns-%03d", i))
	}
	w := newWorld(t, names...)
	w.cluster.PatchDelay = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var patched atomic.Int64
	w.cluster.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
		if patched.Add(1) == 50 {
			cancel()
		}
		return false, nil
	}
	e := w.engine()
	e.Workers = 8
	run := w.detach(DetachRequest{All: true})
	done, err := e.Execute(ctx, run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	c := done.Counts()
	if !done.Interrupted || c[OutcomeApplied] < 50 || c[OutcomeApplied] > 60 || c[OutcomeNotAttempted] != 200-c[OutcomeApplied] {
		t.Fatalf("interrupted %v, counts %v", done.Interrupted, c)
	}
	j, _, err := w.store.Load(done.Journal)
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range j.Entries {
		tracked := w.tracked(entry.Object.Name)
		switch entry.State {
		case journal.StateApplied:
			if tracked {
				t.Errorf("%s: journal says applied, object still tracked", entry.Object.Name)
			}
		case journal.StateSkipped:
			if !tracked {
				t.Errorf("%s: journal says skipped, object released", entry.Object.Name)
			}
		default:
			t.Errorf("%s: state %s after an interruption", entry.Object.Name, entry.State)
		}
	}
	w.cluster.BeforePatch = nil
	rerun := w.detach(DetachRequest{All: true})
	if _, err := e.Execute(context.Background(), rerun, DryRunNone); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if w.tracked(n) {
			t.Fatalf("%s still tracked after the rerun", n)
		}
	}
}

// TestUndoRestoresAndRefuses: undo puts back exactly what detach removed; a key someone set since
// and an object recreated under the same name are left alone.
func TestUndoRestoresAndRefuses(t *testing.T) {
	w := newWorld(t, "restore", "changed", "recreated")
	before := map[string]*cluster.Object{}
	for n, ref := range w.refs {
		before[n] = w.cluster.Object(ref)
	}
	run := w.detach(DetachRequest{All: true})
	e := w.engine()
	done, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	w.cluster.Update(w.refs["changed"], func(o *cluster.Object) { o.Labels[argocd.DefaultInstanceLabelKey] = "newowner" })
	w.cluster.Delete(w.refs["recreated"])
	w.cluster.Add("", "Namespace", "", "recreated", nil, nil)

	rec, err := w.store.Open(done.Journal)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.withUndo(w, w.argoOf).PlanUndo(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(u.Planned, w.execute(e, u, DryRunNone).Applied)
	if got["restore"] != OutcomeRestored || got["changed"] != OutcomeRestored || got["recreated"] != OutcomeRefused {
		t.Fatalf("outcomes %v", got)
	}
	if o := w.cluster.Object(w.refs["restore"]); fmt.Sprint(o.Labels, o.Annotations) != fmt.Sprint(before["restore"].Labels, before["restore"].Annotations) {
		t.Errorf("restore: %v %v", o.Labels, o.Annotations)
	}
	changed := w.cluster.Object(w.refs["changed"])
	if changed.Labels[argocd.DefaultInstanceLabelKey] != "newowner" || changed.Annotations[argocd.AnnotationTrackingID] == "" {
		t.Errorf("changed: the new label must stay and the untouched annotation come back: %v %v", changed.Labels, changed.Annotations)
	}
	j, _, _ := w.store.Load(done.Journal)
	states := map[string]journal.State{}
	for _, entry := range j.Entries {
		states[entry.Object.Name] = entry.State
	}
	if states["restore"] != journal.StateUndone || states["changed"] == journal.StateUndone || states["recreated"] == journal.StateUndone {
		t.Errorf("journal states %v", states)
	}
}

// TestUndoRefusesForeignTracking: a journal edited to restore a tracking-id naming another app (or
// another object) is refused; nothing of that entry is written.
func TestUndoRefusesForeignTracking(t *testing.T) {
	w := newWorld(t, "team-a")
	run := w.detach(DetachRequest{All: true})
	e := w.engine()
	done, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(done.Journal)
	edited := strings.ReplaceAll(string(raw), "guestbook:/Namespace:default/team-a", "attacker:/Namespace:default/team-a")
	if err := os.WriteFile(done.Journal, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := w.store.Open(done.Journal)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := e.withUndo(w, w.argoOf).PlanUndo(context.Background(), rec)
	restored := w.execute(e, u, DryRunNone)
	if it := restored.Items[0]; it.Outcome != OutcomeRefused || !strings.Contains(it.Message, "names app instance") {
		t.Fatalf("%s: %s", it.Outcome, it.Message)
	}
	if w.tracked("team-a") {
		t.Fatal("undo wrote tracking from an edited journal")
	}
}

// TestScrubLastAppliedKeepsSecretsOut: the embedded configuration of a Secret never reaches the
// journal, and undo restores it byte for byte.
func TestScrubLastAppliedKeepsSecretsOut(t *testing.T) {
	w := newWorld(t)
	const secret = "aHVudGVyMg=="
	lastApplied := `{"apiVersion":"v1","data":{"password":"` + secret + `"},"kind":"Secret","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"guestbook:/Secret:db/creds"},"name":"creds","namespace":"db"}}` + "\n"
	ref := w.cluster.Add("", "Secret", "db", "creds", nil, map[string]string{
		argocd.AnnotationTrackingID: "guestbook:/Secret:db/creds", argocd.AnnotationLastAppliedConfiguration: lastApplied})
	w.argo.AddApp(argocd.Application{Name: "guestbook", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "default"},
		Resources: []argocd.Resource{{Version: "v1", Kind: "Secret", Namespace: "db", Name: "creds", RequiresPruning: true}}})
	run := w.detach(DetachRequest{All: true, ScrubLastApplied: true})
	e := w.engine()
	done, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if o := w.cluster.Object(ref); strings.Contains(o.Annotations[argocd.AnnotationLastAppliedConfiguration], "tracking-id") || !strings.Contains(o.Annotations[argocd.AnnotationLastAppliedConfiguration], secret) {
		t.Fatalf("scrub: %q", o.Annotations[argocd.AnnotationLastAppliedConfiguration])
	}
	raw, _ := os.ReadFile(done.Journal)
	if strings.Contains(string(raw), secret) || strings.Contains(string(raw), "password") {
		t.Fatalf("the journal holds the Secret's data:\n%s", raw)
	}
	rec, _ := w.store.Open(done.Journal)
	u, _ := e.withUndo(w, w.argoOf).PlanUndo(context.Background(), rec)
	w.execute(e, u, DryRunNone)
	if got := w.cluster.Object(ref).Annotations[argocd.AnnotationLastAppliedConfiguration]; got != lastApplied {
		t.Fatalf("undo did not restore last-applied byte for byte:\n got %q\nwant %q", got, lastApplied)
	}
}

// TestVerifyDoesNotWaitForOthersSynced: releasing some resources while others keep the app
// OutOfSync is verified as soon as a comparison no longer lists the released ones.
func TestVerifyDoesNotWaitForOthersSynced(t *testing.T) {
	w := newWorld(t, "release-me", "keep-me")
	arg, _ := ParseResourceArg("Namespace/release-me")
	run := w.detach(DetachRequest{Resources: []ResourceArg{arg}})
	e := w.engine()
	done, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v := e.VerifyChange(context.Background(), run, done, 30*time.Second)[0]
	if !v.Verified || v.Synced || len(v.OutOfSync) != 1 || v.OutOfSync[0].Name != "keep-me" {
		t.Fatalf("verification %+v", v)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("verification waited %s", time.Since(start))
	}
}

// TestKeepStrategy: keep adds the options; the fake controller counts the app Synced.
func TestKeepStrategy(t *testing.T) {
	w := newWorld(t, "team-a")
	now := time.Now()
	w.argo.Now = func() time.Time { return now.Add(2 * time.Second) }
	run := w.detach(DetachRequest{All: true, Strategy: plan.StrategyKeep})
	e := w.engine()
	done, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	o := w.cluster.Object(w.refs["team-a"])
	if o.Annotations[argocd.AnnotationSyncOptions] != "Prune=false,Delete=false" || o.Annotations[argocd.AnnotationCompareOptions] != "IgnoreExtraneous" || !w.tracked("team-a") {
		t.Fatalf("keep: %v", o.Annotations)
	}
	if v := e.VerifyChange(context.Background(), run, done, 5*time.Second)[0]; !v.Verified || !v.Synced {
		t.Fatalf("verification %+v", v)
	}
}

// TestUnknownResourceListsAFewCandidates: a RESOURCE the app does not list is bad input, with a
// short list of what it does list.
func TestUnknownResourceListsAFewCandidates(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("ns-%02d", i))
	}
	w := newWorld(t, names...)
	arg, _ := ParseResourceArg("Namespace/nope")
	_, err := w.engine().PlanDetach(context.Background(), DetachRequest{Apps: []AppName{{Name: "guestbook"}}, Resources: []ResourceArg{arg}, Strategy: plan.StrategyUntrack})
	var r *RequestError
	if !errors.As(err, &r) || r.Kind != UnlistedResource || !strings.Contains(err.Error(), "and 7 more") || strings.Contains(err.Error(), "ns-11") {
		t.Fatalf("error %v", err)
	}
}

// withUndo gives the engine what an undo reaches: the world's cluster, and argoOf for Argo CD.
func (e *Engine) withUndo(w *world, argoOf ArgoCDOf) *Engine {
	e.Connect = func(context.Context, cluster.Info, *journal.AppRef) (cluster.Objects, error) { return w.cluster, nil }
	e.ArgoCDOf = argoOf
	return e
}

// execute runs a change and fails the test when it cannot run.
func (w *world) execute(e *Engine, c *Change, mode DryRun) *Executed {
	w.t.Helper()
	x, err := e.Execute(context.Background(), c, mode)
	if err != nil {
		w.t.Fatal(err)
	}
	return x
}

// paramsArgoCD is the fake installation with argocd-cmd-params-cm.
type paramsArgoCD struct {
	*clustertest.ArgoCD
	params map[string]string
	err    error
}

func (p paramsArgoCD) CmdParams(context.Context) (map[string]string, error) { return p.params, p.err }

// A selection of every namespace lists only the Applications Argo CD reconciles, as argocd-server
// does; a named namespace, or a backend without the parameters, lists what is there.
func TestListSelectedKeepsWhatArgoCDReconciles(t *testing.T) {
	w := newWorld(t)
	for _, ns := range []string{"team-a", "team-b", "other"} {
		w.argo.AddApp(argocd.Application{Namespace: ns, Name: "app", Destination: argocd.Destination{Server: argocd.InClusterServer}})
	}
	refs := func(apps []argocd.Application) string {
		var out []string
		for _, a := range apps {
			out = append(out, a.Ref())
		}
		return strings.Join(out, " ")
	}
	ctx := context.Background()
	enabled := paramsArgoCD{ArgoCD: w.argo, params: map[string]string{argocd.ParamAppNamespaces: "team-*, /^nope$/"}}
	for _, tc := range []struct {
		argo cluster.ArgoCD
		sel  cluster.Selector
		want string
		left int
	}{
		{enabled, cluster.Selector{}, "argocd/guestbook team-a/app team-b/app", 1},
		{enabled, cluster.Selector{Namespace: "other"}, "other/app", 0},
		{paramsArgoCD{ArgoCD: w.argo, params: map[string]string{}}, cluster.Selector{}, "argocd/guestbook", 3},
		{w.argo, cluster.Selector{}, "argocd/guestbook other/app team-a/app team-b/app", 0},
	} {
		apps, narrowed, err := ListSelected(ctx, tc.argo, tc.sel)
		if err != nil || narrowed.Err != nil || refs(apps) != tc.want || narrowed.Left != tc.left {
			t.Errorf("%T %+v: %q, %+v, %v; want %q, %d left", tc.argo, tc.sel, refs(apps), narrowed, err, tc.want, tc.left)
		}
	}
	// Who may not read the parameters sees every app, and why.
	failing := paramsArgoCD{ArgoCD: w.argo, err: errors.New("configmaps is forbidden")}
	apps, narrowed, err := ListSelected(ctx, failing, cluster.Selector{})
	if err != nil || len(apps) != 4 || narrowed.Err == nil || !strings.Contains(narrowed.Err.Error(), "forbidden") {
		t.Errorf("a failed read of the parameters: %d apps, %+v, %v", len(apps), narrowed, err)
	}
}
