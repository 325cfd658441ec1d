package cluster

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// app builds an Application object the way the dynamic client returns it.
func app(spec, status map[string]any, extra map[string]any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata": map[string]any{
			"namespace":       "argocd",
			"name":            "guestbook",
			"uid":             "uid-1",
			"resourceVersion": "123",
		},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	if status != nil {
		obj["status"] = status
	}
	for k, v := range extra {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

func baseSpec(syncPolicy any) map[string]any {
	spec := map[string]any{
		"project": "default",
		"destination": map[string]any{
			"server":    "https://kubernetes.default.svc",
			"namespace": "guestbook",
		},
		"source": map[string]any{"repoURL": "https://example.com/repo.git", "path": "guestbook", "targetRevision": "HEAD"},
	}
	if syncPolicy != nil {
		spec["syncPolicy"] = syncPolicy
	}
	return spec
}

func TestParseApplication(t *testing.T) {
	resources := []any{
		map[string]any{"version": "v1", "kind": "Service", "namespace": "guestbook", "name": "ui", "status": "Synced"},
		map[string]any{"version": "v1", "kind": "Namespace", "name": "team-a", "status": "OutOfSync", "requiresPruning": true},
		map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook", "name": "old", "status": "OutOfSync", "requiresPruning": true},
		map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook", "name": "ui", "status": "OutOfSync", "requiresPruning": false},
	}
	tests := []struct {
		name string
		u    *unstructured.Unstructured
		want Application
	}{
		{
			name: "automation switched off keeps its settings but does not prune",
			u: app(baseSpec(map[string]any{
				"automated": map[string]any{"enabled": false, "prune": true},
			}), map[string]any{"sync": map[string]any{"status": "Synced"}}, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", SyncStatus: "Synced",
			},
		},
		{
			name: "automated with prune",
			u: app(baseSpec(map[string]any{
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"CreateNamespace=true", "ServerSideApply=true"},
			}), map[string]any{
				"sync":      map[string]any{"status": "OutOfSync", "revision": "0123456789abcdef"},
				"resources": resources,
			}, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook",
				Automated: true, AutoPrune: true, SyncOptions: []string{"CreateNamespace=true", "ServerSideApply=true"},
				SyncStatus: "OutOfSync", Revision: "0123456789abcdef",
				Resources: []Resource{
					{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "ui", Status: "Synced"},
					{Version: "v1", Kind: "Namespace", Name: "team-a", Status: "OutOfSync", RequiresPruning: true},
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "old", Status: "OutOfSync", RequiresPruning: true},
					{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui", Status: "OutOfSync"},
				},
			},
		},
		{
			name: "automated without prune",
			u:    app(baseSpec(map[string]any{"automated": map[string]any{"selfHeal": true}}), nil, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", Automated: true,
			},
		},
		{
			name: "automated: {} means automated, no prune",
			u:    app(baseSpec(map[string]any{"automated": map[string]any{}}), nil, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", Automated: true,
			},
		},
		{
			name: "prune false explicitly",
			u:    app(baseSpec(map[string]any{"automated": map[string]any{"prune": false}}), nil, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", Automated: true,
			},
		},
		{
			name: "manual sync with sync options",
			u:    app(baseSpec(map[string]any{"syncOptions": []any{"Prune=false"}}), nil, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", SyncOptions: []string{"Prune=false"},
			},
		},
		{
			name: "no syncPolicy",
			u:    app(baseSpec(nil), map[string]any{"sync": map[string]any{"status": "Synced"}}, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", SyncStatus: "Synced",
			},
		},
		{
			name: "syncPolicy automated null",
			u:    app(baseSpec(map[string]any{"automated": nil}), nil, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook",
			},
		},
		{
			name: "operation requested",
			u: app(baseSpec(nil), nil, map[string]any{
				"operation": map[string]any{"sync": map[string]any{"revision": "HEAD"}, "initiatedBy": map[string]any{"username": "admin"}},
			}),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", Operation: true,
			},
		},
		{
			name: "operation null",
			u:    app(baseSpec(nil), nil, map[string]any{"operation": nil}),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook",
			},
		},
		{
			name: "operation state Running",
			u:    app(baseSpec(nil), map[string]any{"operationState": map[string]any{"phase": "Running"}}, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", OperationPhase: "Running", Operation: true,
			},
		},
		{
			name: "operation state Terminating",
			u:    app(baseSpec(nil), map[string]any{"operationState": map[string]any{"phase": "Terminating"}}, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", OperationPhase: "Terminating", Operation: true,
			},
		},
		{
			name: "last operation Succeeded",
			u:    app(baseSpec(nil), map[string]any{"operationState": map[string]any{"phase": "Succeeded"}}, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "default",
				DestServer: InClusterServer, DestNamespace: "guestbook", OperationPhase: "Succeeded",
			},
		},
		{
			name: "remote destination by name",
			u: app(map[string]any{
				"project":     "team",
				"destination": map[string]any{"name": "prod-eu", "namespace": "shop"},
			}, nil, nil),
			want: Application{
				Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123", Project: "team",
				DestName: "prod-eu", DestNamespace: "shop",
			},
		},
		{
			name: "no spec or status",
			u:    app(nil, nil, nil),
			want: Application{Namespace: "argocd", Name: "guestbook", UID: "uid-1", ResourceVersion: "123"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseApplication(tt.u)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseApplication =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestParseApplicationRejectsWrongTypes(t *testing.T) {
	u := app(map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"prune": "yes"}}}, nil, nil)
	_, err := ParseApplication(u)
	if err == nil {
		t.Fatal("ParseApplication accepted prune: \"yes\"")
	}
	if !strings.HasPrefix(err.Error(), "application argocd/guestbook: ") {
		t.Errorf("error %q does not name the application", err)
	}
}

