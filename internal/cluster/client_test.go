package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/unprune/unprune/internal/argocd"
)

func TestExplain(t *testing.T) {
	gr := schema.GroupResource{Group: "argoproj.io", Resource: "applications"}
	forbidden := apierrors.NewForbidden(gr, "", errors.New("no"))
	notFound := apierrors.NewNotFound(gr, "guestbook")
	other := errors.New("connection refused")

	tests := []struct {
		name       string
		err        error
		scope      string
		wantPrefix string
	}{
		{name: "forbidden with scope", err: forbidden, scope: "all namespaces",
			wantPrefix: "list Argo CD Applications: forbidden in all namespaces; your user needs RBAC permission for this (check with `kubectl auth can-i`): "},
		{name: "forbidden without scope", err: forbidden,
			wantPrefix: "list Argo CD Applications: forbidden; your user needs RBAC permission"},
		{name: "not found", err: notFound, wantPrefix: "list Argo CD Applications: not found: "},
		{name: "other", err: other, wantPrefix: "list Argo CD Applications: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explain(tt.err, "list Argo CD Applications", tt.scope)
			if !strings.HasPrefix(got.Error(), tt.wantPrefix) {
				t.Errorf("explain = %q, want prefix %q", got, tt.wantPrefix)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("explain does not wrap the cause")
			}
		})
	}
}

func TestIsForbidden(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	forbidden := apierrors.NewForbidden(gr, "argocd-cm", errors.New("no"))
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "forbidden", err: forbidden, want: true},
		{name: "wrapped by explain", err: explain(forbidden, "get ConfigMap/argocd/argocd-cm", ""), want: true},
		{name: "wrapped twice", err: fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", forbidden)), want: true},
		{name: "not found", err: apierrors.NewNotFound(gr, "argocd-cm")},
		{name: "plain", err: errors.New("forbidden")},
		{name: "nil", err: nil},
	}
	for _, tt := range tests {
		if got := IsForbidden(tt.err); got != tt.want {
			t.Errorf("IsForbidden(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestShortErr(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
	if got := shortErr(forbidden); got != "Forbidden" {
		t.Errorf("shortErr(forbidden) = %q, want Forbidden", got)
	}
	if got := shortErr(errors.New("dial tcp: timeout")); got != "dial tcp: timeout" {
		t.Errorf("shortErr(plain) = %q", got)
	}
}

func TestNamespaceScopeAndPageSize(t *testing.T) {
	if got := namespaceScope(""); got != "all namespaces" {
		t.Errorf("namespaceScope(\"\") = %q", got)
	}
	if got := namespaceScope("argocd"); got != "namespace argocd" {
		t.Errorf("namespaceScope(argocd) = %q", got)
	}
	if got := (&Client{}).pageSize(); got != 500 {
		t.Errorf("default page size = %d, want 500", got)
	}
	if got := (&Client{PageSize: 20}).pageSize(); got != 20 {
		t.Errorf("page size = %d, want 20", got)
	}
}

func obj(apiVersion, kind, namespace, name string, labels map[string]string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func fakeClient(objects ...runtime.Object) *Client {
	listKinds := map[schema.GroupVersionResource]string{
		gvrConfigMap:   "ConfigMapList",
		gvrStatefulSet: "StatefulSetList",
		gvrDeployment:  "DeploymentList",
		GVRApplication: "ApplicationList",
	}
	return &Client{Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objects...)}
}

func argocdCM(namespace string, data map[string]any) *unstructured.Unstructured {
	fields := map[string]any{}
	if data != nil {
		fields["data"] = data
	}
	return obj("v1", "ConfigMap", namespace, argocd.ConfigMapName,
		map[string]string{"app.kubernetes.io/part-of": "argocd", "app.kubernetes.io/name": "argocd-cm"}, fields)
}

func controller(kind, namespace, image string, labels map[string]string) *unstructured.Unstructured {
	l := map[string]string{"app.kubernetes.io/name": "argocd-application-controller"}
	for k, v := range labels {
		l[k] = v
	}
	return obj("apps/v1", kind, namespace, "argocd-application-controller", l, map[string]any{
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "controller", "image": image}},
		}}},
	})
}

