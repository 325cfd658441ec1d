package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// remotePrefix names the remote cluster's processes (remote-etcd, remote-kube-apiserver, …).
const remotePrefix = "remote-"

// RemoteServiceCIDR is the remote cluster's service range; the lab's own cluster uses 10.0.0.0/24.
const RemoteServiceCIDR = "10.1.0.0/24"

// Remote is a second control plane (etcd, kube-apiserver, kube-controller-manager) that Argo CD
// installations of the lab deploy to, as production Argo CD deploys from a management cluster to
// others. Its files live in <lab dir>/remote; its processes are recorded with the lab's, so
// Down stops them.
type Remote struct {
	Dir    string `json:"dir"`
	Server string `json:"server"`
	// Kubeconfig is the remote's admin (a token user in system:masters); NoAccessKubeconfig a user
	// with no RBAC rights in the remote.
	Kubeconfig         string    `json:"kubeconfig"`
	NoAccessKubeconfig string    `json:"noAccessKubeconfig"`
	CAFile             string    `json:"caFile"`
	EtcdPort           int       `json:"etcdPort"`
	APIServerPort      int       `json:"apiServerPort"`
	KCMPort            int       `json:"kcmPort"`
	ServiceCIDR        string    `json:"serviceCIDR"`
	StartedAt          time.Time `json:"startedAt"`
	// Registrations are the Argo CD installations the remote is registered with.
	Registrations []Registration `json:"registrations,omitempty"`
}

// Registration is the remote registered with one Argo CD installation under a cluster name.
type Registration struct {
	Namespace string `json:"namespace"` // the installation's namespace
	Name      string `json:"name"`      // the cluster's name in Argo CD (spec.destination.name)
	Secret    string `json:"secret"`    // the cluster Secret in the installation's namespace
}

// RESTConfig is the remote admin's client configuration.
func (r *Remote) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", r.Kubeconfig)
}

func (r *Remote) processes() []string {
	return []string{remotePrefix + "etcd", remotePrefix + "kube-apiserver", remotePrefix + "kube-controller-manager"}
}

// AddRemote starts the remote cluster, or returns the running one: one remote per state directory.
// The remote always runs kube-controller-manager: it fills service-account token Secrets (the
// credential Argo CD is given) and finishes namespace deletions.
func (s *State) AddRemote(ctx context.Context, root string) (*Remote, error) {
	if s.Remote != nil {
		alive := true
		for _, n := range s.Remote.processes() {
			alive = alive && runningPID(s.Dir, n) != 0
		}
		if alive {
			return s.Remote, nil
		}
	}
	// A remote that died (or half started) is disposable: stop what is left and start afresh.
	r := &Remote{Dir: filepath.Join(s.Dir, "remote"), ServiceCIDR: RemoteServiceCIDR, StartedAt: time.Now().UTC()}
	for _, n := range r.processes() {
		if err := stopProcess(s.Dir, n, 15*time.Second); err != nil {
			return nil, err
		}
	}
	s.Remote = nil
	if err := os.RemoveAll(r.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, err
	}
	bins, err := Build(ctx, root, "etcd", "kubernetes")
	if err != nil {
		return nil, err
	}
	c, err := startCluster(ctx, s, bins, clusterSpec{prefix: remotePrefix, name: "remote", dir: r.Dir, serviceCIDR: r.ServiceCIDR, kcm: true})
	if err != nil {
		for _, n := range r.processes() {
			_ = stopProcess(s.Dir, n, 15*time.Second)
		}
		return nil, fmt.Errorf("remote cluster: %w", err)
	}
	r.Server, r.Kubeconfig, r.NoAccessKubeconfig, r.CAFile = c.Server, c.Kubeconfig, c.NoAccessKubeconfig, c.CAFile
	r.EtcdPort, r.APIServerPort, r.KCMPort = c.EtcdPort, c.APIServerPort, c.KCMPort
	s.Remote = r
	return r, s.save()
}

