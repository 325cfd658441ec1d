package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

// AppName names an Application; an empty Namespace means Argo CD's own.
type AppName struct{ Namespace, Name string }

// ParseAppName accepts NAME or NAMESPACE/NAME.
func ParseAppName(s string) (AppName, error) {
	ns, name, found := strings.Cut(s, "/")
	if !found {
		ns, name = "", s
	}
	if name == "" || (found && ns == "") || strings.Contains(name, "/") {
		return AppName{}, fmt.Errorf("APP %q: use NAME or NAMESPACE/NAME", s)
	}
	return AppName{Namespace: ns, Name: name}, nil
}

// ResourceArg is a RESOURCE argument: KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME.
type ResourceArg struct {
	Kind, Group, Namespace, Name string
	Raw                          string
}

// ParseResourceArg parses a RESOURCE argument.
func ParseResourceArg(s string) (ResourceArg, error) {
	parts := strings.Split(s, "/")
	r := ResourceArg{Raw: s}
	switch len(parts) {
	case 2:
		r.Name = parts[1]
	case 3:
		r.Namespace, r.Name = parts[1], parts[2]
	default:
		return r, fmt.Errorf("resource %q: use KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME, e.g. Namespace/kube-system", s)
	}
	r.Kind, r.Group, _ = strings.Cut(parts[0], ".")
	if r.Kind == "" || r.Name == "" {
		return r, fmt.Errorf("resource %q: kind and name must not be empty", s)
	}
	return r, nil
}

// Matches reports whether the argument names the status row.
func (r ResourceArg) Matches(res argocd.Resource) bool {
	return strings.EqualFold(r.Kind, res.Kind) && r.Group == res.Group && r.Name == res.Name && r.Namespace == res.Namespace
}

// resolveApps reads the Applications a request names or selects.
func (e *Engine) resolveApps(ctx context.Context, names []AppName, sel *cluster.Selector) ([]argocd.Application, error) {
	read := ReadApps(ctx, e.ArgoCD, names, sel)
	return read.Apps, read.Err
}

// AppsRead are the Applications of a request read before planning, or why they could not be.
type AppsRead struct {
	Apps []argocd.Application
	// Narrowed says how a selection of every namespace was narrowed (ListSelected).
	Narrowed Narrowed
	Err      error
}

// Narrowed says how a selection of every namespace was narrowed to the Applications Argo CD
// reconciles: how many were left out, or why none could be (every app is then kept).
type Narrowed struct {
	Left int
	Err  error
}

// ReadApps reads the Applications a request names or selects (an empty namespace is Argo CD's).
// It needs the installation but not its settings, so a command can read the apps while the
// settings are read.
func ReadApps(ctx context.Context, argo cluster.ArgoCD, names []AppName, sel *cluster.Selector) AppsRead {
	if sel != nil {
		apps, narrowed, err := ListSelected(ctx, argo, *sel)
		return AppsRead{Apps: apps, Narrowed: narrowed, Err: err}
	}
	apps, err := readNamed(ctx, argo, names)
	return AppsRead{Apps: apps, Err: err}
}

// ListSelected lists the Applications a selection chooses, sorted; in every namespace, only those
// Argo CD reconciles (reconciled). When argocd-cmd-params-cm cannot be read, every app is kept and
// narrowed says why: a user who may not read it still sees every app, none hidden.
func ListSelected(ctx context.Context, argo cluster.ArgoCD, sel cluster.Selector) (apps []argocd.Application, narrowed Narrowed, err error) {
	apps, err = argo.ListApplications(ctx, sel)
	if err != nil {
		return nil, Narrowed{}, err
	}
	if sel.Namespace == "" {
		var kept []argocd.Application
		if kept, narrowed.Left, narrowed.Err = reconciled(ctx, argo, apps); narrowed.Err == nil {
			apps = kept
		}
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Ref() < apps[j].Ref() })
	return apps, narrowed, nil
}

// readNamed reads the Applications names names.
func readNamed(ctx context.Context, argo cluster.ArgoCD, names []AppName) ([]argocd.Application, error) {
	var apps []argocd.Application
	seen := map[string]bool{}
	for _, n := range names {
		ns := n.Namespace
		if ns == "" {
			ns = argo.Namespace()
		}
		if seen[ns+"/"+n.Name] {
			continue
		}
		seen[ns+"/"+n.Name] = true
		app, err := argo.GetApplication(ctx, ns, n.Name)
		if err != nil {
			hint := "is the app in another namespace? use NAMESPACE/NAME or -n"
			if cluster.IsNotFound(err) {
				return nil, invalid("%v (%s)", err, hint)
			}
			return nil, fmt.Errorf("%w (%s)", err, hint)
		}
		apps = append(apps, app)
	}
	return apps, nil
}

// reconciled narrows Applications listed in every namespace to those Argo CD's controller
// reconciles: in its own namespace, or one application.namespaces enables. argocd-server lists no
// others (server/application/application.go, List: isNamespaceEnabled), and no controller of this
// installation prunes or cascades for them. left counts the apps left out. A backend that cannot
// read argocd-cmd-params-cm (argocd-server's, which narrows the list itself) keeps every app; one
// that fails to read it returns the error and every app.
func reconciled(ctx context.Context, argo cluster.ArgoCD, apps []argocd.Application) (kept []argocd.Application, left int, err error) {
	r, ok := argo.(cluster.ParamsReader)
	if !ok {
		return apps, 0, nil
	}
	params, err := r.CmdParams(ctx)
	if err != nil {
		return apps, 0, err
	}
	ns := argocd.AppNamespaces{ArgoCD: argo.Namespace(), Patterns: argocd.SplitList(params[argocd.ParamAppNamespaces])}
	kept = apps[:0:0]
	for _, a := range apps {
		// A pattern Go's regexp cannot judge for sure keeps the app: listed wrongly is seen;
		// left out wrongly is not.
		if enabled, known := ns.Enabled(a.Namespace); enabled || !known {
			kept = append(kept, a)
		}
	}
	return kept, len(apps) - len(kept), nil
}

// selectRows picks an app's status rows for a request: every prunable row with all (hooks are
// never prunable), else the named ones. unknown lists arguments the app has no row for.
func selectRows(app argocd.Application, args []ResourceArg, all bool) (rows []argocd.Resource, unknown []ResourceArg) {
	if all {
		return app.Pruning(), nil
	}
	for _, arg := range args {
		found := false
		for _, r := range app.Resources {
			if arg.Matches(r) {
				rows = append(rows, r)
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, arg)
		}
	}
	return rows, unknown
}

// unknownResource explains an argument the app lists no row for, with a few candidates.
func unknownResource(ctx context.Context, app argocd.Application, arg ResourceArg) error {
	var names []string
	for _, r := range app.Pruning() {
		names = append(names, Quote(r.String()))
	}
	hint := "none of its resources requires pruning"
	if len(names) > 0 {
		const show = 5
		more := ""
		if len(names) > show {
			more = fmt.Sprintf(" … and %d more (%s scan lists them all)", len(names)-show, option.Program(ctx))
			names = names[:show]
		}
		hint = "its resources requiring pruning include " + strings.Join(names, ", ") + more
	}
	return &RequestError{Kind: UnlistedResource, Err: fmt.Errorf("Application %s lists no resource %s; %s", app.Ref(), Quote(arg.Raw), hint)}
}
