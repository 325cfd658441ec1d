package kube

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/unprune/unprune/internal/argocd"
)

// TestRefreshKeepsAPendingHardRefresh: the refresh is asked for through the metadata client, a
// pending hard refresh on the live app is kept though the caller's copy says none, and a normal one
// is asked for otherwise.
func TestRefreshKeepsAPendingHardRefresh(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	app := func(name string, annotations map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name, Annotations: annotations},
		}
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, app("idle", nil), app("pending", map[string]string{argocd.AnnotationRefresh: "hard"}))
	a := &ArgoCD{Objects: &Objects{Clients: &Clients{Metadata: meta}}, Ns: "argocd"}
	for name, want := range map[string]string{"idle": "normal", "pending": "hard"} {
		if err := a.Refresh(context.Background(), argocd.Application{Namespace: "argocd", Name: name}, false); err != nil {
			t.Fatal(err)
		}
		got, err := meta.Resource(GVRApplication).Namespace("argocd").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Annotations[argocd.AnnotationRefresh] != want {
			t.Errorf("%s: refresh %q, want %q", name, got.Annotations[argocd.AnnotationRefresh], want)
		}
	}
}

// TestRefreshRenewsAPendingRequest: a request already pending is renewed by a patch that changes
// the object — a new refresh-timestamp from v3.6; before, the pending one taken off and set again —
// since a patch that changes nothing sends the controller no event.
func TestRefreshRenewsAPendingRequest(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version *argocd.Version
		patches int
	}{{&argocd.Version{Major: 3, Minor: 5, Patch: 1}, 2}, {nil, 2}, {&argocd.Version{Major: 3, Minor: 6, Patch: 1}, 1}} {
		pending := &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "web", Annotations: map[string]string{argocd.AnnotationRefresh: "normal"}},
		}
		meta := metadatafake.NewSimpleMetadataClient(scheme, pending)
		a := &ArgoCD{Objects: &Objects{Clients: &Clients{Metadata: meta}}, Ns: "argocd", version: tc.version}
		if err := a.Refresh(context.Background(), argocd.Application{Namespace: "argocd", Name: "web", Refresh: "normal"}, false); err != nil {
			t.Fatal(err)
		}
		var patches []string
		for _, act := range meta.Actions() {
			if p, ok := act.(clienttesting.PatchAction); ok {
				patches = append(patches, string(p.GetPatch()))
			}
		}
		got, err := meta.Resource(GVRApplication).Namespace("argocd").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(patches) != tc.patches || got.Annotations[argocd.AnnotationRefresh] != "normal" ||
			(tc.patches == 2 && !strings.Contains(patches[0], `"argocd.argoproj.io/refresh":null`)) ||
			(tc.patches == 1 && got.Annotations[argocd.AnnotationRefreshTimestamp] == "") {
			t.Errorf("%v: patches %q, annotations %v", tc.version, patches, got.Annotations)
		}
	}
}
