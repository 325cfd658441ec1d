package kube

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"

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
