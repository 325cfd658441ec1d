// The extension's React components. React is the UI's own (window.React, as Argo CD's extension
// docs ask): nothing here bundles it, and only APIs of React 16.9 and later are used, so the same
// bundle runs in Argo CD v2.x (React 16) and v3.6 (React 19).
import {backend, sendPatch, pause, VERSION} from './api.js';
import {resourceLabel, resourceString, describeContents, summaryLine, cascadeLine, budgetLine, pruneRows, undoable, journalState} from './format.js';

const R = () => window.React;
const h = (...args) => window.React.createElement(...args);

const styles = {
    item: {cursor: 'pointer', maxWidth: '30em'},
    high: {color: '#e96d76', fontWeight: 600},
    normal: {color: '#6d7f8b'},
    ok: {color: '#18be94'},
    box: {padding: '1em', lineHeight: 1.5},
    pre: {background: '#f4f6f8', padding: '0.6em', overflowX: 'auto', fontSize: '12px', whiteSpace: 'pre'},
    note: {color: '#6d7f8b', fontSize: '0.9em'},
    error: {color: '#c23b4a', whiteSpace: 'pre-wrap'},
    row: {borderBottom: '1px solid #dee6eb', padding: '0.6em 0'},
    code: {fontFamily: 'monospace', background: '#f4f6f8', padding: '0.1em 0.3em', userSelect: 'all'}
};

/** Loads a backend answer, again whenever deps change. */
function useAnswer(load, deps) {
    const [state, setState] = R().useState({loading: true});
    const [tick, setTick] = R().useState(0);
    R().useEffect(() => {
        let live = true;
        setState(s => ({...s, loading: true}));
        load()
            .then(doc => live && setState({doc}))
            .catch(error => live && setState({error}));
        return () => {
            live = false;
        };
    }, [...deps, tick]);
    return [state, () => setTick(t => t + 1)];
}

function Risk({risk}) {
    return h('span', {style: risk === 'High' ? styles.high : styles.normal, 'data-risk': risk}, risk === 'High' ? 'HIGH RISK' : 'normal risk');
}

function Guards({item}) {
    if (item.guards.length === 0) {
        return h('div', {'data-testid': 'unguarded', style: styles.high}, 'Nothing guards this deletion: a sync with PRUNE ticked deletes it.');
    }
    return h(
        'ul',
        {'data-testid': 'guards', style: {margin: '0.3em 0', paddingLeft: '1.2em'}},
        item.guards.map(g => h('li', {key: g.name, title: g.name}, `${g.description}${g.hard ? '' : ' (soft)'}`))
    );
}

function ItemRow({item}) {
    const contents = describeContents(item.contents);
    return h(
        'div',
        {style: styles.row, 'data-testid': 'prune-item', 'data-resource': resourceString(item.resource)},
        h('div', null, h('b', null, resourceLabel(item.resource)), ' — ', h(Risk, {risk: item.risk}), item.riskWhy ? `: ${item.riskWhy}` : ''),
        contents && h('div', null, `A prune deletes it with ${contents}.`),
        h(Guards, {item}),
        item.liveError && h('div', {style: styles.error}, `Could not read it: ${item.liveError}`),
        (item.notes || []).map((n, i) => h('div', {key: i, style: styles.note}, n))
    );
}

function Failure({error}) {
    return h('div', {style: styles.error, 'data-testid': 'error'}, error.message || String(error));
}