func TestFindArgoCDNamespace(t *testing.T) {
	tests := []struct {
		name     string
		objects  []runtime.Object
		wantNS   string
		wantNote string // substring; empty: no note
	}{
		{name: "none found: fallback", wantNS: "argocd"},
		{name: "one found", objects: []runtime.Object{argocdCM("gitops", nil)}, wantNS: "gitops"},
		{
			name:    "a ConfigMap with the labels but another name does not count",
			objects: []runtime.Object{obj("v1", "ConfigMap", "gitops", "argocd-cmd-params-cm", map[string]string{"app.kubernetes.io/part-of": "argocd", "app.kubernetes.io/name": "argocd-cm"}, nil)},
			wantNS:  "argocd",
		},
		{
			name:    "argocd-cm without the labels is not found",
			objects: []runtime.Object{obj("v1", "ConfigMap", "gitops", argocd.ConfigMapName, nil, nil)},
			wantNS:  "argocd",
		},
		{
			name:     "several: the fallback wins",
			objects:  []runtime.Object{argocdCM("gitops", nil), argocdCM("argocd", nil)},
			wantNS:   "argocd",
			wantNote: `several Argo CD installations found (`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, note := fakeClient(tt.objects...).FindArgoCDNamespace(context.Background(), "argocd")
			if ns != tt.wantNS {
				t.Errorf("namespace = %q, want %q", ns, tt.wantNS)
			}
			if tt.wantNote == "" && note != "" || !strings.Contains(note, tt.wantNote) {
				t.Errorf("note = %q, want %q", note, tt.wantNote)
			}
		})
	}
}

func TestDetectVersion(t *testing.T) {
	tests := []struct {
		name    string
		objects []runtime.Object
		want    string // empty: unknown
	}{
		{name: "nothing deployed"},
		{name: "statefulset image tag", objects: []runtime.Object{controller("StatefulSet", "argocd", "quay.io/argoproj/argocd:v3.6.1", nil)}, want: "v3.6.1"},
		{name: "deployment image tag", objects: []runtime.Object{controller("Deployment", "argocd", "quay.io/argoproj/argocd:v2.14.11", nil)}, want: "v2.14.11"},
		{
			name:    "digest-only image falls back to the version label",
			objects: []runtime.Object{controller("StatefulSet", "argocd", "quay.io/argoproj/argocd@sha256:abc", map[string]string{argocd.LabelVersion: "v3.1.2"})},
			want:    "v3.1.2",
		},
		{name: "latest tag and no label: unknown", objects: []runtime.Object{controller("StatefulSet", "argocd", "quay.io/argoproj/argocd:latest", nil)}},
		{name: "another namespace is not looked at", objects: []runtime.Object{controller("StatefulSet", "other", "quay.io/argoproj/argocd:v3.6.1", nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := fakeClient(tt.objects...).DetectVersion(context.Background(), "argocd")
			got := ""
			if v != nil {
				got = v.String()
			}
			if got != tt.want {
				t.Errorf("DetectVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	c := fakeClient(
		argocdCM("argocd", map[string]any{
			argocd.SettingTrackingMethod:   "annotation+label",
			argocd.SettingInstanceLabelKey: "argocd.argoproj.io/instance",
			argocd.SettingInstallationID:   "prod",
		}),
		controller("StatefulSet", "argocd", "quay.io/argoproj/argocd:v3.6.1", nil),
	)
	s, err := c.Settings(context.Background(), "argocd", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Method != argocd.MethodAnnotationAndLabel || s.InstanceLabelKey != "argocd.argoproj.io/instance" || s.InstallationID != "prod" {
		t.Errorf("settings = %+v", s)
	}
	if s.Version == nil || s.Version.String() != "v3.6.1" {
		t.Errorf("version = %v, want v3.6.1", s.Version)
	}

	// A version the user gives wins over detection.
	s, err = c.Settings(context.Background(), "argocd", &argocd.Version{Major: 2, Minor: 14, Patch: 11})
	if err != nil {
		t.Fatal(err)
	}
	if s.Version == nil || s.Version.String() != "v2.14.11" {
		t.Errorf("version = %v, want v2.14.11", s.Version)
	}

	// No data, no controller: ambiguous.
	s, err = fakeClient(argocdCM("argocd", nil)).Settings(context.Background(), "argocd", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Ambiguous || s.InstanceLabelKey != argocd.DefaultInstanceLabelKey {
		t.Errorf("settings without data = %+v, want ambiguous with the default label key", s)
	}

	// No argocd-cm: a helpful error.
	_, err = fakeClient().Settings(context.Background(), "argocd", nil)
	if err == nil || !strings.Contains(err.Error(), "no ConfigMap argocd-cm in namespace argocd") {
		t.Errorf("error = %v, want one naming the missing ConfigMap", err)
	}
}
