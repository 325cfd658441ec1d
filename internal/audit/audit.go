// Package audit answers, before it happens, what a prune would delete: every resource that requires
// pruning now (a sync with PRUNE deletes it, whatever the app's automated policy says), every
// high-risk resource of an app that prunes automatically (the next revert deletes it), how much goes
// with each deletion, and which guard — if any — would stop it.
package audit

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/risk"
)

// When says when a prune would delete the resource.
type When string

const (
	// Now: the resource requires pruning; any sync with prune deletes it.
	Now When = "now"
	// AutoPrune: the app prunes automatically; removing the resource from git deletes it.
	AutoPrune When = "auto-prune"
)

// Guard names beyond the object's own (risk.Guard).
const (
	GuardPolicy      risk.Guard = "AdmissionPolicy"   // unprune's policy covers it (recognised, not probed)
	GuardProbeDenied risk.Guard = "ProbeDenied"       // a dry-run DELETE was refused
	GuardAppPrune    risk.Guard = "App:Prune=false"   // app-level option (v3.4+): a sync with its own options replaces it
	GuardAppConfirm  risk.Guard = "App:Prune=confirm" // app-level option
)

// Row is one resource a prune could delete.
type Row struct {
	App       cluster.Application
	Resource  cluster.Resource
	When      When
	Risk      risk.Class
	RiskWhy   string
	Contents  string // what goes with it: objects in a namespace, custom resources of a CRD
	Guards    []risk.Guard
	Guarded   bool   // a hard guard stops the deletion
	Probe     string // the API server's answer to a dry-run DELETE, with --probe
	LiveError string
}

// Report is a whole audit.
type Report struct {
	ArgoCDNamespace string
	AppsAudited     int
	Rows            []Row
	Softened        []string // apps whose sync options soften pruning
	Warnings        []string
}

// Options control an audit.
type Options struct {
	// Probe sends DELETE with dryRun=All for every row: the API server runs admission and answers,
	// persisting nothing. It is the one DELETE unprune can send, and only with this option.
	Probe   bool
	Workers int
}

// Auditor holds the clients.
type Auditor struct {
	Client    *cluster.Client
	Discovery discovery.DiscoveryInterface
}

// Run audits apps.
func (a *Auditor) Run(ctx context.Context, argocdNamespace string, apps []cluster.Application, o Options) Report {
	rep := Report{ArgoCDNamespace: argocdNamespace, AppsAudited: len(apps)}
	policy, warn := a.readPolicy(ctx)
	if warn != "" {
		rep.Warnings = append(rep.Warnings, warn)
	}
	type job struct {
		app  cluster.Application
		res  cluster.Resource
		when When
	}
	var jobs []job
	for _, app := range apps {
		if opts := strings.Join(app.SyncOptions, ","); argocd.HasOption(opts, argocd.OptionPruneDisabled) || argocd.HasOption(opts, argocd.OptionPruneConfirm) {
			rep.Softened = append(rep.Softened, fmt.Sprintf("%s: syncOptions %s", app.Ref(), opts))
		}
		if !app.InCluster() {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("Application %s deploys to another cluster; audit it with that cluster's --context", app.Ref()))
			continue
		}
		for _, r := range app.Resources {
			switch {
			case r.RequiresPruning:
				jobs = append(jobs, job{app, r, Now})
			case app.AutoPrune:
				if c, _ := risk.Classify(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, argocdNamespace); c == risk.High {
					jobs = append(jobs, job{app, r, AutoPrune})
				}
			}
		}
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 8
	}
	rows := make([]Row, len(jobs))
	parallel.ForEach(len(jobs), workers, func(i int) {
		rows[i] = a.row(ctx, argocdNamespace, jobs[i].app, jobs[i].res, jobs[i].when, policy, o)
	})
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].When != rows[j].When {
			return rows[i].When == Now
		}
		return rows[i].App.Ref() < rows[j].App.Ref()
	})
	rep.Rows = rows
	return rep
}

func (a *Auditor) row(ctx context.Context, argocdNamespace string, app cluster.Application, r cluster.Resource, when When, policy *policyInfo, o Options) Row {
	row := Row{App: app, Resource: r, When: when}
	obj := risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	live, m, err := a.Client.Live(ctx, r)
	if err != nil {
		row.LiveError = err.Error()
	} else {
		obj.Labels, obj.Annotations = live.GetLabels(), live.GetAnnotations()
		row.Contents = a.contents(ctx, r, live)
	}
	row.Risk, row.RiskWhy = risk.Classify(obj, argocdNamespace)
	row.Guards = risk.Guards(obj)
	// Argo CD's own guards hold whatever the API server would do; the API server's (an immortal
	// namespace, an admission policy) are only as good as its answer, which --probe asks for.
	argoGuarded := false
	for _, g := range row.Guards {
		argoGuarded = argoGuarded || g == risk.GuardPruneDisabled || g == risk.GuardPruneConfirm
	}
	row.Guarded = len(row.Guards) > 0
	if policy.covers(r, obj.Labels) {
		row.Guards = append(row.Guards, GuardPolicy)
		row.Guarded = true
	}
	opts := strings.Join(app.SyncOptions, ",")
	if argocd.HasOption(opts, argocd.OptionPruneDisabled) {
		row.Guards = append(row.Guards, GuardAppPrune)
	}
	if argocd.HasOption(opts, argocd.OptionPruneConfirm) {
		row.Guards = append(row.Guards, GuardAppConfirm)
	}
	if o.Probe && m != nil {
		var denied bool
		row.Probe, denied = a.probe(ctx, m, r)
		if denied {
			row.Guards = append(row.Guards, GuardProbeDenied)
		}
		// A policy that exists but does not deny (not enforced yet, or not matching) guards nothing.
		row.Guarded = argoGuarded || denied
	}
	return row
}

