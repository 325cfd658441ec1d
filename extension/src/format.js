// Pure helpers: words and lookups the components share. Nothing here judges Argo CD's rules —
// the backend (unprune's Go code) does; this only says its answers in the UI's words.

/** KIND[.GROUP]/[NAMESPACE/]NAME, as unprune names a resource everywhere. */
export function resourceString(r) {
    const kind = r.group ? `${r.kind}.${r.group}` : r.kind;
    return r.namespace ? `${kind}/${r.namespace}/${r.name}` : `${kind}/${r.name}`;
}

/** "Namespace team-a", "ConfigMap shop/settings": how a person reads it. */
export function resourceLabel(r) {
    return r.namespace ? `${r.kind} ${r.namespace}/${r.name}` : `${r.kind} ${r.name}`;
}

function plural(n, one, many) {
    return `${n} ${n === 1 ? one : many}`;
}

/** What a deletion takes with it, from the backend's counts (-1: not counted). */
export function describeContents(c) {
    if (!c) {
        return '';
    }
    const parts = [];
    if (c.objects >= 0) {
        parts.push(`${plural(c.objects, 'object', 'objects')} in it`);
    }
    if (c.customResources >= 0) {
        parts.push(`${plural(c.customResources, 'custom resource', 'custom resources')} of its kind`);
    }
    if (parts.length === 0) {
        return c.partial ? `contents ${c.partial}` : '';
    }
    return parts.join(', ') + (c.partial ? ` (${c.partial})` : '');
}

/** The status panel's one line. */
export function summaryLine(answer) {
    const s = answer.summary;
    if (s.requiresPruning === 0) {
        return 'Nothing requires pruning';
    }
    const parts = [plural(s.requiresPruning, 'resource requires pruning', 'resources require pruning')];
    if (s.highRisk > 0) {
        parts.push(`${s.highRisk} high-risk`);
    }
    parts.push(s.unguarded === 0 ? 'every one guarded' : `${s.unguarded} unguarded`);
    return parts.join(' · ');
}

/** What deleting the Application would take with it, in words. */
export function cascadeLine(c) {
    if (!c) {
        return '';
    }
    if (c.unknown && !c.finalizer) {
        return `Deleting the app: unknown (${c.unknown})`;
    }
    if (!c.finalizer) {
        return 'Deleting the app deletes none of its resources (no resources finalizer)';
    }
    if (c.highRisk.length === 0) {
        return 'Deleting the app cascades into no unguarded high-risk resource';
    }
    const names = c.highRisk.map(resourceLabel).join(', ');
    return `Deleting the app cascades into ${plural(c.highRisk.length, 'high-risk resource', 'high-risk resources')}: ${names}`;
}

/**
 * The deletion budget's view in words: what the app's next operation deletes, against its budget
 * (the app's or its project's; null: the installation's default, which the webhook knows).
 */
export function budgetLine(b) {
    if (!b) {
        return '';
    }
    if (b.unknown) {
        return `What the next operation deletes is unknown (${b.unknown})`;
    }
    const budget = b.limit === null ? `the installation's default budget (unprune watch --deletion-budget)` : `a budget of ${b.limit} (${b.source})`;
    if (b.pending.length === 0) {
        return `Argo CD's comparison shows no deletion; ${budget}`;
    }
    const approved = b.pending.filter(p => p.approved).length;
    const over = b.limit !== null && b.pending.length > b.limit;
    return `${b.operation.replace(/^its /, 'Its ')} ${plural(b.pending.length, 'object', 'objects')}, against ${budget}` +
        (over ? ': over it, the deletion budget holds them all back until approved' : '') +
        ` · ${approved === b.pending.length ? 'all approved' : `${approved} approved`}`;
}

/** The resources Argo CD's comparison lists as requiring pruning, from the app's status rows. */
export function pruneRows(application) {
    const rows = (application && application.status && application.status.resources) || [];
    return rows
        .filter(x => x.requiresPruning)
        .map(x => ({group: x.group || '', version: x.version || '', kind: x.kind, namespace: x.namespace || '', name: x.name}));
}

/** The message of an Argo CD API error body ({error, code, message}) or of a backend Error. */
export function errorMessage(status, body) {
    if (body && typeof body === 'object') {
        return body.message || body.error || `HTTP ${status}`;
    }
    if (typeof body === 'string' && body.trim() !== '') {
        return body.trim();
    }
    return `HTTP ${status}`;
}

/** Journals that hold something an undo could restore. */
export function undoable(journal) {
    return journal.entries.some(e => e.state === 'applied' || e.state === 'planned');
}

/** The one-line state of a journal. */
export function journalState(journal) {
    const counts = {};
    for (const e of journal.entries) {
        counts[e.state] = (counts[e.state] || 0) + 1;
    }
    return Object.keys(counts)
        .sort()
        .map(k => `${counts[k]} ${k}`)
        .join(', ');
}
