package labtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// AppOptions describe a test Application.
type AppOptions struct {
	// Name defaults to a unique name.
	Name string
	// Namespace is where the Application object lives; empty means the installation's namespace.
	// Another namespace must be one of the installation's AppNamespaces ("apps in any namespace").
	Namespace string
	Repo      *Repo
	// Path in the repository; defaults to "manifests". A plain directory gets a first ConfigMap
	// <name>-config; a Helm chart or kustomization already written there (WriteHelmChart,
	// WriteKustomization) is left as it is.
	Path string
	// Helm is spec.source.helm; nil leaves it unset, so the release name is the app's name.
	Helm *HelmSource
	// JsonnetExtVars are spec.source.directory.jsonnet.extVars, name to value: the path's
	// *.jsonnet files are rendered with them, and Argo CD substitutes $ARGOCD_APP_NAME and its other
	// build variables in the values.
	JsonnetExtVars map[string]string
	// DestNamespace is spec.destination.namespace (default: a unique name); it is created for the
	// test in the destination cluster.
	DestNamespace string
	// DestServer is spec.destination.server: empty means the lab's own cluster
	// (https://kubernetes.default.svc) unless DestName is set; a registered remote's Server
	// deploys there.
	DestServer string
	// DestName is spec.destination.name instead of a server: a cluster name given to
	// Install.RegisterRemote.
	DestName string
	// Project is spec.project; empty means "default" (lab.ServerProject is the other one).
	Project string
	// Automated turns on automated sync with the given prune setting.
	Automated bool
	AutoPrune bool
	SelfHeal  bool
	// Finalizers are the Application's, e.g. resources-finalizer.argocd.argoproj.io, with which
	// deleting the app deletes its resources (the test's cleanup deletes it).
	Finalizers []string
	// SyncOptions are spec.syncPolicy.syncOptions (e.g. ServerSideApply=true); syncs the tests
	// request carry them, as argocd-server's sync does when the request names none.
	SyncOptions []string
}

// HelmSource is an Application's spec.source.helm.
type HelmSource struct {
	// ReleaseName is helm.releaseName; empty means the Application's name.
	ReleaseName string
	// Parameters are helm.parameters (--set name=value).
	Parameters map[string]string
	// Values is helm.values, YAML.
	Values string
}

func (h *HelmSource) spec() map[string]any {
	out := map[string]any{}
	if h.ReleaseName != "" {
		out["releaseName"] = h.ReleaseName
	}
	if len(h.Parameters) > 0 {
		params := make([]any, 0, len(h.Parameters))
		for _, k := range SortedKeys(h.Parameters) {
			params = append(params, map[string]any{"name": k, "value": h.Parameters[k]})
		}
		out["parameters"] = params
	}
	if h.Values != "" {
		out["values"] = h.Values
	}
	return out
}

// App is an Application under test.
type App struct {
	Install   *Install
	Name      string
	Namespace string
	Repo      *Repo
	Path      string
	// DestNamespace is the app's destination namespace, which holds its first ConfigMap.
	DestNamespace string
	// Cluster is the destination cluster, where its resources live: Env.Cluster, or a Remote's.
	Cluster     *Cluster
	Project     string
	SyncOptions []string
}