func TestPruning(t *testing.T) {
	a := Application{Resources: []Resource{
		{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "ui"},
		{Version: "v1", Kind: "Namespace", Name: "team-a", RequiresPruning: true},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "old", RequiresPruning: true},
	}}
	var got []string
	for _, r := range a.Pruning() {
		got = append(got, r.String())
	}
	want := []string{"Namespace/team-a", "Deployment.apps/guestbook/old"}
	if !slices.Equal(got, want) {
		t.Errorf("Pruning = %q, want %q", got, want)
	}
	if p := (Application{}).Pruning(); p != nil {
		t.Errorf("Pruning of an app without resources = %v, want nil", p)
	}
}

func TestInCluster(t *testing.T) {
	tests := []struct {
		server, name string
		want         bool
	}{
		{server: "https://kubernetes.default.svc", want: true},
		{name: "in-cluster", want: true},
		{server: "", name: "", want: true},
		{server: "https://kubernetes.default.svc", name: "in-cluster", want: true},
		{server: "https://prod.example.com:6443", want: false},
		{name: "prod-eu", want: false},
		{server: "https://kubernetes.default.svc.cluster.local", want: false},
	}
	for _, tt := range tests {
		a := Application{DestServer: tt.server, DestName: tt.name}
		if got := a.InCluster(); got != tt.want {
			t.Errorf("InCluster(server %q, name %q) = %v, want %v", tt.server, tt.name, got, tt.want)
		}
	}
}

func TestResource(t *testing.T) {
	tests := []struct {
		r       Resource
		want    string
		wantGVK schema.GroupVersionKind
	}{
		{r: Resource{Version: "v1", Kind: "Namespace", Name: "team-a"}, want: "Namespace/team-a",
			wantGVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}},
		{r: Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"}, want: "ConfigMap/guestbook/settings",
			wantGVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}},
		{r: Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}, want: "Deployment.apps/guestbook/ui",
			wantGVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
		{r: Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "system:aggregate-to-admin"},
			want:    "ClusterRole.rbac.authorization.k8s.io/system:aggregate-to-admin",
			wantGVK: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
		if got := tt.r.GroupVersionKind(); got != tt.wantGVK {
			t.Errorf("GroupVersionKind() of %s = %v, want %v", tt.want, got, tt.wantGVK)
		}
	}
}

func TestRef(t *testing.T) {
	if got := (Application{Namespace: "team-a", Name: "guestbook"}).Ref(); got != "team-a/guestbook" {
		t.Errorf("Ref() = %q", got)
	}
}

func TestParseApplicationRefreshPending(t *testing.T) {
	u := app(baseSpec(nil), nil, nil)
	a, err := ParseApplication(u)
	if err != nil || a.RefreshPending {
		t.Fatalf("no annotation: RefreshPending %t, err %v", a.RefreshPending, err)
	}
	u.SetAnnotations(map[string]string{"argocd.argoproj.io/refresh": "normal"})
	if a, err = ParseApplication(u); err != nil || !a.RefreshPending {
		t.Fatalf("refresh annotation: RefreshPending %t, err %v", a.RefreshPending, err)
	}
}
