package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/argocd"
)

var appResource = schema.GroupResource{Group: "argoproj.io", Resource: "applications"}

// AppWrites lists the Application writes served, in order: "create ns/name", "patch ns/name <body>",
// "delete ns/name"; dry runs are prefixed "dry-run ".
func (a *ArgoCD) AppWrites() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.writes...)
}

func (a *ArgoCD) record(dryRun bool, format string, args ...any) string {
	w := fmt.Sprintf(format, args...)
	if dryRun {
		w = "dry-run " + w
	}
	a.writes = append(a.writes, w)
	if dryRun {
		return ""
	}
	return w
}

// afterWrite calls AfterWrite with a write served, once the fake's lock is released.
func (a *ArgoCD) afterWrite(written *string, err *error) {
	if a.AfterWrite != nil && *written != "" && *err == nil {
		a.AfterWrite(*written)
	}
}

// rawLocked returns the stored object of an app, made from its struct on first use.
func (a *ArgoCD) rawLocked(ref string) map[string]any {
	if a.raw == nil {
		a.raw = map[string]map[string]any{}
	}
	if obj := a.raw[ref]; obj != nil {
		return obj
	}
	app := a.apps[ref]
	if app == nil {
		return nil
	}
	policy := map[string]any{"syncOptions": toAny(app.SyncOptions)}
	if app.Automated {
		policy["automated"] = map[string]any{"prune": app.AutoPrune}
	}
	obj := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": app.Namespace, "name": app.Name, "uid": orDefault(app.UID, "uid-"+app.Name),
			"resourceVersion": orDefault(app.ResourceVersion, "1"), "labels": toAnyMap(app.Labels)},
		"spec": map[string]any{"project": app.Project, "syncPolicy": policy,
			"destination": map[string]any{"server": app.Destination.Server, "name": app.Destination.Name, "namespace": app.Destination.Namespace}},
	}
	a.raw[ref] = roundTrip(obj)
	return a.raw[ref]
}

// SetApplicationObject replaces an app's stored object (finalizers, ownerReferences…).
func (a *ArgoCD) SetApplicationObject(obj map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rawLocked("")
	meta, _ := obj["metadata"].(map[string]any)
	ref := fmt.Sprint(meta["namespace"]) + "/" + fmt.Sprint(meta["name"])
	app := a.sync(roundTrip(obj), a.apps[ref])
	a.raw[app.Ref()] = roundTrip(obj)
}

// ApplicationObject returns the stored object.
func (a *ArgoCD) ApplicationObject(_ context.Context, namespace, name string) (map[string]any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	obj := a.rawLocked(namespace + "/" + name)
	if obj == nil {
		return nil, apierrors.NewNotFound(appResource, name)
	}
	return roundTrip(obj), nil
}