/** The status panel item: how many resources require pruning, the first of them, the cascade. */
export function StatusPanel(props) {
    const app = props.application;
    const [state] = useAnswer(() => backend(app, 'GET', '/application'), [app.metadata.name, app.metadata.namespace, app.metadata.resourceVersion]);
    const title = h('div', {className: 'application-status-panel__item-name', style: {fontWeight: 600, fontSize: '0.8em', letterSpacing: '0.05em'}}, 'PRUNE RISK (UNPRUNE)');
    let body;
    if (state.error) {
        body = h(Failure, {error: state.error});
    } else if (!state.doc) {
        body = h('div', {style: styles.note}, 'Reading…');
    } else {
        const a = state.doc;
        const first = a.items[0];
        body = h(
            R().Fragment,
            null,
            h('div', {className: 'application-status-panel__item-value', 'data-testid': 'panel-summary', style: a.summary.unguardedHighRisk > 0 ? styles.high : null}, summaryLine(a)),
            first && h('div', {'data-testid': 'panel-first'}, resourceLabel(first.resource), ' — ', h(Risk, {risk: first.risk})),
            h('div', {style: styles.note, 'data-testid': 'panel-cascade'}, cascadeLine(a.cascade))
        );
    }
    return h('div', {className: 'application-status-panel__item', style: styles.item, onClick: () => props.openFlyout && props.openFlyout(), 'data-testid': 'unprune-panel'}, title, body);
}

/** The status panel's flyout: every resource a prune would delete, guards and risk; the cascade; UI releases. */
export function Flyout(props) {
    const app = props.application;
    const [state, reload] = useAnswer(() => backend(app, 'GET', '/application'), [app.metadata.name, app.metadata.resourceVersion]);
    const a = state.doc;
    return h(
        'div',
        {style: styles.box, 'data-testid': 'unprune-flyout'},
        h('h4', null, `What a prune of ${app.metadata.name} would delete`),
        state.error && h(Failure, {error: state.error}),
        !a && !state.error && h('div', {style: styles.note}, 'Reading…'),
        a &&
            h(
                R().Fragment,
                null,
                h('p', {'data-testid': 'flyout-summary'}, summaryLine(a), a.autoPrune ? ' — this app prunes automatically.' : ''),
                a.items.map(it => h(ItemRow, {key: resourceString(it.resource), item: it})),
                h('h5', {style: {marginTop: '1em'}}, 'Deleting the Application'),
                h('p', {'data-testid': 'flyout-cascade'}, cascadeLine(a.cascade), a.cascade.managedBy ? ` — ${a.cascade.managedBy}` : ''),
                h(Budget, {app, budget: a.budget, reload}),
                (a.warnings || []).map((w, i) => h('div', {key: i, style: styles.note}, w)),
                a.toolVersion !== VERSION && h('div', {style: styles.note, 'data-testid': 'version-skew'}, `This extension is ${VERSION}, its backend ${a.toolVersion}: install both from one release.`),
                a.items.length > 0 && h('p', {style: styles.note}, "Release a resource, or guard it, with UNPRUNE in the app's top bar: nothing is deleted.")
            ),
        h(Journals, {application: app, onChange: reload})
    );
}

function Diff({text}) {
    return text ? h('pre', {style: styles.pre, 'data-testid': 'diff'}, text) : null;
}

function Changes({changes}) {
    return h(
        'ul',
        {'data-testid': 'changes', style: {margin: '0.3em 0', paddingLeft: '1.2em'}},
        changes.map(c => h('li', {key: `${c.field}/${c.key}`}, c.description))
    );
}

/** The top-bar action's label (index.js shows it only while Argo CD lists a resource requiring pruning). */
export function ActionLabel() {
    return h('span', {'data-testid': 'unprune-action'}, 'Unprune');
}

/**
 * The top-bar action's flyout: each resource Argo CD lists as requiring pruning, with its release
 * and its guard. A resource whose release or guard started here stays on show with its outcome after
 * Argo CD drops it from the app: the flyout belongs to the app, where a resource's own panel closes
 * as soon as its node leaves the tree.
 */