// CreateApp creates an Application that syncs opts.Path of opts.Repo to the lab's own cluster, or to
// the remote one that opts.DestServer or opts.DestName names.
func (i *Install) CreateApp(t testing.TB, opts AppOptions) *App {
	t.Helper()
	dest := i.destination(t, opts.DestServer, opts.DestName)
	if opts.Project == "" {
		opts.Project = "default"
	}
	if opts.Name == "" {
		opts.Name = UniqueName("app")
	}
	if opts.Namespace == "" {
		opts.Namespace = i.Namespace()
	}
	if opts.Path == "" {
		opts.Path = "manifests"
	}
	if opts.DestNamespace == "" {
		opts.DestNamespace = UniqueName("dest")
	}
	dest.CreateNamespace(t, opts.DestNamespace)
	// Every app of a plain directory starts with one ordinary resource so that its path exists and it
	// has something to sync; a chart or kustomization renders its own.
	if !opts.Repo.renderedSource(opts.Path) {
		opts.Repo.Write(t, opts.Path+"/"+opts.Name+"-config.yaml", fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-config\n  namespace: %s\ndata:\n  owner: %s\n",
			opts.Name, opts.DestNamespace, opts.Name))
	}
	opts.Repo.Commit(t, "add "+opts.Name)
	destination := map[string]any{"namespace": opts.DestNamespace}
	switch {
	case opts.DestName != "":
		destination["name"] = opts.DestName
	case opts.DestServer != "":
		destination["server"] = opts.DestServer
	default:
		destination["server"] = InClusterServer
	}
	source := map[string]any{"repoURL": opts.Repo.URL, "path": opts.Path, "targetRevision": "main"}
	if opts.Helm != nil {
		source["helm"] = opts.Helm.spec()
	}
	if len(opts.JsonnetExtVars) > 0 {
		vars := make([]any, 0, len(opts.JsonnetExtVars))
		for _, k := range SortedKeys(opts.JsonnetExtVars) {
			vars = append(vars, map[string]any{"name": k, "value": opts.JsonnetExtVars[k]})
		}
		source["directory"] = map[string]any{"jsonnet": map[string]any{"extVars": vars}}
	}
	spec := map[string]any{
		"project":     opts.Project,
		"source":      source,
		"destination": destination,
	}
	policy := map[string]any{}
	if opts.Automated {
		policy["automated"] = map[string]any{"prune": opts.AutoPrune, "selfHeal": opts.SelfHeal}
	}
	if len(opts.SyncOptions) > 0 {
		policy["syncOptions"] = opts.SyncOptions
	}
	if len(policy) > 0 {
		spec["syncPolicy"] = policy
	}
	meta := map[string]any{"name": opts.Name, "namespace": opts.Namespace}
	if len(opts.Finalizers) > 0 {
		finalizers := make([]any, 0, len(opts.Finalizers))
		for _, f := range opts.Finalizers {
			finalizers = append(finalizers, f)
		}
		meta["finalizers"] = finalizers
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": meta,
		"spec":     spec,
	}}
	if _, err := i.Env.Dynamic.Resource(GVRApplication).Namespace(opts.Namespace).Create(Context(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Application %s/%s: %v", opts.Namespace, opts.Name, err)
	}
	a := &App{Install: i, Name: opts.Name, Namespace: opts.Namespace, Repo: opts.Repo, Path: opts.Path,
		DestNamespace: opts.DestNamespace, Cluster: dest, Project: opts.Project, SyncOptions: opts.SyncOptions}
	t.Cleanup(func() {
		// Without opts.Finalizers, deleting the Application never cascades to its resources.
		_ = i.Env.Dynamic.Resource(GVRApplication).Namespace(a.Namespace).Delete(context.Background(), a.Name, metav1.DeleteOptions{})
	})
	return a
}

// Instance is the name Argo CD tracks this app's resources by: the app name in Argo CD's own
// namespace, <namespace>_<name> elsewhere.
func (a *App) Instance() string {
	if a.Namespace == a.Install.Namespace() {
		return a.Name
	}
	return a.Namespace + "_" + a.Name
}

// Get reads the Application.
func (a *App) Get(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	u, err := a.Install.Env.Dynamic.Resource(GVRApplication).Namespace(a.Namespace).Get(Context(t), a.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Application %s/%s: %v", a.Namespace, a.Name, err)
	}
	return u
}

func (a *App) patch(t testing.TB, body any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Install.Env.Dynamic.Resource(GVRApplication).Namespace(a.Namespace).
		Patch(Context(t), a.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch Application %s/%s: %v", a.Namespace, a.Name, err)
	}
}

// Refresh asks the controller to compare the app with git again (it re-resolves the revision).
func (a *App) Refresh(t testing.TB) {
	t.Helper()
	a.patch(t, map[string]any{"metadata": map[string]any{"annotations": map[string]any{"argocd.argoproj.io/refresh": "normal"}}})
}