// CreateApplication stores a new app; OnCreate plays its first comparison.
func (a *ArgoCD) CreateApplication(_ context.Context, obj map[string]any, dryRun bool) (_ map[string]any, err error) {
	var written string
	defer a.afterWrite(&written, &err)
	a.mu.Lock()
	defer a.mu.Unlock()
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	written = a.record(dryRun, "create %s/%s", ns, name)
	if a.rawLocked(ns+"/"+name) != nil {
		return nil, apierrors.NewAlreadyExists(appResource, name)
	}
	out := roundTrip(obj)
	m := out["metadata"].(map[string]any)
	m["uid"], m["resourceVersion"] = "uid-"+name, "1"
	if a.Clock != nil {
		m["creationTimestamp"] = a.Clock.Now().UTC().Format(time.RFC3339)
	} else if a.Now != nil {
		m["creationTimestamp"] = a.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	if dryRun {
		return out, nil
	}
	app := a.sync(out, nil)
	if a.OnCreate != nil {
		a.OnCreate(app)
	}
	a.raw[app.Ref()] = out
	a.Clock.wrote()
	return roundTrip(out), nil
}

// PatchApplication applies a JSON merge patch, refusing a stale resourceVersion.
func (a *ArgoCD) PatchApplication(_ context.Context, namespace, name string, patch []byte, dryRun bool) (_ map[string]any, err error) {
	var written string
	defer a.afterWrite(&written, &err)
	a.mu.Lock()
	defer a.mu.Unlock()
	ref := namespace + "/" + name
	written = a.record(dryRun, "patch %s %s", ref, patch)
	stored := a.rawLocked(ref)
	if stored == nil {
		return nil, apierrors.NewNotFound(appResource, name)
	}
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	meta := stored["metadata"].(map[string]any)
	if pm, ok := p["metadata"].(map[string]any); ok && pm["resourceVersion"] != nil && pm["resourceVersion"] != meta["resourceVersion"] {
		return nil, apierrors.NewConflict(appResource, name, fmt.Errorf("the object has been modified"))
	}
	out := mergePatch(roundTrip(stored), p).(map[string]any)
	rv, _ := strconv.Atoi(fmt.Sprint(meta["resourceVersion"]))
	out["metadata"].(map[string]any)["resourceVersion"] = strconv.Itoa(rv + 1)
	if dryRun {
		return out, nil
	}
	a.sync(out, a.apps[ref])
	a.raw[ref] = out
	a.Clock.wrote()
	return roundTrip(out), nil
}

// DeleteApplication deletes the app under uid and resourceVersion preconditions. Like the API
// server with Argo CD's finalizer, it refuses to make an app with finalizers disappear: the test
// fails loudly instead of modelling a cascade. A dry run is accepted as the API server accepts it:
// it changes nothing, finalizers or not.
func (a *ArgoCD) DeleteApplication(_ context.Context, namespace, name, uid, resourceVersion string, dryRun bool) (err error) {
	var written string
	defer a.afterWrite(&written, &err)
	a.mu.Lock()
	defer a.mu.Unlock()
	ref := namespace + "/" + name
	written = a.record(dryRun, "delete %s", ref)
	stored := a.rawLocked(ref)
	if stored == nil {
		return apierrors.NewNotFound(appResource, name)
	}
	meta := stored["metadata"].(map[string]any)
	if meta["uid"] != uid || meta["resourceVersion"] != resourceVersion {
		return apierrors.NewConflict(appResource, name, fmt.Errorf("precondition failed"))
	}
	if f, _ := meta["finalizers"].([]any); len(f) > 0 && !dryRun {
		return fmt.Errorf("clustertest: Application %s deleted with finalizers %v: Argo CD would cascade", ref, f)
	}
	if !dryRun {
		delete(a.apps, ref)
		delete(a.raw, ref)
		a.Clock.wrote()
	}
	return nil
}

// skipsLocked reports an app marked argocd.argoproj.io/skip-reconcile: the controller's informer
// handlers skip it, so no refresh of it is compared (canProcessApp).
func (a *ArgoCD) skipsLocked(ref string) bool {
	obj := a.rawLocked(ref)
	if obj == nil {
		return false
	}
	annotations, _ := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
	v, set := annotations[argocd.AnnotationSkipReconcile].(string)
	return argocd.SkipsReconcile(v, set)
}

// ControllerFinalizers plays the finalizer block of one comparison of an app that was queued or
// running before the app was marked skip-reconcile, and so runs all the same: when the app's
// DeleteHooks finalizers are not all on the copy the comparison read (read; nil for the app as it
// is now), the controller writes that copy's list with them, with a merge patch that carries no
// resourceVersion (updateFinalizers) — over whatever the app has meanwhile.
func (a *ArgoCD) ControllerFinalizers(namespace, name string, read []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hookFinalizersLocked(namespace+"/"+name, read)
}

// hookFinalizersLocked is the finalizer block of a comparison of app ref that read the finalizers
// read (nil: the app's own).
func (a *ArgoCD) hookFinalizersLocked(ref string, read []string) {
	hooks := a.DeleteHooks[ref]
	obj := a.rawLocked(ref)
	if len(hooks) == 0 || obj == nil {
		return
	}
	meta := obj["metadata"].(map[string]any)
	if read == nil {
		for _, f := range toList(meta["finalizers"]) {
			read = append(read, fmt.Sprint(f))
		}
	}
	list := append([]string(nil), read...)
	for _, h := range hooks {
		if !slices.Contains(list, h) {
			list = append(list, h)
		}
	}
	if len(list) == len(read) {
		return
	}
	meta["finalizers"] = toAny(list)
	rv, _ := strconv.Atoi(fmt.Sprint(meta["resourceVersion"]))
	meta["resourceVersion"] = strconv.Itoa(rv + 1)
	a.sync(obj, a.apps[ref])
}

func toList(v any) []any {
	l, _ := v.([]any)
	return l
}

// sync reads metadata and spec from obj into the app struct (a new one when prev is nil), keeping
// the status the fake controller keeps.
func (a *ArgoCD) sync(obj map[string]any, prev *argocd.Application) *argocd.Application {
	data, _ := json.Marshal(obj)
	parsed, err := argocd.ParseApplication(data)
	if err != nil {
		panic(err)
	}
	if prev != nil {
		parsed.Resources, parsed.SyncStatus, parsed.Revision = prev.Resources, prev.SyncStatus, prev.Revision
		parsed.ReconciledAt, parsed.Refresh, parsed.Operation, parsed.OperationPhase = prev.ReconciledAt, prev.Refresh, prev.Operation, prev.OperationPhase
	}
	a.apps[parsed.Ref()] = &parsed
	return &parsed
}

// mergePatch is RFC 7386.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

func roundTrip(obj map[string]any) map[string]any {
	data, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

func toAny(s []string) []any {
	out := []any{}
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

func toAnyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