export function ReleaseFlyout(props) {
    const app = props.application;
    const [open, setOpen] = R().useState('');
    const [engaged, setEngaged] = R().useState([]);
    const rows = pruneRows(app);
    const listed = new Set(rows.map(resourceString));
    const kept = new Set(engaged.map(resourceString));
    const shown = rows.concat(engaged.filter(r => !listed.has(resourceString(r))));
    return h(
        'div',
        {style: styles.box, 'data-testid': 'release-flyout'},
        h('h4', null, `Resources of ${app.metadata.name} that require pruning`),
        h('p', {style: styles.note}, "Release one to take it out of Argo CD's hands with nothing deleted, or guard it so that a prune waits for approval."),
        shown.length === 0 && h('p', {'data-testid': 'release-none'}, 'Argo CD lists nothing of this app as requiring pruning.'),
        shown.map(r => {
            const key = resourceString(r);
            return h(
                'div',
                {key, style: styles.row, 'data-testid': 'release-row', 'data-resource': key},
                // A release or guard that started stays open with its outcome, whichever row is opened next.
                open === key || kept.has(key)
                    ? h(ReleaseView, {application: app, resource: r, onEngage: () => setEngaged(e => (e.some(x => resourceString(x) === key) ? e : e.concat([r])))})
                    : h(
                          'div',
                          null,
                          h('b', null, resourceLabel(r)),
                          ' ',
                          h('button', {className: 'argo-button argo-button--base-o', 'data-testid': 'open-release', onClick: () => setOpen(key)}, 'Release or guard…')
                      )
            );
        })
    );
}

function query(r) {
    return '?' + new URLSearchParams({group: r.group || '', kind: r.kind, namespace: r.namespace || '', name: r.name}).toString();
}

function ReleaseView({application: app, resource: r, onEngage}) {
    const [state, reload] = useAnswer(() => backend(app, 'GET', `/resource${query(r)}`), [resourceString(r)]);
    const [step, setStep] = R().useState({name: 'preview'});
    if (state.error) {
        return h('div', {style: styles.box}, h(Failure, {error: state.error}));
    }
    if (!state.doc) {
        return h('div', {style: styles.box}, 'Reading…');
    }
    const ans = state.doc;
    const plan = ans.release;
    const release = async () => {
        onEngage();
        setStep({name: 'releasing', log: ['Writing the journal…']});
        const log = [];
        const say = line => {
            log.push(line);
            setStep({name: 'releasing', log: log.slice()});
        };
        try {
            const started = await backend(app, 'POST', '/releases', {resource: ans.item.resource, resourceVersion: plan.resourceVersion, argocdServer: window.location.origin});
            say(`Journal ${started.journal.id} written (planned). Sending the patch to Argo CD as you…`);
            const sent = await sendPatch(started.patch);
            const result = await backend(app, 'POST', `/releases/${encodeURIComponent(started.journal.id)}/result`, {status: sent.status, message: sent.message});
            if (result.state !== 'applied') {
                setStep({name: 'refused', message: result.message, journal: started.journal});
                return;
            }
            say('Released: Argo CD patched it. Waiting for Argo CD to compare the app…');
            const deadline = Date.now() + 90000;
            for (;;) {
                const st = await backend(app, 'GET', `/releases/${encodeURIComponent(started.journal.id)}`);
                const v = st.verification;
                if (v && v.verified) {
                    setStep({name: 'done', verification: v, journal: started.journal});
                    return;
                }
                if (Date.now() > deadline) {
                    setStep({name: 'waiting', verification: v, journal: started.journal});
                    return;
                }
                await pause(1000);
            }
        } catch (e) {
            setStep({name: 'failed', message: e.message});
        }
    };
    return h(
        'div',
        {style: styles.box, 'data-testid': 'unprune-tab'},
        h('h4', null, `${resourceLabel(r)} requires pruning`),
        h(ItemRow, {item: ans.item}),
        h('h5', {style: {marginTop: '1em'}}, 'Release (delete nothing)'),
        plan.outcome === 'Planned'
            ? h(
                  R().Fragment,
                  null,
                  h('p', null, `Removes only Argo CD's tracking of it, so that ${app.metadata.name} no longer owns it: no prune or cascade can delete it any more, and the resource stays as it is.`),
                  h(Changes, {changes: plan.changes}),
                  h(Diff, {text: plan.diff}),
                  (plan.notes || []).map((n, i) => h('div', {key: i, style: styles.note}, n))
              )
            : h('p', {'data-testid': 'plan-refused', style: styles.error}, `Nothing to release: ${plan.message || plan.outcome}`),
        plan.outcome === 'Planned' && h(ReleaseSteps, {step, setStep, release, reload, app}),
        step.name === 'preview' && ans.confirm && ans.confirm.outcome === 'Planned' && h(ConfirmGuard, {app, ans, reload, onEngage})
    );
}

