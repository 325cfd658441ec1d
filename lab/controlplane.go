package lab

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Users of the lab's API server. Admin is in system:masters; NoAccess has no RBAC bindings at all,
// so every request it makes beyond discovery is Forbidden.
const (
	AdminUser    = "lab-admin"
	NoAccessUser = "lab-noaccess"
)

// freePort asks the kernel for a free loopback port. The port is released before the component binds
// it; the window is small and a collision shows up as a start failure with the component's log.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	seen := map[int]bool{}
	for len(ports) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeServiceAccountKey creates the RSA key the API server signs service-account tokens with and the
// controller manager uses for its token controller.
func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

// clusterSpec says where one control plane keeps its files and how its processes are named: the
// lab's own cluster and the remote one differ only in these.
type clusterSpec struct {
	prefix      string // process-name prefix: "" for the lab's own cluster, "remote-" for the remote
	name        string // etcd member and kubeconfig cluster/context name
	dir         string // etcd data, certificates, keys, tokens and kubeconfigs
	serviceCIDR string // --service-cluster-ip-range; the two clusters never overlap
	kcm         bool
}

// cluster is a started control plane.
type cluster struct {
	Server             string
	Kubeconfig         string
	NoAccessKubeconfig string
	CAFile             string
	CA                 []byte
	EtcdPort           int
	APIServerPort      int
	KCMPort            int
}

// startControlPlane starts the lab's own etcd, kube-apiserver and (optionally)
// kube-controller-manager and writes the two kubeconfigs. It fills the control-plane fields of st.
func startControlPlane(ctx context.Context, st *State, bins binaries, kcm bool) error {
	c, err := startCluster(ctx, st, bins, clusterSpec{name: "lab", dir: st.Dir, serviceCIDR: "10.0.0.0/24", kcm: kcm})
	st.EtcdPort, st.APIServerPort, st.KCMPort, st.Server = c.EtcdPort, c.APIServerPort, c.KCMPort, c.Server
	if err != nil {
		return err
	}
	st.Kubeconfig, st.NoAccessKubeconfig = c.Kubeconfig, c.NoAccessKubeconfig
	// kubectl of the same release, linked into the state so that `.lab/bin` can go on PATH.
	st.Kubectl = filepath.Join(st.Dir, "bin", "kubectl")
	if err := os.MkdirAll(filepath.Dir(st.Kubectl), 0o755); err != nil {
		return err
	}
	return os.Symlink(filepath.Join(bins.Kubernetes, "kubectl"), st.Kubectl)
}