// probe asks the API server whether it would delete the object, without deleting it, and reports
// whether it refused: by admission, or by itself (immortal namespaces).
func (a *Auditor) probe(ctx context.Context, m *meta.RESTMapping, r cluster.Resource) (string, bool) {
	err := a.Client.ResourceInterface(m, r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil:
		return "allowed: the API server would delete it", false
	case apierrors.IsForbidden(err), apierrors.IsInvalid(err):
		msg := err.Error()
		if s, ok := err.(apierrors.APIStatus); ok {
			msg = s.Status().Message
		}
		return "denied: " + msg, true
	case apierrors.IsNotFound(err):
		return "gone: the object no longer exists", false
	}
	return "unknown: " + err.Error(), false
}

// contents says what a deletion takes with it.
func (a *Auditor) contents(ctx context.Context, r cluster.Resource, live *unstructured.Unstructured) string {
	switch {
	case r.Group == "" && r.Kind == "Namespace":
		n, partial := a.countInNamespace(ctx, r.Name)
		return plural(n, "object") + partial
	case r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition":
		n, err := a.countCustomResources(ctx, live)
		if err != nil {
			return "custom resources: unknown (" + err.Error() + ")"
		}
		return plural(n, "custom resource")
	}
	return ""
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// count lists one item and reads remainingItemCount: the API server counts without sending the list.
func (a *Auditor) count(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (int64, error) {
	list, err := a.Client.Dynamic.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	n := int64(len(list.Items))
	if rc := list.GetRemainingItemCount(); rc != nil {
		n += *rc
	}
	return n, nil
}

func (a *Auditor) countInNamespace(ctx context.Context, ns string) (int64, string) {
	if a.Discovery == nil {
		return 0, " (not counted)"
	}
	lists, err := a.Discovery.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return 0, " (not counted: " + err.Error() + ")"
	}
	var total int64
	skipped := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !hasVerb(res.Verbs, "list") || (gv.Group == "events.k8s.io") {
				continue // subresources; events are counted once, in the core group
			}
			n, err := a.count(ctx, gv.WithResource(res.Name), ns)
			if err != nil {
				skipped++
				continue
			}
			total += n
		}
	}
	if skipped > 0 {
		return total, fmt.Sprintf(" (at least; %d kinds unreadable)", skipped)
	}
	return total, ""
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

func (a *Auditor) countCustomResources(ctx context.Context, crd *unstructured.Unstructured) (int64, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			version, _ = m["name"].(string)
			if storage, _ := m["storage"].(bool); storage {
				break
			}
		}
	}
	if group == "" || plural == "" || version == "" {
		return 0, fmt.Errorf("the CRD serves no version")
	}
	return a.count(ctx, schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, "")
}

// policyInfo is what audit knows of unprune's own admission policy, when it is installed and bound.
type policyInfo struct {
	resources map[string]bool // group/resource
	names     map[string]bool // resource/name
}

func (p *policyInfo) covers(r cluster.Resource, labels map[string]string) bool {
	if p == nil {
		return false
	}
	for _, k := range guard.Kinds {
		if k.Group == r.Group && k.Kind == r.Kind && p.resources[k.Group+"/"+k.Resource] {
			return labels[guard.ProtectLabel] == "true" || p.names[k.Resource+"/"+r.Name]
		}
	}
	return false
}

var (
	gvrPolicy  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	gvrBinding = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

// readPolicy recognises the policy `unprune guard policy` installs. Other admission policies are not
// evaluated here: --probe asks the API server, which evaluates them all.
func (a *Auditor) readPolicy(ctx context.Context) (*policyInfo, string) {
	pol, err := a.Client.Dynamic.Resource(gvrPolicy).Get(ctx, guard.PolicyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, ""
	}
	if err != nil {
		return nil, fmt.Sprintf("cannot read ValidatingAdmissionPolicy %s (%v): guards by admission are not shown; --probe asks the API server instead", guard.PolicyName, err)
	}
	bind, err := a.Client.Dynamic.Resource(gvrBinding).Get(ctx, guard.PolicyName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Sprintf("ValidatingAdmissionPolicy %s has no binding %s: it enforces nothing", guard.PolicyName, guard.PolicyName)
	}
	actions, _, _ := unstructured.NestedStringSlice(bind.Object, "spec", "validationActions")
	if !hasVerb(actions, "Deny") {
		return nil, fmt.Sprintf("binding %s does not Deny (actions %v): it enforces nothing", guard.PolicyName, actions)
	}
	info := &policyInfo{resources: map[string]bool{}, names: map[string]bool{}}
	rules, _, _ := unstructured.NestedSlice(pol.Object, "spec", "matchConstraints", "resourceRules")
	for _, rule := range rules {
		m, _ := rule.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		for _, g := range groups {
			for _, r := range resources {
				info.resources[g+"/"+r] = true
			}
		}
	}
	for _, n := range strings.Split(pol.GetAnnotations()[guard.NamesAnnotation], ",") {
		if n != "" {
			info.names[n] = true
		}
	}
	return info, ""
}
