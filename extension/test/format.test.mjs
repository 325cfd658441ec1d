import {test} from 'node:test';
import assert from 'node:assert/strict';
import {resourceString, resourceLabel, describeContents, summaryLine, cascadeLine, budgetLine, pruneRows, errorMessage, undoable, journalState} from '../src/format.js';

const ns = {group: '', version: 'v1', kind: 'Namespace', name: 'team-a'};
const cm = {group: '', version: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'settings'};
const crd = {group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', name: 'widgets.example.com'};

test('resources are named as unprune names them', () => {
    assert.equal(resourceString(ns), 'Namespace/team-a');
    assert.equal(resourceString(cm), 'ConfigMap/shop/settings');
    assert.equal(resourceString(crd), 'CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com');
    assert.equal(resourceLabel(cm), 'ConfigMap shop/settings');
    assert.equal(resourceLabel(ns), 'Namespace team-a');
});

test('contents say what goes with the deletion, and what was not counted', () => {
    assert.equal(describeContents({objects: 12, customResources: -1}), '12 objects in it');
    assert.equal(describeContents({objects: 1, customResources: -1}), '1 object in it');
    assert.equal(describeContents({objects: -1, customResources: 3}), '3 custom resources of its kind');
    assert.equal(describeContents({objects: 4, customResources: -1, partial: 'at least; 2 kinds unreadable'}), '4 objects in it (at least; 2 kinds unreadable)');
    assert.equal(describeContents({objects: -1, customResources: -1, partial: 'not counted: forbidden'}), 'contents not counted: forbidden');
    assert.equal(describeContents(null), '');
});

test('the panel line counts high-risk and unguarded rows', () => {
    assert.equal(summaryLine({summary: {requiresPruning: 0, highRisk: 0, unguarded: 0}}), 'Nothing requires pruning');
    assert.equal(summaryLine({summary: {requiresPruning: 1, highRisk: 1, unguarded: 1}}), '1 resource requires pruning · 1 high-risk · 1 unguarded');
    assert.equal(summaryLine({summary: {requiresPruning: 3, highRisk: 0, unguarded: 0}}), '3 resources require pruning · every one guarded');
});

test('the cascade line follows the finalizer', () => {
    assert.match(cascadeLine({finalizer: '', highRisk: []}), /deletes none of its resources/);
    assert.match(cascadeLine({finalizer: 'resources-finalizer.argocd.argoproj.io', highRisk: []}), /no unguarded high-risk/);
    assert.equal(
        cascadeLine({finalizer: 'resources-finalizer.argocd.argoproj.io', highRisk: [ns]}),
        'Deleting the app cascades into 1 high-risk resource: Namespace team-a'
    );
    assert.match(cascadeLine({finalizer: '', highRisk: [], unknown: 'forbidden'}), /unknown \(forbidden\)/);
});

test("the rows requiring pruning are read off the app's status, the core group empty", () => {
    const app = {status: {resources: [{version: 'v1', kind: 'Namespace', name: 'team-a', requiresPruning: true}, {group: 'apps', version: 'v1', kind: 'Deployment', namespace: 'shop', name: 'web'}]}};
    assert.deepEqual(pruneRows(app), [{group: '', version: 'v1', kind: 'Namespace', namespace: '', name: 'team-a'}]);
    assert.deepEqual(pruneRows({status: {}}), []);
    assert.deepEqual(pruneRows({metadata: {name: 'new'}}), []);
});

test("Argo CD's and the backend's error bodies are read for their message", () => {
    assert.equal(errorMessage(403, {error: 'permission denied', code: 7, message: 'permission denied'}), 'permission denied');
    assert.equal(errorMessage(409, {reason: 'ChangedSincePreview', message: 'changed'}), 'changed');
    assert.equal(errorMessage(401, 'Unauthorized extension request\n'), 'Unauthorized extension request');
    assert.equal(errorMessage(502, ''), 'HTTP 502');
});

test('a journal is undoable while an entry may have changed the object', () => {
    assert.equal(undoable({entries: [{state: 'applied'}]}), true);
    assert.equal(undoable({entries: [{state: 'planned'}]}), true);
    assert.equal(undoable({entries: [{state: 'failed'}, {state: 'undone'}]}), false);
    assert.equal(journalState({entries: [{state: 'applied'}, {state: 'failed'}, {state: 'applied'}]}), '2 applied, 1 failed');
});

test('budgetLine', () => {
    const cm = n => ({resource: {version: 'v1', kind: 'ConfigMap', namespace: 'shop', name: `cm-${n}`}, uid: `u${n}`, approved: false});
    const op = 'its next sync with prune deletes';
    assert.equal(budgetLine({limit: null, source: 'x', operation: op, pending: []}), "Argo CD's comparison shows no deletion; the installation's default budget (unprune watch --deletion-budget)");
    assert.equal(budgetLine({limit: 1, source: "the app's unprune.dev/deletion-budget", operation: op, pending: [cm(0), cm(1)]}),
        "Its next sync with prune deletes 2 objects, against a budget of 1 (the app's unprune.dev/deletion-budget): over it, the deletion budget holds them all back until approved · 0 approved");
    assert.equal(budgetLine({limit: null, source: 'x', operation: op, pending: [{...cm(0), approved: true}]}),
        "Its next sync with prune deletes 1 object, against the installation's default budget (unprune watch --deletion-budget) · all approved");
    assert.match(budgetLine({unknown: 'forbidden', pending: []}), /unknown \(forbidden\)/);
});
