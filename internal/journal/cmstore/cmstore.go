// Package cmstore keeps journals in ConfigMaps: where the backend of unprune's Argo CD UI
// extension records the releases made in the UI, and where `unprune undo --journal-dir
// configmaps:NAMESPACE` (and the UI) read them back.
//
// # The contract (unprune.dev/v1alpha2 journals)
//
// One ConfigMap per journal, in one namespace:
//
//	metadata.name:                       unprune-journal-<the journal's ID, lower case>
//	metadata.labels:                     unprune.dev/journal: v1alpha2
//	                                     app.kubernetes.io/managed-by: unprune
//	metadata.annotations:                unprune.dev/journal-id: <the journal's ID>
//	                                     unprune.dev/requested-by: <who asked, as Argo CD named them> (optional)
//	data["journal.json"]:                exactly the bytes of the journal file the file store writes —
//	                                     the Journal document, then one JSON record per line appended
//
// Every write is conditional on the resourceVersion read, so two writers (the UI and an undo run)
// never lose each other's records: a conflict re-reads and appends again. Nothing is ever deleted.
//
// # Trust
//
// A journal tells undo what to write back. The file store refuses files others could write; here
// the boundary is the namespace's RBAC: whoever may create or update ConfigMaps there may write
// journals. Keep the namespace to the backend's ServiceAccount and the operators (deploy/ gives the
// backend its own). Undo's own checks hold as for files: tracking restored only for the entry's own
// app and object, the object's UID, the values unprune left.
package cmstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/unprune/unprune/internal/journal"
)

// The ConfigMaps' names, labels, annotations and data key: the contract above.
const (
	NamePrefix            = "unprune-journal-"
	LabelJournal          = "unprune.dev/journal"
	LabelManagedBy        = "app.kubernetes.io/managed-by"
	AnnotationID          = "unprune.dev/journal-id"
	AnnotationRequestedBy = "unprune.dev/requested-by"
	DataKey               = "journal.json"
	// Scheme starts a --journal-dir value naming this store: configmaps:NAMESPACE.
	Scheme = "configmaps:"
	// pathPrefix starts the path of a journal: configmap/NAMESPACE/NAME, as kubectl names it.
	pathPrefix = "configmap/"
)

// Store is a journal.Backing on the ConfigMaps of one namespace.
type Store struct {
	Client    kubernetes.Interface
	Namespace string
	// RequestedBy, when set, is recorded on the journals this Store creates.
	RequestedBy string
	// FieldManager names the writes; empty means "unprune".
	FieldManager string
}

var (
	_ journal.Backing    = (*Store)(nil)
	_ journal.BulkReader = (*Store)(nil)
)

// New returns the ConfigMap store of namespace.
func New(client kubernetes.Interface, namespace string) *Store {
	return &Store{Client: client, Namespace: namespace}
}

// Namespace returns the namespace a --journal-dir value names, and whether it names this store.
func Namespace(journalDir string) (string, bool) {
	ns, ok := strings.CutPrefix(journalDir, Scheme)
	return ns, ok
}

// Name is the ConfigMap of the journal with this ID.
func Name(id string) string { return NamePrefix + strings.ToLower(id) }

// Where describes the store.
func (s *Store) Where() string { return "ConfigMaps in namespace " + s.Namespace }

// Path is configmap/NAMESPACE/NAME.
func (s *Store) Path(id string) string { return pathPrefix + s.Namespace + "/" + Name(id) }

// name resolves a path, a ConfigMap name or a journal ID to the ConfigMap's name; a path naming
// another namespace is refused rather than read from this one.
func (s *Store) name(path string) (string, error) {
	if rest, ok := strings.CutPrefix(path, pathPrefix); ok {
		ns, name, found := strings.Cut(rest, "/")
		if !found || ns != s.Namespace {
			return "", fmt.Errorf("%s is not a journal of %s", path, s.Where())
		}
		return name, nil
	}
	if strings.HasPrefix(path, NamePrefix) {
		return path, nil
	}
	return Name(path), nil
}

func (s *Store) fieldManager() string {
	if s.FieldManager != "" {
		return s.FieldManager
	}
	return "unprune"
}

