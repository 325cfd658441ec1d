// The host page: what stands in for Argo CD's own UI in the fast browser tests and on the release
// lines whose UI the lab does not build (Argo CD's own UI is the proof: lab/README.md). argocd-server
// serves it from its --staticassets directory and the extension from its own /extensions.js; it
// gives extensions the globals the UI gives them (ui/src/app/index.tsx: React, ReactDOM, Moment,
// ReactJSXRuntime, and extensionsAPI) with React at the version the release's UI pins, and renders
// the registered status panel items, top-bar actions (where their shouldDisplay says so), their
// flyouts and resource tabs with the props the UI passes (application, tree, resource = the live
// manifest, openFlyout), from argocd-server's real API with the real session cookie. It is no
// replacement for the UI: only what the extension needs is here.
import * as React from 'react';
import * as ReactDOM from 'react-dom';
import * as Moment from 'moment';
import * as JSXRuntime from 'react/jsx-runtime';
import {extensionsService, install} from './extensions-api.js';

install(window);
// For the tests: what the UI's extension service would answer.
window.unpruneHost = {extensions: extensionsService};
window.React = React;
window.ReactDOM = ReactDOM;
window.Moment = Moment;
window.ReactJSXRuntime = JSXRuntime;

const h = React.createElement;

async function api(method, path, body) {
    const res = await fetch(path, {method, credentials: 'same-origin', headers: body ? {'Content-Type': 'application/json'} : {}, body: body ? JSON.stringify(body) : undefined});
    const text = await res.text();
    let doc = text;
    try {
        doc = JSON.parse(text);
    } catch (e) {
        // not JSON
    }
    if (!res.ok) {
        throw new Error((doc && doc.message) || `HTTP ${res.status}`);
    }
    return doc;
}

class ErrorBoundary extends React.Component {
    constructor(props) {
        super(props);
        this.state = {error: null};
    }
    static getDerivedStateFromError(error) {
        return {error};
    }
    render() {
        return this.state.error ? h('div', {className: 'host-error', 'data-testid': 'extension-crashed'}, `${this.props.message}: ${this.state.error.message}`) : this.props.children;
    }
}

function Login({onLogin}) {
    const [error, setError] = React.useState('');
    const submit = async e => {
        e.preventDefault();
        const form = new FormData(e.target);
        try {
            await api('POST', 'api/v1/session', {username: form.get('username'), password: form.get('password')});
            onLogin();
        } catch (err) {
            setError(err.message);
        }
    };
    return h(
        'form',
        {className: 'host-login', onSubmit: submit},
        h('h2', null, 'Sign in to argocd-server'),
        h('input', {name: 'username', placeholder: 'username', 'data-testid': 'username'}),
        h('input', {name: 'password', type: 'password', placeholder: 'password', 'data-testid': 'password'}),
        h('button', {type: 'submit', className: 'argo-button argo-button--base', 'data-testid': 'login'}, 'Sign in'),
        error && h('div', {className: 'host-error'}, error)
    );
}

function Apps() {
    const [apps, setApps] = React.useState(null);
    React.useEffect(() => {
        api('GET', 'api/v1/applications').then(l => setApps(l.items || []), e => setApps({error: e.message}));
    }, []);
    if (!apps) {
        return h('p', null, 'Loading applications…');
    }
    if (apps.error) {
        return h('p', {className: 'host-error'}, apps.error);
    }
    return h(
        'ul',
        {className: 'host-apps'},
        apps.map(a =>
            h('li', {key: a.metadata.namespace + '/' + a.metadata.name}, h('a', {href: `#/applications/${a.metadata.namespace}/${a.metadata.name}`, 'data-testid': 'app-link'}, a.metadata.name), ` ${a.status.sync.status}`)
        )
    );
}