// startCluster starts one control plane as spec says; its PID and log files go with the lab's
// (st.Dir), so that Down stops it. The returned cluster is filled as far as the start got.
func startCluster(ctx context.Context, st *State, bins binaries, spec clusterSpec) (*cluster, error) {
	dir := spec.dir
	c := &cluster{}
	ports, err := freePorts(4)
	if err != nil {
		return c, err
	}
	c.EtcdPort, c.APIServerPort = ports[0], ports[1]
	peerPort, kcmPort := ports[2], ports[3]

	etcd := process{
		Name: spec.prefix + "etcd",
		Path: filepath.Join(bins.Etcd, "etcd"),
		Args: []string{
			"--name=" + spec.name,
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + fmt.Sprintf("http://127.0.0.1:%d", c.EtcdPort),
			"--advertise-client-urls=" + fmt.Sprintf("http://127.0.0.1:%d", c.EtcdPort),
			"--listen-peer-urls=" + fmt.Sprintf("http://127.0.0.1:%d", peerPort),
			"--initial-advertise-peer-urls=" + fmt.Sprintf("http://127.0.0.1:%d", peerPort),
			"--initial-cluster=" + fmt.Sprintf("%s=http://127.0.0.1:%d", spec.name, peerPort),
			"--listen-metrics-urls=",
			// The lab's data is disposable: skipping fsync makes etcd fast on shared CI disks.
			"--unsafe-no-fsync",
			"--log-level=warn",
		},
	}
	if _, err := etcd.start(st.Dir); err != nil {
		return c, err
	}
	if err := waitHTTP(ctx, st, etcd.Name, fmt.Sprintf("http://127.0.0.1:%d/health", c.EtcdPort), 30*time.Second); err != nil {
		return c, err
	}

	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return c, err
	}
	saKey := filepath.Join(dir, "service-account.key")
	if err := writeServiceAccountKey(saKey); err != nil {
		return c, err
	}
	adminToken, err := randomToken()
	if err != nil {
		return c, err
	}
	noAccessToken, err := randomToken()
	if err != nil {
		return c, err
	}
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n",
		adminToken, AdminUser, AdminUser, noAccessToken, NoAccessUser, NoAccessUser)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return c, err
	}

	apiserver := process{
		Name: spec.prefix + "kube-apiserver",
		Path: filepath.Join(bins.Kubernetes, "kube-apiserver"),
		Args: []string{
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.APIServerPort),
			"--cert-dir=" + certDir,
			"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", c.EtcdPort),
			"--service-cluster-ip-range=" + spec.serviceCIDR,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + saKey,
			"--service-account-signing-key-file=" + saKey,
			"--token-auth-file=" + tokenFile,
			"--authorization-mode=RBAC",
			// No kubelets or Endpoints exist here: do not reconcile the kubernetes Service endpoints.
			"--endpoint-reconciler-type=none",
			"--v=1",
		},
	}
	if _, err := apiserver.start(st.Dir); err != nil {
		return c, err
	}
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", c.APIServerPort)
	c.CAFile = filepath.Join(certDir, "apiserver.crt")
	if c.CA, err = waitServing(ctx, st, apiserver.Name, c.Server+"/readyz", c.CAFile, adminToken, 90*time.Second); err != nil {
		return c, err
	}

	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	c.NoAccessKubeconfig = filepath.Join(dir, "kubeconfig-noaccess")
	if err := writeKubeconfig(c.Kubeconfig, spec.name, c.Server, c.CA, AdminUser, adminToken); err != nil {
		return c, err
	}
	if err := writeKubeconfig(c.NoAccessKubeconfig, spec.name, c.Server, c.CA, NoAccessUser, noAccessToken); err != nil {
		return c, err
	}

	if spec.kcm {
		controllerManager := process{
			Name: spec.prefix + "kube-controller-manager",
			Path: filepath.Join(bins.Kubernetes, "kube-controller-manager"),
			Args: []string{
				"--kubeconfig=" + c.Kubeconfig,
				"--authentication-kubeconfig=" + c.Kubeconfig,
				"--authorization-kubeconfig=" + c.Kubeconfig,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(kcmPort),
				"--leader-elect=false",
				"--service-account-private-key-file=" + saKey,
				"--root-ca-file=" + c.CAFile,
				"--use-service-account-credentials=false",
				"--v=1",
			},
		}
		if _, err := controllerManager.start(st.Dir); err != nil {
			return c, err
		}
		c.KCMPort = kcmPort
		if err := waitHTTP(ctx, st, controllerManager.Name, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), 60*time.Second); err != nil {
			return c, err
		}
	}
	return c, nil
}

// waitServing polls an API server's readyz with the self-signed certificate it writes into its
// cert dir, and returns that certificate once the server answers with it. The file is read again
// at every attempt: kube-apiserver writes it in place (client-go's cert.WriteCert, not a rename),
// so a read as soon as it exists can see it empty or cut, and a CA read once would then never
// verify the server (a CI run met it on a loaded machine).
func waitServing(ctx context.Context, st *State, name, url, caFile, token string, timeout time.Duration) ([]byte, error) {
	var ca []byte
	err := poll(ctx, st, name, timeout, func() (bool, string) {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return false, err.Error()
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return false, caFile + " holds no certificate yet"
		}
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		if ok, why := answersOK(ctx, client, url, token); !ok {
			return false, why
		}
		ca = pem
		return true, ""
	})
	return ca, err
}

func writeKubeconfig(path, name, server string, ca []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// waitHTTP polls a component's health endpoint until it answers 200, failing early with the
// component's log when it died. Its certificate is not checked: these endpoints serve a throwaway
// one (the API server is waited for with its own, waitServing).
func waitHTTP(ctx context.Context, st *State, name, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // health probe of a lab-local component
	return poll(ctx, st, name, timeout, func() (bool, string) { return answersOK(ctx, client, url, "") })
}

// answersOK sends one GET to url (with the bearer token, when given) and reports whether it
// answered 200, or why not.
func answersOK(ctx context.Context, client *http.Client, url, token string) (bool, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}

// poll checks cond until it holds, the deadline passes, or the component named name has exited.
func poll(ctx context.Context, st *State, name string, timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		last = why
		if runningPID(st.Dir, name) == 0 {
			return fmt.Errorf("%s exited during start-up; last lines of %s:\n%s",
				name, logFile(st.Dir, name), logTail(st.Dir, name, 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (%s); log: %s", name, timeout, strings.TrimSpace(last), logFile(st.Dir, name))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
