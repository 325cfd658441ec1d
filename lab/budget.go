package lab

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// BudgetAccount is the ServiceAccount deploy/base runs the watch as.
const BudgetAccount = "unprune-watch"

var (
	gvrRole                  = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	gvrRoleBinding           = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	gvrValidatingWebhookConf = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// Budget is the deletion budget's webhook of an installation, when Config.DeletionBudget.
type Budget struct {
	// Webhook is the ValidatingWebhookConfiguration the lab registered.
	Webhook string `json:"webhook"`
	// URL is where the API server reaches it; MetricsURL the watch's /metrics.
	URL        string `json:"url"`
	MetricsURL string `json:"metricsURL"`
}

// startDeletionBudget runs `unprune watch --deletion-budget=N` as deploy/components/deletion-budget
// does in a pod: as deploy/base's ServiceAccount with its roles, serving the webhook over TLS — here
// on 127.0.0.1 with a certificate the lab makes instead of cert-manager's — and registers the
// component's ValidatingWebhookConfiguration with a url instead of the Service. Everything else is
// the shipped configuration: failurePolicy Fail, matchConditions on the installation's controller.
func startDeletionBudget(ctx context.Context, st *State, a *ArgoCD, home string) error {
	cfg := a.Config
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	bin, err := buildUnprune(ctx, st, root)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(home, BudgetAccount+".kubeconfig")
	if err := applyWatchRBAC(ctx, st, root, cfg.Namespace, kubeconfig); err != nil {
		return err
	}
	certFile, keyFile, caPEM, err := ServingCertificate(filepath.Join(home, "budget-tls"))
	if err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	b := &Budget{
		Webhook:    "unprune-deletion-budget-" + cfg.Namespace,
		URL:        fmt.Sprintf("https://127.0.0.1:%d/validate-deletion", ports[1]),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]),
	}
	p := process{
		Name: cfg.component("unprune-watch"),
		Path: bin,
		Args: []string{"--kubeconfig=" + kubeconfig, "--argocd-namespace=" + cfg.Namespace, "--argocd-version=" + cfg.Version, "-n", cfg.Namespace,
			"watch", "--metrics-bind-address=" + fmt.Sprintf("127.0.0.1:%d", ports[0]), "--leader-elect=true",
			"--deletion-budget=" + strconv.Itoa(*cfg.DeletionBudget), fmt.Sprintf("--admission-bind-address=127.0.0.1:%d", ports[1]),
			"--tls-cert-file=" + certFile, "--tls-private-key-file=" + keyFile},
		Env: []string{"POD_NAME=" + cfg.component("unprune-watch"), "HOME=" + filepath.Join(home, "home")},
		Dir: home,
	}
	if _, err := p.start(st.Dir); err != nil {
		return err
	}
	if err := waitHTTP(ctx, st, p.Name, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[0]), 60*time.Second); err != nil {
		return err
	}
	docs, err := yamlDocuments(filepath.Join(root, "deploy", "components", "deletion-budget", "webhook.yaml"))
	if err != nil {
		return err
	}
	if len(docs) != 1 {
		return fmt.Errorf("deploy/components/deletion-budget/webhook.yaml: %d documents, want its one ValidatingWebhookConfiguration", len(docs))
	}
	conf := unstructured.Unstructured{Object: docs[0]}
	conf.SetName(b.Webhook)
	conf.SetAnnotations(nil) // cert-manager's CA injection: the lab sets caBundle itself
	hooks, _, _ := unstructured.NestedSlice(conf.Object, "webhooks")
	for i := range hooks {
		h := hooks[i].(map[string]any)
		h["clientConfig"] = map[string]any{"url": b.URL, "caBundle": caPEM}
		// The component names Argo CD's namespace "argocd"; the installation's is cfg.Namespace.
		conds, _ := h["matchConditions"].([]any)
		for _, c := range conds {
			m := c.(map[string]any)
			m["expression"] = strings.ReplaceAll(m["expression"].(string), "'system:serviceaccount:argocd:", "'system:serviceaccount:"+cfg.Namespace+":")
		}
	}
	if err := unstructured.SetNestedSlice(conf.Object, hooks, "webhooks"); err != nil {
		return err
	}
	dyn, err := st.Dynamic()
	if err != nil {
		return err
	}
	if err := apply(ctx, dyn, gvrValidatingWebhookConf, conf.Object); err != nil {
		return fmt.Errorf("register the deletion budget's webhook: %w", err)
	}
	a.Budget = b
	return nil
}

// applyWatchRBAC applies deploy/base's roles for the watch and the deletion budget component's
// (each ClusterRole named after the installation's namespace, so that installations keep their
// own) and writes a kubeconfig holding a token of its ServiceAccount.
func applyWatchRBAC(ctx context.Context, st *State, root, namespace, kubeconfig string) error {
	var docs []map[string]any
	for _, f := range []string{"clusterrole.yaml", "role.yaml"} {
		d, err := yamlDocuments(filepath.Join(root, "deploy", "base", f))
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	dyn, err := st.Dynamic()
	if err != nil {
		return err
	}
	clusterRole := BudgetAccount + "-" + namespace
	if err := applyRoles(ctx, dyn, docs, clusterRole, namespace, BudgetAccount, namespace); err != nil {
		return err
	}
	// The component's own ClusterRole (ApplicationSets: get, patch), bound as the component binds it.
	extra, err := yamlDocuments(filepath.Join(root, "deploy", "components", "deletion-budget", "rbac.yaml"))
	if err != nil {
		return err
	}
	budgetRole := "unprune-watch-deletion-budget-" + namespace
	if err := applyRoles(ctx, dyn, extra, budgetRole, namespace, BudgetAccount, namespace); err != nil {
		return err
	}
	if err := bindServiceAccount(ctx, dyn, namespace, BudgetAccount, budgetRole, budgetRole); err != nil {
		return err
	}
	return st.ServiceAccountKubeconfig(ctx, namespace, BudgetAccount, clusterRole, kubeconfig)
}

// applyRoles applies the ClusterRoles, Roles and RoleBindings among docs, as shipped but for their
// names and namespaces: a ClusterRole named clusterRole (installations keep their own), Roles and
// RoleBindings in namespace, each RoleBinding's subject the ServiceAccount account of
// accountNamespace.
func applyRoles(ctx context.Context, dyn dynamic.Interface, docs []map[string]any, clusterRole, namespace, account, accountNamespace string) error {
	for _, d := range docs {
		u := unstructured.Unstructured{Object: d}
		switch u.GetKind() {
		case "ClusterRole":
			u.SetName(clusterRole)
			if err := apply(ctx, dyn, gvrClusterRole, u.Object); err != nil {
				return err
			}
		case "Role":
			u.SetNamespace(namespace)
			if err := apply(ctx, dyn, gvrRole, u.Object); err != nil {
				return err
			}
		case "RoleBinding":
			u.SetNamespace(namespace)
			if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"kind": "ServiceAccount", "name": account, "namespace": accountNamespace}}, "subjects"); err != nil {
				return err
			}
			if err := apply(ctx, dyn, gvrRoleBinding, u.Object); err != nil {
				return err
			}
		}
	}
	return nil
}

// ServingCertificate makes a CA and a serving certificate for 127.0.0.1 signed by it, as
// cert-manager's Issuer would, and returns the key pair's files and the CA's PEM, base64-encoded as
// a webhook's caBundle.
func ServingCertificate(dir string) (certFile, keyFile, caPEM string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "unprune lab webhook CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return "", "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", "", err
	}
	caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	return certFile, keyFile, base64.StdEncoding.EncodeToString([]byte(caPEM)), nil
}
