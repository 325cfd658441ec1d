package cli

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/internal/apply"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/printer"
)

// target is one selected resource, its live object and its plan. detach and guard share the way
// they turn targets into a preview, a server-side dry run or journaled patches.
type target struct {
	res     cluster.Resource
	mapping *meta.RESTMapping
	live    *unstructured.Unstructured
	plan    plan.Plan
}

// replanFunc plans a target again from a freshly read object, after a conflict.
type replanFunc func(t target, fresh *unstructured.Unstructured) plan.Plan

// previewItems lists each target's outcome as planned, with the diff for the table, and returns the
// targets that have changes to make.
func previewItems(targets []target) (items []printer.DetachItem, toApply []target, refusals int) {
	items = []printer.DetachItem{}
	for _, t := range targets {
		item := printer.DetachItem{Resource: resourceRef(t.res), Changes: printer.Changes(t.plan.Changes), Notes: t.plan.Notes}
		switch {
		case t.plan.Refusal != nil:
			refusals++
			item.Outcome, item.Refusal, item.Reason = printer.OutcomeRefused, t.plan.Refusal.Message, string(t.plan.Refusal.Code)
		case len(t.plan.Changes) == 0:
			item.Outcome = printer.OutcomeUnchanged
		default:
			item.Outcome = printer.OutcomePlanned
			item.SetDiff(apply.Diff(t.res.String(), t.plan.Changes))
			toApply = append(toApply, t)
		}
		items = append(items, item)
	}
	return items, toApply, refusals
}

// applyItems turns targets into work for apply.Run.
func applyItems(targets []target, replan replanFunc) []apply.Item {
	items := make([]apply.Item, 0, len(targets))
	for _, t := range targets {
		t := t
		items = append(items, apply.Item{Mapping: t.mapping, Object: t.live, Plan: t.plan,
			Replan: func(fresh *unstructured.Unstructured) plan.Plan { return replan(t, fresh) }})
	}
	return items
}

// changeMode is what to do with planned changes: "client" (preview), "server" (dry run) or "none"
// (apply). Without --dry-run, --yes applies and anything else previews.
func changeMode(dryRun string, yes bool) string {
	switch {
	case dryRun != "":
		return dryRun
	case yes:
		return "none"
	}
	return "client"
}

// serverDryRun sends every patch with dryRun=All and records the API server's answers on doc.
func serverDryRun(ctx context.Context, s *session, doc *printer.DetachReport, toApply []target, replan replanFunc, opts apply.Options) (failed int) {
	doc.Mode = printer.ModeServerDryRun
	opts.DryRun = true
	results := apply.Run(ctx, s.Client.Dynamic, applyItems(toApply, replan), nil, opts)
	return fillPlanned(doc, results, printer.OutcomeDryRunOK)
}

// applyJournaled writes the journal (every entry planned, before any patch, so that a crash leaves a
// record of what may have changed), patches, and records the outcomes on doc.
func (g *GlobalOptions) applyJournaled(ctx context.Context, s *session, doc *printer.DetachReport, j *journal.Journal,
	toApply []target, replan replanFunc, opts apply.Options) (results []apply.Result, failed int, err error) {
	store, err := g.journalStore()
	if err != nil {
		return nil, 0, err
	}
	j.Cluster, j.Context, j.ArgoCDNamespace = s.Server, s.Context, s.ArgoCDNamespace
	for _, t := range toApply {
		j.Entries = append(j.Entries, journal.NewEntry(apply.ObjectRef(t.mapping, t.live), t.plan.Changes...))
	}
	rec, err := store.Begin(j)
	if err != nil {
		return nil, 0, &ExitError{Code: ExitFailure, Err: fmt.Errorf("write the journal (nothing was changed): %w", err)}
	}
	doc.Mode, doc.Journal = printer.ModeApply, rec.Path()
	results = apply.Run(ctx, s.Client.Dynamic, applyItems(toApply, replan), rec, opts)
	doc.Items = stripDiffs(doc.Items)
	return results, fillPlanned(doc, results, printer.OutcomeApplied), nil
}

// fillPlanned records results on the planned items, which are in the same order as the results.
func fillPlanned(doc *printer.DetachReport, results []apply.Result, ok string) int {
	failed, ri := 0, 0
	for i := range doc.Items {
		if doc.Items[i].Outcome != printer.OutcomePlanned {
			continue
		}
		failed += fill(&doc.Items[i], results[ri], ok)
		ri++
	}
	return failed
}

func fill(item *printer.DetachItem, r apply.Result, ok string) int {
	item.Changes = printer.Changes(r.Changes)
	item.Attempts = r.Attempts
	switch {
	case r.Applied:
		item.Outcome = ok
	case r.Refusal != nil:
		item.Outcome, item.Refusal, item.Reason = printer.OutcomeRefused, r.Refusal.Message, string(r.Refusal.Code)
		return 1
	case r.Err != nil:
		item.Outcome, item.Error = printer.OutcomeFailed, r.Err.Error()
		return 1
	default:
		item.Outcome = printer.OutcomeUnchanged
	}
	return 0
}

func stripDiffs(items []printer.DetachItem) []printer.DetachItem {
	for i := range items {
		items[i].SetDiff("")
	}
	return items
}