function useApplication(ns, name) {
    const [state, setState] = React.useState({});
    React.useEffect(() => {
        let live = true;
        const load = async () => {
            try {
                const q = `?appNamespace=${encodeURIComponent(ns)}`;
                const [application, tree] = await Promise.all([api('GET', `api/v1/applications/${encodeURIComponent(name)}${q}`), api('GET', `api/v1/applications/${encodeURIComponent(name)}/resource-tree${q}`)]);
                if (live) {
                    setState(s => (s.application && s.application.metadata.resourceVersion === application.metadata.resourceVersion ? s : {application, tree}));
                }
            } catch (e) {
                if (live) {
                    setState({error: e.message});
                }
            }
        };
        load();
        // The UI watches the app through a stream; the host page polls.
        const timer = setInterval(load, 1500);
        return () => {
            live = false;
            clearInterval(timer);
        };
    }, [ns, name]);
    return state;
}

function AppView({ns, name}) {
    const {application, tree, error} = useApplication(ns, name);
    const [flyout, setFlyout] = React.useState('');
    const [selected, setSelected] = React.useState(null);
    if (error) {
        return h('p', {className: 'host-error'}, error);
    }
    if (!application) {
        return h('p', null, 'Loading…');
    }
    const statusExts = extensionsService.getStatusPanelExtensions();
    // The top bar's actions an extension shows on this app (application-details.tsx: shouldDisplay).
    const actions = extensionsService.getActionMenuExtensions().filter(e => e.shouldDisplay && e.shouldDisplay(application));
    // One flyout at a time, by id, whichever registry it is in (the UI keeps one selected extension).
    const active = statusExts.find(e => e.id === flyout) || extensionsService.getActionMenuExtensions().find(e => e.id === flyout);
    return h(
        'div',
        {className: 'host-app'},
        h('h2', null, application.metadata.name),
        h(
            'div',
            {className: 'host-actions'},
            actions.map(ext =>
                h(
                    'button',
                    {key: ext.id, className: 'host-action', onClick: () => setFlyout(ext.id)},
                    ext.iconClassName && h('i', {className: ext.iconClassName}),
                    ' ',
                    h(ErrorBoundary, {message: `Something went wrong with Extension ${ext.title}`}, h(ext.component, {application, tree, openFlyout: () => setFlyout(ext.id)}))
                )
            )
        ),
        h(
            'div',
            {className: 'application-status-panel row'},
            h(
                'div',
                {className: 'application-status-panel__item'},
                h('div', {className: 'application-status-panel__item-name'}, 'SYNC STATUS'),
                h('div', {className: 'application-status-panel__item-value', 'data-testid': 'sync-status'}, application.status.sync.status)
            ),
            h(
                'div',
                {className: 'application-status-panel__item'},
                h('div', {className: 'application-status-panel__item-name'}, 'APP HEALTH'),
                h('div', {className: 'application-status-panel__item-value'}, (application.status.health || {}).status || '')
            ),
            statusExts.map(ext => h(ErrorBoundary, {key: ext.title, message: `Something went wrong with Extension ${ext.title}`}, h(ext.component, {application, openFlyout: () => setFlyout(ext.id)})))
        ),
        h(Resources, {application, onSelect: setSelected}),
        active &&
            active.flyout &&
            h(
                'div',
                {className: 'host-sliding-panel', 'data-testid': 'flyout'},
                h('button', {className: 'host-close', onClick: () => setFlyout(''), 'data-testid': 'close-flyout'}, '×'),
                h(ErrorBoundary, {message: `Something went wrong with Extension ${active.title}`}, h(active.flyout, {application, tree}))
            ),
        selected && h(ResourcePanel, {application, tree, node: selected, onClose: () => setSelected(null)})
    );
}

function Resources({application, onSelect}) {
    const rows = application.status.resources || [];
    return h(
        'table',
        {className: 'host-resources'},
        h('thead', null, h('tr', null, ['kind', 'namespace', 'name', 'status', ''].map(t => h('th', {key: t}, t)))),
        h(
            'tbody',
            null,
            rows.map(r =>
                h(
                    'tr',
                    {key: `${r.group}/${r.kind}/${r.namespace}/${r.name}`, onClick: () => onSelect(r), 'data-testid': 'resource-row', 'data-resource': `${r.kind}/${r.namespace || ''}/${r.name}`},
                    h('td', null, r.kind),
                    h('td', null, r.namespace || ''),
                    h('td', null, r.name),
                    h('td', null, r.status),
                    h('td', null, r.requiresPruning ? 'requires pruning' : '')
                )
            )
        )
    );
}