// RefreshUntil asks for a refresh and waits until cond holds. A refresh requested while the
// controller is finishing an earlier comparison can be consumed by it (the controller clears the
// annotation when that comparison ends), so the request is repeated whenever the annotation is gone
// and cond still does not hold.
func (a *App) RefreshUntil(t testing.TB, timeout time.Duration, what string, cond func(Status) bool) Status {
	t.Helper()
	a.Refresh(t)
	asked := time.Now()
	var s Status
	ok, last := poll(timeout, func() (bool, string) {
		u := a.Get(t)
		s = ParseStatus(t, u)
		if cond(s) {
			return true, ""
		}
		_, pending := u.GetAnnotations()["argocd.argoproj.io/refresh"]
		if !pending && time.Since(asked) > 2*time.Second {
			a.Refresh(t)
			asked = time.Now()
		}
		return false, fmt.Sprintf("%s refreshPending=%t", s, pending)
	})
	if !ok {
		t.Fatalf("timed out after %s waiting for %s %s; last seen: %s\napplication-controller's last lines on it:\n%s\nrepo-server's last lines on its repository:\n%s",
			timeout, a.Name, what, last, a.Install.LogLines("application-controller", a.Name, 30), a.Install.LogLines("repo-server", a.Repo.bare, 30))
	}
	return s
}

// RefreshAndWait asks for a refresh and waits until the controller has done it (it removes the
// annotation once the comparison ran): changes made to live objects before the call are then part
// of the controller's view.
func (a *App) RefreshAndWait(t testing.TB) {
	t.Helper()
	a.Refresh(t)
	Eventually(t, 60*time.Second, a.Name+" to be refreshed", func() (bool, string) {
		_, pending := a.Get(t).GetAnnotations()["argocd.argoproj.io/refresh"]
		return !pending, "refresh annotation still set"
	})
}

// Sync starts a sync operation the way argocd-server would, through .operation, and waits until
// that operation has finished. It returns the final operation state.
//
// The controller clears .operation when it finishes an operation, so a request written while an
// (automated) operation runs can be wiped: Sync waits for the app to be idle first and asks again if
// its request vanished without running.
func (a *App) Sync(t testing.TB, prune bool) Operation {
	t.Helper()
	return a.sync(t, prune, false)
}

// ForceSync is Sync with FORCE ticked (`argocd app sync --force`): the operation's
// syncStrategy.apply.force, which gitops-engine passes to kubectl apply --force, or to kubectl
// replace --force for resources synced with Replace=true.
func (a *App) ForceSync(t testing.TB, prune bool) Operation {
	t.Helper()
	return a.sync(t, prune, true)
}

func (a *App) sync(t testing.TB, prune, force bool) Operation {
	t.Helper()
	// Auto-sync runs operations too, within the same second: a unique initiator tells ours apart.
	initiator := UniqueName("labtest")
	a.requestSync(t, prune, force, initiator)
	request := func() { a.requestSync(t, prune, force, initiator) }
	var op Operation
	asked := time.Now()
	Eventually(t, 2*time.Minute, "sync of "+a.Name+" to finish", func() (bool, string) {
		s := a.Status(t)
		op = s.Operation
		if op.Initiator == initiator {
			done := op.Phase != "" && op.Phase != "Running" && op.Phase != "Terminating"
			return done, fmt.Sprintf("phase %q message %q", op.Phase, op.Message)
		}
		switch {
		case s.Idle() && time.Since(asked) > 3*time.Second:
			request()
			asked = time.Now()
		case s.Requested && time.Since(asked) > 10*time.Second:
			// Our request sits there unstarted: the controller missed its event (seen once with apps
			// in any namespace). Any update of the app re-queues its operation; a refresh is one.
			a.Refresh(t)
			asked = time.Now()
		}
		return false, fmt.Sprintf("last operation by %q, not ours (requested: %t)", op.Initiator, s.Requested)
	})
	return op
}

// RequestSync asks for a sync once the app is idle, without waiting for it; it returns the
// operation's initiator, which the operation state will name.
func (a *App) RequestSync(t testing.TB, prune bool) string {
	t.Helper()
	initiator := UniqueName("labtest")
	a.requestSync(t, prune, false, initiator)
	return initiator
}

func (a *App) requestSync(t testing.TB, prune, force bool, initiator string) {
	t.Helper()
	a.WaitStatus(t, 2*time.Minute, "to have no operation running", func(s Status) bool { return s.Idle() })
	sync := map[string]any{"revision": "main", "prune": prune}
	if len(a.SyncOptions) > 0 {
		// argocd-server's Sync takes the app's syncPolicy.syncOptions when the request names none
		// (server/application/application.go); the controller reads them only from the operation.
		sync["syncOptions"] = a.SyncOptions
	}
	if force {
		sync["syncStrategy"] = map[string]any{"apply": map[string]any{"force": true}}
	}
	a.patch(t, map[string]any{"operation": map[string]any{
		"initiatedBy": map[string]any{"username": initiator},
		"sync":        sync,
	}})
}

