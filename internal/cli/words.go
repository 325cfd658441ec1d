package cli

import (
	"errors"
	"strings"

	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/option"
)

// spelling is how the command line spells the options that messages below it recommend
// (option.Name): the one place besides the flag definitions that names flags, checked against
// them by TestOptionSpellings. short is the one-letter form, if any.
var spelling = map[option.Name]struct{ long, short string }{
	option.Kubeconfig:     {long: "kubeconfig"},
	option.Context:        {long: "context"},
	option.Namespace:      {long: "namespace", short: "n"},
	option.As:             {long: "as"},
	option.RequestTimeout: {long: "request-timeout"},
	option.Output:         {long: "output", short: "o"},
	option.NoHeaders:      {long: "no-headers"},

	option.ArgoCDNamespace:    {long: "argocd-namespace"},
	option.ArgoCDVersion:      {long: "argocd-version"},
	option.ArgoCDContext:      {long: "argocd-context"},
	option.ArgoCDServer:       {long: apiFlagPrefix + "server"},
	option.ArgoCDAuthToken:    {long: apiFlagPrefix + "auth-token"},
	option.ClusterContext:     {long: "cluster-context"},
	option.ClusterCredentials: {long: "cluster-credentials"},
	option.Via:                {long: "via"},

	option.DryRun:  {long: "dry-run"},
	option.Yes:     {long: "yes", short: "y"},
	option.Force:   {long: "force"},
	option.To:      {long: "to"},
	option.Prepare: {long: "prepare"},

	option.Probe:        {long: "probe"},
	option.ControllerAs: {long: "controller-as"},
	option.RepoDir:      {long: "repo-dir"},

	option.GuardName:      {long: "name"},
	option.GuardKinds:     {long: "kinds"},
	option.GuardMerge:     {long: "merge"},
	option.Apply:          {long: "apply"},
	option.ApplicationSet: {long: "applicationset"},

	option.MetricsBindAddress:   {long: "metrics-bind-address"},
	option.AppNamespaces:        {long: "app-namespaces"},
	option.LeaseDuration:        {long: "lease-duration"},
	option.RenewDeadline:        {long: "renew-deadline"},
	option.RetryPeriod:          {long: "retry-period"},
	option.ResyncPeriod:         {long: "resync-period"},
	option.WatchTimeout:         {long: "watch-timeout"},
	option.Workers:              {long: "workers"},
	option.LiveCacheSize:        {long: "live-cache-size"},
	option.LiveCacheTTL:         {long: "live-cache-ttl"},
	option.LiveCacheBytes:       {long: "live-cache-bytes"},
	option.PprofBindAddress:     {long: "pprof-bind-address"},
	option.DeletionBudget:       {long: "deletion-budget"},
	option.AdmissionBindAddress: {long: "admission-bind-address"},
	option.TLSCertFile:          {long: "tls-cert-file"},
	option.TLSPrivateKeyFile:    {long: "tls-private-key-file"},
}

// apiFlagPrefix is what unprune and the kubectl plugin put before the Argo CD API's options, whose
// bare names (--server, …) are kubectl's; the argocd plugin has the bare names (addArgoCDAPIFlags).
// Messages that name those options for every binary alike are typed and worded here (speak).
const apiFlagPrefix = "argocd-"

func init() { option.Register(spell) }

func spell(n option.Name, f option.Form) string {
	s, ok := spelling[n]
	if !ok {
		return ""
	}
	switch {
	case s.short == "" || f == option.Long:
		return "--" + s.long
	case f == option.Short:
		return "-" + s.short
	}
	return "-" + s.short + "/--" + s.long
}

// speak is an error's message as this binary says it: the remedies of argocdapi's credentials
// errors name the Argo CD API's options as binary name spells them.
func speak(name string, err error) string {
	msg := err.Error()
	var creds *argocdapi.CredentialsError
	if errors.As(err, &creds) {
		prefix := apiFlagPrefix
		if name == NameArgoCDPlugin {
			prefix = ""
		}
		said := creds.Say("--"+prefix+"server", "--"+prefix+"auth-token")
		msg = strings.Replace(msg, creds.Error(), said, 1)
	}
	return msg
}