/**
 * Starts a one-object change with the backend (POST path: it journals it, planned), sends its patch
 * to Argo CD's API as the user, and completes the journal from what the object then shows: the state
 * to show, done (with the journal) or refused (with why).
 */
async function journaledPatch(app, path, body) {
    try {
        const started = await backend(app, 'POST', path, body);
        const sent = await sendPatch(started.patch);
        const res = await backend(app, 'POST', `${path}/${encodeURIComponent(started.journal.id)}/result`, {status: sent.status, message: sent.message});
        return res.state === 'applied' ? {name: 'done', journal: started.journal} : {name: 'refused', message: res.message};
    } catch (e) {
        return {name: 'refused', message: e.message};
    }
}

/**
 * The deletion budget (docs/budget.md): what the app's next operation deletes against its budget,
 * and the approval of exactly those objects, by UID, sent to Argo CD's API as the clicker
 * (applications, update), as `unprune guard approve` writes it.
 */
function Budget({app, budget: b, reload}) {
    const [state, setState] = R().useState({name: 'preview'});
    if (!b || (b.pending.length === 0 && !b.unknown)) {
        return null;
    }
    const unapproved = b.pending.filter(p => !p.approved).length;
    const run = async () => {
        setState({name: 'sending'});
        setState(await journaledPatch(app, '/approvals', {uids: b.pending.map(p => p.uid), argocdServer: window.location.origin}));
    };
    return h(
        'div',
        {'data-testid': 'budget'},
        h('h5', {style: {marginTop: '1em'}}, 'Deletion budget'),
        h('p', {'data-testid': 'budget-summary'}, budgetLine(b)),
        h(
            'ul',
            {style: {margin: '0.3em 0', paddingLeft: '1.2em'}},
            b.pending.map(p => h('li', {key: p.uid}, resourceLabel(p.resource), p.approved ? ' — approved' : ''))
        ),
        unapproved > 0 && state.name === 'preview' && h('button', {className: 'argo-button argo-button--base-o', 'data-testid': 'approve', onClick: () => setState({name: 'sure'})}, 'Approve these deletions'),
        state.name === 'sure' &&
            h(
                'div',
                null,
                h('p', null, `Approves exactly these ${b.pending.length} objects, by UID, in unprune.dev/approved-deletions on ${app.metadata.name}: the deletion budget then lets Argo CD's next sync with prune (or the app's deletion) delete them. Argo CD applies this as you (applications, update).`),
                h('button', {className: 'argo-button argo-button--base', 'data-testid': 'approve-confirm', onClick: run}, 'Confirm: approve these deletions'),
                ' ',
                h('button', {className: 'argo-button argo-button--base-o', onClick: () => setState({name: 'preview'})}, 'Cancel')
            ),
        state.name === 'sending' && h('div', null, 'Sending the approval to Argo CD as you…'),
        state.name === 'done' &&
            h('div', {style: styles.ok, 'data-testid': 'approved'}, `Approved. Journal ${state.journal.id}; undo it below.`, ' ', h('button', {className: 'argo-button argo-button--base-o', onClick: reload}, 'Read again')),
        state.name === 'refused' && h('div', {style: styles.error, 'data-testid': 'approve-refused'}, state.message)
    );
}

