// The two servers the extension talks to, both through argocd-server with the user's session
// cookie: unprune's backend behind the proxy extension (questions; it changes nothing), and Argo
// CD's own API (every change, under the user's RBAC).
import {errorMessage} from './format.js';

export const VERSION = typeof __UNPRUNE_VERSION__ === 'string' ? __UNPRUNE_VERSION__ : 'dev';

// Relative URLs resolve against the UI's <base href>, so a --rootpath works.
const BACKEND = 'extensions/unprune/api/v1alpha1';

function appHeaders(app) {
    return {
        'Argocd-Application-Name': `${app.metadata.namespace}:${app.metadata.name}`,
        'Argocd-Project-Name': app.spec.project || 'default',
        'Unprune-Version': VERSION
    };
}

async function readBody(res) {
    const text = await res.text();
    try {
        return JSON.parse(text);
    } catch (e) {
        return text;
    }
}

export class APIError extends Error {
    constructor(status, body) {
        super(errorMessage(status, body));
        this.status = status;
        this.reason = body && body.reason;
    }
}

/** A call to unprune's backend about one Application. */
export async function backend(app, method, path, body) {
    const headers = appHeaders(app);
    if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(`${BACKEND}${path}`, {method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body)});
    const doc = await readBody(res);
    if (!res.ok) {
        throw new APIError(res.status, doc);
    }
    return doc;
}

/**
 * Sends a patch the backend prepared to argocd-server's API, with the user's session: Argo CD's
 * RBAC for this user decides. Returns what argocd-server answered, never throws for an HTTP error.
 */
export async function sendPatch(patch) {
    const path = patch.path.replace(/^\//, '');
    const query = new URLSearchParams(patch.query).toString();
    try {
        const res = await fetch(`${path}?${query}`, {method: patch.method, headers: {'Content-Type': 'application/json'}, credentials: 'same-origin', body: patch.body});
        const doc = await readBody(res);
        return {ok: res.ok, status: res.status, message: res.ok ? '' : errorMessage(res.status, doc)};
    } catch (e) {
        return {ok: false, status: 0, message: String(e && e.message ? e.message : e)};
    }
}

/** Resolves after ms. */
export function pause(ms) {
    return new Promise(resolve => setTimeout(resolve, ms));
}