// Resource is one row of the Application's .status.resources.
type Resource struct {
	Group           string `json:"group"`
	Version         string `json:"version"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Status          string `json:"status"`
	RequiresPruning bool   `json:"requiresPruning"`
	Hook            bool   `json:"hook"`
}

func (r Resource) String() string {
	hook := ""
	if r.Hook {
		hook = " hook"
	}
	return fmt.Sprintf("%s/%s %s/%s status=%s requiresPruning=%t%s", r.Group, r.Kind, r.Namespace, r.Name, r.Status, r.RequiresPruning, hook)
}

// Operation is the Application's .status.operationState.
type Operation struct {
	Phase     string            `json:"phase"`
	Message   string            `json:"message"`
	StartedAt string            `json:"startedAt"`
	Initiator string            `json:"-"`
	Results   []OperationResult `json:"-"`
}

// OperationResult is one resource of the last sync's result.
type OperationResult struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	Message   string `json:"message"`
	SyncPhase string `json:"syncPhase"`
	// HookType (PreSync, PostSync …) and HookPhase (Running, Succeeded …) are set for hooks.
	HookType  string `json:"hookType"`
	HookPhase string `json:"hookPhase"`
}

// Status is the part of .status the tests look at.
type Status struct {
	// Requested is true while .operation holds a request the controller has not finished.
	Requested bool
	Sync      string
	Revision  string
	Health    string
	// SourceType is how the repo-server rendered the source: Directory, Helm, Kustomize …
	SourceType string
	Resources  []Resource
	Operation  Operation
	// ReconciledAt is when the controller started its last full comparison (second precision);
	// zero before the first.
	ReconciledAt time.Time
	// Conditions are status.conditions as "Type: message" (ComparisonError, SyncError …).
	Conditions []string
}

// Status reads the Application's status.
func (a *App) Status(t testing.TB) Status {
	t.Helper()
	return ParseStatus(t, a.Get(t))
}

// ParseStatus extracts Status from an Application object.
func ParseStatus(t testing.TB, u *unstructured.Unstructured) Status {
	t.Helper()
	var raw struct {
		Operation map[string]any `json:"operation"`
		Status    struct {
			Sync struct {
				Status   string `json:"status"`
				Revision string `json:"revision"`
			} `json:"sync"`
			Health struct {
				Status string `json:"status"`
			} `json:"health"`
			SourceType   string     `json:"sourceType"`
			ReconciledAt *time.Time `json:"reconciledAt"`
			Conditions   []struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"conditions"`
			Resources      []Resource `json:"resources"`
			OperationState struct {
				Phase     string `json:"phase"`
				Message   string `json:"message"`
				StartedAt string `json:"startedAt"`
				Operation struct {
					InitiatedBy struct {
						Username string `json:"username"`
					} `json:"initiatedBy"`
				} `json:"operation"`
				SyncResult struct {
					Resources []OperationResult `json:"resources"`
				} `json:"syncResult"`
			} `json:"operationState"`
		} `json:"status"`
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	s := raw.Status
	var reconciled time.Time
	if s.ReconciledAt != nil {
		reconciled = *s.ReconciledAt
	}
	conditions := make([]string, 0, len(s.Conditions))
	for _, c := range s.Conditions {
		conditions = append(conditions, c.Type+": "+c.Message)
	}
	return Status{ReconciledAt: reconciled, Conditions: conditions,
		Requested: raw.Operation != nil,
		Sync:      s.Sync.Status, Revision: s.Sync.Revision, Health: s.Health.Status, SourceType: s.SourceType, Resources: s.Resources,
		Operation: Operation{Phase: s.OperationState.Phase, Message: s.OperationState.Message,
			StartedAt: s.OperationState.StartedAt, Initiator: s.OperationState.Operation.InitiatedBy.Username,
			Results: s.OperationState.SyncResult.Resources},
	}
}

// Idle reports that no operation is requested or running.
func (s Status) Idle() bool {
	return !s.Requested && s.Operation.Phase != "Running" && s.Operation.Phase != "Terminating"
}

