package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/printer"
)

// alsoApp is one --also APP=PATH: another app the same change touches, with its manifests after it.
type alsoApp struct {
	App       engine.AppName
	Manifests string
	// given are the manifests read from Manifests, before anything is reached.
	given []check.Manifest
}

// parseAlso reads the --also values.
func (o *CheckOptions) parseAlso() error {
	for _, v := range o.AlsoValues {
		name, path, ok := strings.Cut(v, "=")
		if !ok || path == "" {
			return usageError("--also %s: use APP=PATH (the other app's manifests after the change)", printer.Safe(v))
		}
		app, err := engine.ParseAppName(name)
		if err != nil {
			return usageError("--also: %v", err)
		}
		if path == "-" && o.Manifests == "-" {
			return usageError("--also %s: only one set of manifests can come from stdin", printer.Safe(v))
		}
		o.also = append(o.also, alsoApp{App: app, Manifests: path})
	}
	switch {
	case len(o.also) > 0 && o.Set:
		return usageError("--also goes with an Application, not applicationset/NAME")
	case len(o.also) > 0 && o.Revision != "":
		return usageError("--also needs rendered manifests: use --manifests")
	}
	return nil
}

// runAlso checks the other apps of the change too, and reports a resource it moves from one app to
// another once, as a Move with the `unprune move` recipe, instead of a prune and an adoption.
func (o *CheckOptions) runAlso(ctx context.Context, argo cluster.ArgoCD, first check.Report, manifests int) error {
	reps := []check.Report{first}
	for _, a := range o.also {
		ns := a.App.Namespace
		if ns == "" {
			ns = argo.Namespace()
		}
		app, err := argo.GetApplication(ctx, ns, a.App.Name)
		if err != nil {
			return failure(fmt.Errorf("--also: %w", err))
		}
		rep, err := check.Run(ctx, argo, o.installed.settings, app, a.given, o.ask)
		if err != nil {
			return failure(err)
		}
		rep.Answers = append([]check.Answer{{Question: check.QuestionManifests, By: check.ByGiven}}, rep.Answers...)
		check.NoteMoves(ctx, &rep, argo.Namespace())
		reps = append(reps, rep)
		manifests += len(a.given)
	}
	reps = check.FoldMoves(ctx, reps, argo.Namespace())
	markdown := o.output.out.Format == "markdown"
	if o.output.out.Document() && !markdown {
		return o.printList(argo, reps)
	}
	var failed error
	for i, rep := range reps {
		switch {
		case !markdown:
			fmt.Fprintf(o.Out, "Application %s:\n", printer.Safe(rep.App.Ref()))
		case i > 0:
			fmt.Fprintln(o.Out) // each report is a section of its own, headed by its app
		}
		if err := o.print(argo, rep, manifests); err != nil && failed == nil {
			failed = err
		}
	}
	return failed
}

// checkList is several CheckReports of one run, for -o json|yaml with --also.
type checkList struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Items      []printer.CheckReport `json:"items"`
}

func (o *CheckOptions) printList(argo cluster.ArgoCD, reps []check.Report) error {
	info := argo.Cluster()
	list := checkList{APIVersion: printer.APIVersion, Kind: "CheckReportList"}
	var names []string
	findings := false
	for _, rep := range reps {
		doc := printer.NewCheckReport(o.metadata(&info), printer.NewArgoCD(argo.Namespace(), o.installed.settings.Settings), rep)
		list.Items = append(list.Items, doc)
		names = append(names, doc.Names()...)
		findings = findings || doc.Findings(o.FailOn)
	}
	if err := o.output.out.Print(o.Out, list, func() []string { return names }); err != nil {
		return err
	}
	if findings {
		return Silent(ExitFindings)
	}
	return nil
}