// The remote's credential for Argo CD, as `argocd cluster add` creates it: a ServiceAccount in
// kube-system bound to cluster-admin, and a long-lived token Secret for it.
const (
	remoteManagerAccount = "argocd-manager"
	remoteManagerSecret  = "argocd-manager-long-lived-token"
	remoteManagerBinding = "argocd-manager-role-binding"
)

// RegisterRemote registers the running remote with the Argo CD installation in namespace under the
// cluster name, as Argo CD expects a cluster (util/db/cluster.go): a Secret labelled
// argocd.argoproj.io/secret-type=cluster with name, server and config ({"bearerToken": …,
// "tlsClientConfig": {"caData": …}}). Apps then reach the remote by spec.destination.server
// (Remote.Server) or spec.destination.name (name). Registering again is harmless.
func (s *State) RegisterRemote(ctx context.Context, namespace, name string) (Registration, error) {
	if s.Remote == nil {
		return Registration{}, fmt.Errorf("no remote cluster: call AddRemote first")
	}
	known := false
	for _, a := range s.ArgoCD {
		known = known || a.Config.Namespace == namespace
	}
	if !known {
		return Registration{}, fmt.Errorf("no Argo CD installation in namespace %s", namespace)
	}
	token, err := remoteManagerToken(ctx, s.Remote)
	if err != nil {
		return Registration{}, fmt.Errorf("remote cluster: %w", err)
	}
	ca, err := os.ReadFile(s.Remote.CAFile)
	if err != nil {
		return Registration{}, err
	}
	// json.Marshal encodes []byte in base64, which is how Argo CD's TLSClientConfig.CAData reads.
	config, err := json.Marshal(map[string]any{
		"bearerToken":     token,
		"tlsClientConfig": map[string]any{"insecure": false, "caData": ca},
	})
	if err != nil {
		return Registration{}, err
	}
	reg := Registration{Namespace: namespace, Name: name, Secret: "cluster-" + name}
	dyn, err := s.Dynamic()
	if err != nil {
		return Registration{}, err
	}
	secret := map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{
			"name": reg.Secret, "namespace": namespace,
			"labels": map[string]any{"argocd.argoproj.io/secret-type": "cluster"},
		},
		"stringData": map[string]any{"name": name, "server": s.Remote.Server, "config": string(config)},
	}
	if err := apply(ctx, dyn, gvrSecret, secret); err != nil {
		return Registration{}, err
	}
	if !slices.Contains(s.Remote.Registrations, reg) {
		s.Remote.Registrations = append(s.Remote.Registrations, reg)
	}
	return reg, s.save()
}

// remoteManagerToken creates (or finds) the argocd-manager ServiceAccount, its cluster-admin binding
// and its token Secret in the remote, and returns the token once the remote's controller manager
// has filled it in.
func remoteManagerToken(ctx context.Context, r *Remote) (string, error) {
	cfg, err := r.RESTConfig()
	if err != nil {
		return "", err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	if err := bindServiceAccount(ctx, dyn, "kube-system", remoteManagerAccount, remoteManagerBinding, "cluster-admin"); err != nil {
		return "", err
	}
	if err := apply(ctx, dyn, gvrSecret, map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": string(corev1.SecretTypeServiceAccountToken),
		"metadata": map[string]any{
			"name": remoteManagerSecret, "namespace": "kube-system",
			"annotations": map[string]any{corev1.ServiceAccountNameKey: remoteManagerAccount},
		},
	}); err != nil {
		return "", err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		sec, err := kube.CoreV1().Secrets("kube-system").Get(ctx, remoteManagerSecret, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
		if err == nil && len(sec.Data[corev1.ServiceAccountTokenKey]) > 0 {
			return strings.TrimSpace(string(sec.Data[corev1.ServiceAccountTokenKey])), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the token of ServiceAccount kube-system/%s was not filled in within 60s (is %skube-controller-manager running?)", remoteManagerAccount, remotePrefix)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