// Create creates the ConfigMap; an existing one is fs.ErrExist.
func (s *Store) Create(ctx context.Context, path string, data []byte) error {
	name, err := s.name(path)
	if err != nil {
		return err
	}
	id, err := idOf(data)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.Namespace,
			Labels:      map[string]string{LabelJournal: journal.Version, LabelManagedBy: "unprune"},
			Annotations: map[string]string{AnnotationID: id},
		},
		Data: map[string]string{DataKey: string(data)},
	}
	if s.RequestedBy != "" {
		cm.Annotations[AnnotationRequestedBy] = s.RequestedBy
	}
	_, err = s.Client.CoreV1().ConfigMaps(s.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: s.fieldManager()})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ConfigMap %s/%s: %w (refusing to overwrite)", s.Namespace, name, fs.ErrExist)
	}
	return err
}

// idOf reads the ID out of a journal document, for the annotation.
func idOf(data []byte) (string, error) {
	var head struct {
		ID string `json:"id"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&head); err != nil || head.ID == "" {
		return "", fmt.Errorf("not a journal document: %v", err)
	}
	return head.ID, nil
}

// Read returns the journal's bytes and its path.
func (s *Store) Read(ctx context.Context, path string) ([]byte, string, error) {
	name, err := s.name(path)
	if err != nil {
		return nil, "", err
	}
	cm, err := s.get(ctx, name)
	if err != nil {
		return nil, "", err
	}
	return []byte(cm.Data[DataKey]), pathPrefix + s.Namespace + "/" + name, nil
}

func (s *Store) get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("no journal %s in namespace %s: %w", name, s.Namespace, fs.ErrNotExist)
	case err != nil:
		return nil, err
	case cm.Labels[LabelJournal] == "":
		return nil, fmt.Errorf("ConfigMap %s/%s is not a journal (no label %s)", s.Namespace, name, LabelJournal)
	}
	return cm, nil
}

// Append adds records, re-reading and appending again when someone wrote the ConfigMap meanwhile.
func (s *Store) Append(ctx context.Context, path string, records []byte) error {
	return s.update(ctx, path, func(old string) string {
		if old != "" && !strings.HasSuffix(old, "\n") {
			// A document always ends in a newline; keep records on lines of their own.
			old += "\n"
		}
		return old + string(records)
	})
}

// Replace stores the compacted document in place of the document and its records, when they say
// the same; when another writer appended a record this one does not know, the stored bytes are
// kept as they are (a journal with records appended is as good as a compacted one, and no record
// is lost).
func (s *Store) Replace(ctx context.Context, path string, data []byte) error {
	want, _, err := journal.Decode(path, data)
	if err != nil {
		return err
	}
	return s.update(ctx, path, func(old string) string {
		have, _, err := journal.Decode(path, []byte(old))
		if err != nil || !reflect.DeepEqual(have, want) {
			return old
		}
		return string(data)
	})
}

func (s *Store) update(ctx context.Context, path string, change func(old string) string) error {
	name, err := s.name(path)
	if err != nil {
		return err
	}
	// A conflict means another writer appended meanwhile: read again and apply the change to what
	// is there now, which never loses a record; only the wait between attempts grows.
	return retry.RetryOnConflict(conflictBackoff, func() error {
		cm, err := s.get(ctx, name)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		next := change(cm.Data[DataKey])
		if next == cm.Data[DataKey] {
			return nil
		}
		cm.Data[DataKey] = next
		_, err = s.Client.CoreV1().ConfigMaps(s.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: s.fieldManager()})
		return err
	})
}

// conflictBackoff bounds the retries of a write that keeps meeting other writers (13–20 s in
// all): journals of one release have few writers, and each retry is safe.
var conflictBackoff = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Steps: 16}

// List returns the path of every journal ConfigMap, by name.
func (s *Store) List(ctx context.Context) ([]string, error) {
	var out []string
	opts := metav1.ListOptions{LabelSelector: LabelJournal, Limit: 500}
	for {
		list, err := s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, cm := range list.Items {
			out = append(out, pathPrefix+s.Namespace+"/"+cm.Name)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Strings(out)
	return out, nil
}

// ReadAll returns every journal, read by one paginated LIST: listing the journals (the UI's flyout,
// the backend's bound on them, undo --list) costs one request per 500, not one per journal.
func (s *Store) ReadAll(ctx context.Context) ([]journal.Stored, error) {
	var out []journal.Stored
	opts := metav1.ListOptions{LabelSelector: LabelJournal, Limit: 500}
	for {
		list, err := s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, cm := range list.Items {
			if cm.Labels[LabelJournal] == "" {
				continue // as get refuses it: not a journal
			}
			out = append(out, journal.Stored{Path: pathPrefix + s.Namespace + "/" + cm.Name, Data: []byte(cm.Data[DataKey])})
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out, nil
}

// IsNotFound reports a journal that does not exist.
func IsNotFound(err error) bool { return errors.Is(err, fs.ErrNotExist) }