// Find returns the status row for kind/name, if any.
func (s Status) Find(kind, name string) (Resource, bool) {
	for _, r := range s.Resources {
		if r.Kind == kind && r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}

func (s Status) String() string {
	rows := make([]string, 0, len(s.Resources))
	for _, r := range s.Resources {
		rows = append(rows, r.String())
	}
	out := fmt.Sprintf("sync=%s revision=%.8s source=%s operation=%s %q resources=[%s]",
		s.Sync, s.Revision, s.SourceType, s.Operation.Phase, s.Operation.Message, strings.Join(rows, "; "))
	if !s.ReconciledAt.IsZero() {
		out += " reconciledAt=" + s.ReconciledAt.UTC().Format(time.RFC3339)
	}
	if len(s.Conditions) > 0 {
		out += fmt.Sprintf(" conditions=%q", s.Conditions)
	}
	return out
}

// WaitStatus polls the Application until cond holds for its status.
func (a *App) WaitStatus(t testing.TB, timeout time.Duration, what string, cond func(Status) bool) Status {
	t.Helper()
	var s Status
	Eventually(t, timeout, a.Name+" "+what, func() (bool, string) {
		s = a.Status(t)
		return cond(s), s.String()
	})
	return s
}

// WaitSynced waits until the app is Synced at revision (any revision when empty).
func (a *App) WaitSynced(t testing.TB, revision string) Status {
	t.Helper()
	return a.WaitStatus(t, ControllerTimeout, "to be Synced at "+revision, func(s Status) bool {
		return s.Sync == "Synced" && (revision == "" || s.Revision == revision)
	})
}

// WaitRequiresPruning waits until the app is OutOfSync at revision with kind/name requiring pruning.
func (a *App) WaitRequiresPruning(t testing.TB, revision, kind, name string) Status {
	t.Helper()
	return a.WaitStatus(t, ControllerTimeout, fmt.Sprintf("to be OutOfSync with %s %s requiring pruning", kind, name), RequiresPruningAt(revision, kind, name))
}

// ControllerTimeout is how long the lab's tests wait for its Argo CD to act on an Application: a
// commit, a sync, a deletion. Under CI the controller and repo-server share two cores with every
// test running in parallel; a cold run saw a refresh of a new commit take longer than 90 s there,
// and twice the controller acted on an Application's change only when its periodic comparison came
// round (a deletion on 2026-12-06, a new commit at stop 46), 2 minutes after it: timeout.reconciliation
// (120 s) plus its jitter (up to 60 s: cmd/argocd-application-controller/commands/
// argocd_application_controller.go, defaultAppResyncPeriod and …Jitter), with a minute to spare.
const ControllerTimeout = 4 * time.Minute

// RequiresPruningAt holds when the app is OutOfSync at revision with kind/name requiring pruning.
func RequiresPruningAt(revision, kind, name string) func(Status) bool {
	return func(s Status) bool {
		r, ok := s.Find(kind, name)
		return s.Sync == "OutOfSync" && s.Revision == revision && ok && r.RequiresPruning
	}
}

// Incident reproduces the incident for a Namespace: commit its manifest, sync, revert, refresh. It
// returns the revert's SHA. The app must not prune automatically. The Namespace is created in the
// app's destination cluster (a.Cluster).
func (a *App) Incident(t testing.TB, namespace string, extraLabels map[string]string) string {
	t.Helper()
	labels := ""
	for _, k := range SortedKeys(extraLabels) {
		labels += fmt.Sprintf("    %s: %q\n", k, extraLabels[k])
	}
	if labels != "" {
		labels = "  labels:\n" + labels
	}
	a.Repo.Write(t, a.Path+"/namespace-"+namespace+".yaml",
		fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n%s", namespace, labels))
	added := a.Repo.Commit(t, "add namespace "+namespace)
	a.RefreshUntil(t, ControllerTimeout, "to see commit "+added, func(s Status) bool { return s.Revision == added })
	if op := a.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync of %s: %s %s", added, op.Phase, op.Message)
	}
	a.WaitSynced(t, added)
	reverted := a.Repo.Revert(t)
	a.RefreshUntil(t, ControllerTimeout, "to require pruning of Namespace "+namespace, RequiresPruningAt(reverted, "Namespace", namespace))
	return reverted
}