/** The other way to keep it: Prune=confirm, so that a prune waits for approval on the app. */
function ConfirmGuard({app, ans, reload, onEngage}) {
    const [state, setState] = R().useState({name: 'preview'});
    const plan = ans.confirm;
    const run = async () => {
        onEngage();
        setState({name: 'sending'});
        setState(await journaledPatch(app, '/guards', {resource: ans.item.resource, resourceVersion: plan.resourceVersion, argocdServer: window.location.origin}));
    };
    return h(
        'div',
        {'data-testid': 'confirm-guard', style: {marginTop: '1.5em'}},
        h('h5', null, 'Or keep it tracked, guarded'),
        h('p', null, `Prune=confirm in its sync-options makes any prune of it wait until someone approves the deletion on ${app.metadata.name} (Argo CD v2.14 and later). It stays OutOfSync.`),
        h(Changes, {changes: plan.changes}),
        state.name === 'preview' && h('button', {className: 'argo-button argo-button--base-o', 'data-testid': 'guard-confirm', onClick: () => setState({name: 'sure'})}, 'Require approval to prune'),
        state.name === 'sure' && h('button', {className: 'argo-button argo-button--base', 'data-testid': 'confirm-guard-confirm', onClick: run}, 'Confirm: add Prune=confirm'),
        state.name === 'sending' && h('div', null, 'Sending the patch to Argo CD as you…'),
        state.name === 'done' && h('div', {style: styles.ok, 'data-testid': 'guarded'}, `Guarded: a prune of it now waits for approval. Journal ${state.journal.id}; undo it from the unprune item of the status panel.`, ' ', h('button', {className: 'argo-button argo-button--base-o', onClick: reload}, 'Read again')),
        state.name === 'refused' && h('div', {style: styles.error, 'data-testid': 'guard-refused'}, state.message)
    );
}

function ReleaseSteps({step, setStep, release, reload, app}) {
    switch (step.name) {
        case 'preview':
            return h('button', {className: 'argo-button argo-button--base', 'data-testid': 'release', onClick: () => setStep({name: 'confirm'})}, 'Release (delete nothing)');
        case 'confirm':
            return h(
                'div',
                {'data-testid': 'confirm'},
                h('p', null, 'Argo CD applies this patch as you, with your rights (applications, update). The plan above is sent only if the resource has not changed since.'),
                h('button', {className: 'argo-button argo-button--base', 'data-testid': 'confirm-release', onClick: release}, 'Confirm release'),
                ' ',
                h('button', {className: 'argo-button argo-button--base-o', onClick: () => setStep({name: 'preview'})}, 'Cancel')
            );
        case 'releasing':
            return h('div', {'data-testid': 'progress'}, step.log.map((l, i) => h('div', {key: i}, l)));
        case 'done':
            return h(
                'div',
                {'data-testid': 'released', style: styles.ok},
                h('p', null, `Released. Argo CD shows ${app.metadata.name} ${step.verification.syncStatus} in a comparison after the patch, and no longer lists the resource; nothing was deleted.`),
                h(UndoHint, {journal: step.journal})
            );
        case 'waiting':
            return h('div', {'data-testid': 'waiting'}, h('p', null, 'Released, but Argo CD has not shown it yet (it still lists the resource, or has not compared the app since).'), h(UndoHint, {journal: step.journal}));
        case 'refused':
            return h(
                'div',
                {'data-testid': 'refused'},
                h('p', {style: styles.error}, step.message),
                h('p', {style: styles.note}, `Journal ${step.journal.id} records the attempt; nothing was changed.`),
                h('button', {className: 'argo-button argo-button--base-o', onClick: () => (setStep({name: 'preview'}), reload())}, 'Back')
            );
        case 'failed':
            return h('div', {'data-testid': 'failed'}, h('p', {style: styles.error}, step.message), h('button', {className: 'argo-button argo-button--base-o', onClick: () => (setStep({name: 'preview'}), reload())}, 'Back'));
    }
    return null;
}

function UndoHint({journal}) {
    return h('p', {style: styles.note}, `Journal ${journal.id}. Undo it from the unprune item of the status panel, or with a kubeconfig: `, h('span', {style: styles.code, 'data-testid': 'undo-command'}, journal.undoCommand));
}

