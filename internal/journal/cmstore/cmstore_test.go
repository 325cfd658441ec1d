package cmstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

var t0 = time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)

func testJournal() *journal.Journal {
	j := journal.New("detach", "untrack", "v0.0.0-test")
	j.ArgoCD = &journal.ArgoCDRef{Namespace: "argocd", TrackingMethod: "annotation"}
	name := j.AddCluster(cluster.Info{Name: "in-cluster", Server: "https://127.0.0.1:6443", Via: cluster.ViaKubeconfig})
	j.Entries = append(j.Entries, journal.Entry{
		Cluster:     name,
		Application: &journal.AppRef{Namespace: "argocd", Name: "guestbook", Instance: "guestbook"},
		Object:      journal.ObjectRef{Version: "v1", Resource: "namespaces", Kind: "Namespace", Name: "team-a", UID: "uid-1", ResourceVersion: "10"},
		Changes:     []journal.Change{journal.Removal(journal.FieldAnnotation, "argocd.argoproj.io/tracking-id", "guestbook:/Namespace:argocd/team-a")},
	})
	return j
}

// A journal kept in a ConfigMap goes through the life of a file journal: created planned, marked,
// compacted, listed and read back by ID, name or path.
func TestJournalInConfigMap(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	cms := New(client, "argocd")
	cms.RequestedBy = "admin"
	store := journal.NewBackedStore(cms, func() time.Time { return t0 })
	store.Rand = bytes.NewReader([]byte{0xab, 0xcd})
	rec, err := store.Create(testJournal())
	if err != nil {
		t.Fatal(err)
	}
	id := rec.Snapshot().ID
	if want := "configmap/argocd/unprune-journal-" + strings.ToLower(id); rec.Path() != want {
		t.Fatalf("path %q, want %q", rec.Path(), want)
	}
	cm, err := client.CoreV1().ConfigMaps("argocd").Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[LabelJournal] != journal.Version || cm.Annotations[AnnotationID] != id || cm.Annotations[AnnotationRequestedBy] != "admin" {
		t.Fatalf("metadata: %v %v", cm.Labels, cm.Annotations)
	}
	if !strings.Contains(cm.Data[DataKey], `"state":"planned"`) {
		t.Fatalf("the entry is not planned before the patch:\n%s", cm.Data[DataKey])
	}
	if err := rec.MarkApplied(0, "11"); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sync(); err != nil {
		t.Fatal(err)
	}
	cm, _ = client.CoreV1().ConfigMaps("argocd").Get(ctx, Name(id), metav1.GetOptions{})
	if !strings.Contains(cm.Data[DataKey], "\n{\"entry\":0,\"state\":\"applied\"") {
		t.Fatalf("the mark is not appended:\n%s", cm.Data[DataKey])
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{id, Name(id), rec.Path()} {
		j, torn, err := store.Load(name)
		if err != nil || torn {
			t.Fatalf("load %s: %v %v", name, err, torn)
		}
		if j.Entries[0].State != journal.StateApplied || j.Entries[0].AppliedResourceVersion != "11" {
			t.Fatalf("load %s: %+v", name, j.Entries[0])
		}
	}
	cm, _ = client.CoreV1().ConfigMaps("argocd").Get(ctx, Name(id), metav1.GetOptions{})
	if strings.Contains(cm.Data[DataKey], "\n{\"entry\":") {
		t.Fatalf("not compacted:\n%s", cm.Data[DataKey])
	}
	latest, err := store.Latest()
	if err != nil || latest != rec.Path() {
		t.Fatalf("latest %q %v", latest, err)
	}
	// An undo opens it again and marks it undone, as it does a file.
	undo, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := undo.MarkUndone(0); err != nil {
		t.Fatal(err)
	}
	if err := undo.Close(); err != nil {
		t.Fatal(err)
	}
	sums, err := store.List()
	if err != nil || len(sums) != 1 || sums[0].Undone != 1 {
		t.Fatalf("list: %+v %v", sums, err)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	cms := New(client, "argocd")
	if _, _, err := cms.Read(ctx, "configmap/kube-system/unprune-journal-x"); err == nil || !strings.Contains(err.Error(), "not a journal of ConfigMaps in namespace argocd") {
		t.Fatalf("another namespace's path: %v", err)
	}
	if _, _, err := cms.Read(ctx, "20261201t220000z-detach-x-abcd"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing journal: %v", err)
	}
	data, _ := journal.Encode(func() *journal.Journal { j := testJournal(); j.ID = "x"; return j }())
	if err := cms.Create(ctx, "x", data); err != nil {
		t.Fatal(err)
	}
	if err := cms.Create(ctx, "x", data); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v", err)
	}
	// A ConfigMap without the journal label is not read as one.
	cm, _ := client.CoreV1().ConfigMaps("argocd").Get(ctx, Name("x"), metav1.GetOptions{})
	delete(cm.Labels, LabelJournal)
	if _, err := client.CoreV1().ConfigMaps("argocd").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cms.Read(ctx, "x"); err == nil || !strings.Contains(err.Error(), "is not a journal") {
		t.Fatalf("unlabelled: %v", err)
	}
}

func TestNamespaceOfJournalDir(t *testing.T) {
	if ns, ok := Namespace("configmaps:argocd"); !ok || ns != "argocd" {
		t.Fatalf("%q %v", ns, ok)
	}
	if _, ok := Namespace("/home/me/journal"); ok {
		t.Fatal("a directory is not the ConfigMap store")
	}
}

// Listing the journals reads them all with one LIST (a page of 500), not a GET each: the UI's
// flyout and the backend's bound on journals list them on every release.
func TestListReadsAllInOneRequest(t *testing.T) {
	client := fake.NewClientset()
	store := journal.NewBackedStore(New(client, "unprune"), func() time.Time { return t0 })
	store.Rand = bytes.NewReader([]byte{1, 2, 3, 4, 5, 6})
	for range 3 {
		rec, err := store.Create(testJournal())
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	sums, err := store.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 3 || sums[0].Err != nil || len(sums[0].Applications) != 1 || sums[0].Applications[0].Name != "guestbook" {
		t.Fatalf("summaries %+v", sums)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if strings.Join(verbs, ",") != "list" {
		t.Errorf("requests %v, want one list", verbs)
	}
}
