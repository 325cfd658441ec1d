package cli

import (
	"github.com/spf13/pflag"
)

// How unprune reaches Argo CD and the clusters (--via).
const (
	ViaKube   = "kube"
	ViaArgoCD = "argocd"
)

// errNoServerDryRun refuses --dry-run=server where the backend cannot send one.
func errNoServerDryRun() error {
	return usageError("--dry-run=server: Argo CD's API cannot send a patch as a dry run; preview with --dry-run=client, or use your kubeconfig")
}

// addArgoCDAPIFlags adds the options of argocd-server's API. As the argocd plugin they carry the
// argocd CLI's own names (--server, --auth-token, …); as unprune or the kubectl plugin, where
// --server is kubectl's, they are prefixed (--argocd-server, …). ARGOCD_SERVER, ARGOCD_AUTH_TOKEN
// and the argocd CLI's config file work either way.
func addArgoCDAPIFlags(flags *pflag.FlagSet, g *factory, plugin bool) {
	prefix := apiFlagPrefix
	if plugin {
		prefix = ""
	}
	flags.StringVar(&g.Via, "via", g.Via, `how to reach Argo CD and its clusters: "kube" (your kubeconfig) or "argocd" (Argo CD's API, its credentials, its RBAC)`)
	flags.StringVar(&g.API.Server, prefix+"server", "", "Argo CD server address, with --via argocd (default: $ARGOCD_SERVER, else the argocd CLI's current context)")
	flags.StringVar(&g.API.AuthToken, prefix+"auth-token", "", "Argo CD token, with --via argocd (default: $ARGOCD_AUTH_TOKEN, else the argocd CLI's login)")
	flags.BoolVar(&g.API.Insecure, prefix+"insecure", false, "with --via argocd: skip verifying the Argo CD server's certificate")
	flags.BoolVar(&g.API.PlainText, prefix+"plaintext", false, "with --via argocd: talk to the Argo CD server over plain HTTP")
	flags.BoolVar(&g.API.GRPCWeb, prefix+"grpc-web", false, "with --via argocd: accepted for the argocd CLI's sake (unprune uses the REST API)")
	flags.StringVar(&g.API.ConfigPath, prefix+"config", "", "with --via argocd: the argocd CLI's config file (default ~/.config/argocd/config)")
}