/** The app's journals of UI releases, with their undo. */
function Journals({application: app, onChange}) {
    const [state, reload] = useAnswer(() => backend(app, 'GET', '/journals'), [app.metadata.name, app.metadata.resourceVersion]);
    if (state.error) {
        return h('div', null, h('h5', null, 'Changes made here'), h(Failure, {error: state.error}));
    }
    const items = (state.doc && state.doc.items) || [];
    return h(
        'div',
        {'data-testid': 'journals'},
        h('h5', {style: {marginTop: '1em'}}, 'Changes made here (releases, guards, approvals)'),
        items.length === 0 && h('p', {style: styles.note}, 'None yet.'),
        items.map(j => h(JournalRow, {key: j.id, journal: j, application: app, onChange: () => (reload(), onChange())}))
    );
}

function JournalRow({journal: j, application: app, onChange}) {
    const [undo, setUndo] = R().useState(null);
    const plan = async () => {
        setUndo({name: 'planning'});
        try {
            setUndo({name: 'confirm', doc: await backend(app, 'POST', `/journals/${encodeURIComponent(j.id)}/undo`)});
        } catch (e) {
            setUndo({name: 'failed', message: e.message});
        }
    };
    const run = async doc => {
        const results = [];
        for (const it of doc.items) {
            if (!it.patch) {
                continue;
            }
            const sent = await sendPatch(it.patch);
            const res = await backend(app, 'POST', `/journals/${encodeURIComponent(j.id)}/undo/result`, {entry: it.entry, status: sent.status, message: sent.message});
            results.push({resource: it.resource, state: res.state, message: res.message});
        }
        setUndo({name: 'done', results});
        onChange();
    };
    return h(
        'div',
        {style: styles.row, 'data-testid': 'journal', 'data-journal': j.id},
        h('div', null, h('b', null, j.entries.map(e => resourceLabel(e.resource)).join(', ')), ` — ${journalState(j)}, ${new Date(j.createdAt).toLocaleString()}`),
        h('div', {style: styles.note}, `Journal ${j.id}`),
        undoable(j) && !undo && h('button', {className: 'argo-button argo-button--base-o', 'data-testid': 'undo', onClick: plan}, 'Undo'),
        undo && undo.name === 'planning' && h('div', null, 'Planning the undo…'),
        undo && undo.name === 'failed' && h(Failure, {error: {message: undo.message}}),
        undo && undo.name === 'confirm' && h(UndoPlan, {doc: undo.doc, run, cancel: () => setUndo(null)}),
        undo &&
            undo.name === 'done' &&
            h(
                'div',
                {'data-testid': 'undo-result'},
                undo.results.map((x, i) =>
                    h('div', {key: i, style: x.state === 'undone' ? styles.ok : styles.error}, `${resourceLabel(x.resource)}: ${x.state === 'undone' ? 'restored exactly' : x.message}`)
                ),
                h('p', {style: styles.note}, 'Or undo with a kubeconfig: ', h('span', {style: styles.code, 'data-testid': 'undo-command'}, j.undoCommand))
            )
    );
}

function UndoPlan({doc, run, cancel}) {
    const sendable = doc.items.some(it => it.patch);
    return h(
        'div',
        {'data-testid': 'undo-plan'},
        doc.items.map(it =>
            h(
                'div',
                {key: it.entry},
                h('div', null, h('b', null, resourceLabel(it.resource)), it.outcome === 'Planned' ? ': restore' : `: ${it.message || it.outcome}`),
                it.outcome === 'Planned' && h(Changes, {changes: it.changes}),
                h(Diff, {text: it.diff})
            )
        ),
        sendable && h('button', {className: 'argo-button argo-button--base', 'data-testid': 'confirm-undo', onClick: () => run(doc)}, 'Confirm undo'),
        ' ',
        h('button', {className: 'argo-button argo-button--base-o', onClick: cancel}, 'Cancel')
    );
}

export {VERSION};