function ResourcePanel({application, tree, node, onClose}) {
    const [live, setLive] = React.useState(null);
    const [tab, setTab] = React.useState('summary');
    React.useEffect(() => {
        const q = new URLSearchParams({namespace: node.namespace || '', resourceName: node.name, version: node.version, group: node.group || '', kind: node.kind, appNamespace: application.metadata.namespace});
        api('GET', `api/v1/applications/${encodeURIComponent(application.metadata.name)}/resource?${q}`).then(
            r => setLive(JSON.parse(r.manifest)),
            e => setLive({error: e.message})
        );
    }, [node.kind, node.name, node.namespace]);
    const exts = extensionsService.getResourceTabs(node.group || '', node.kind);
    const tabs = [{key: 'summary', title: 'Summary'}].concat(exts.map((e, i) => ({key: `extension-${i}`, title: e.title, ext: e})));
    const current = tabs.find(t => t.key === tab) || tabs[0];
    let content;
    if (!live) {
        content = h('p', null, 'Loading…');
    } else if (live.error) {
        content = h('p', {className: 'host-error'}, live.error);
    } else if (current.ext) {
        content = h(ErrorBoundary, {message: `Something went wrong with Extension for ${live.kind}`}, h(current.ext.component, {tree, resource: live, application}));
    } else {
        content = h('pre', {className: 'host-summary'}, `${node.kind} ${node.namespace ? node.namespace + '/' : ''}${node.name}\nstatus: ${node.status}${node.requiresPruning ? '\nrequires pruning' : ''}`);
    }
    return h(
        'div',
        {className: 'host-sliding-panel', 'data-testid': 'resource-panel'},
        h('button', {className: 'host-close', onClick: onClose}, '×'),
        h('h3', null, `${node.kind} ${node.name}`),
        h(
            'div',
            {className: 'host-tabs'},
            tabs.map(t => h('button', {key: t.key, className: t.key === current.key ? 'host-tab host-tab--active' : 'host-tab', onClick: () => setTab(t.key), 'data-testid': `tab-${t.title}`}, t.title))
        ),
        content
    );
}

function Host() {
    const [user, setUser] = React.useState(null);
    const [route, setRoute] = React.useState(window.location.hash);
    const check = () => api('GET', 'api/v1/session/userinfo').then(setUser, () => setUser({loggedIn: false}));
    React.useEffect(() => {
        check();
        const onHash = () => setRoute(window.location.hash);
        window.addEventListener('hashchange', onHash);
        return () => window.removeEventListener('hashchange', onHash);
    }, []);
    if (!user) {
        return h('p', null, 'Loading…');
    }
    if (!user.loggedIn) {
        return h(Login, {onLogin: check});
    }
    const m = route.match(/^#\/applications\/([^/]+)\/([^/]+)$/);
    return h(
        'div',
        null,
        h('div', {className: 'host-top', 'data-testid': 'user'}, `signed in as ${user.username} · `, h('a', {href: '#/'}, 'applications')),
        m ? h(AppView, {ns: decodeURIComponent(m[1]), name: decodeURIComponent(m[2]), key: route}) : h(Apps)
    );
}

/**
 * Starts the host once the page is parsed. mount renders an element into the page's #app as the
 * release's UI does: createRoot with React 19 (v3.6's index.tsx), ReactDOM.render with React 16
 * (v2.14's and v3.0's).
 */
export function start(mount) {
    window.addEventListener('DOMContentLoaded', () => {
        // extensions.js is deferred after this bundle, as in the UI's index.html: it has registered
        // by the time the user has signed in and opened an app; the host also re-renders on
        // registration.
        const render = mount(document.getElementById('app'));
        const draw = () => render(h(Host));
        for (const type of ['resource', 'statusPanel', 'topBar']) {
            extensionsService.addEventListener(type, draw);
        }
        draw();
    });
}
