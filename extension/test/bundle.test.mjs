// The bundle loads in the host page — with React 19.2.6, as Argo CD v3.5.1's and v3.6.1's UIs pin it,
// and with React 16.14.0, as v2.14.11's through v3.4.7's do — in a real headless Chromium, registers
// its status panel item and its top-bar action (shown only on an app with a resource requiring
// pruning) through window.extensionsAPI exactly as the UI's extension service sees them, no resource
// tab, and logs no error.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {createServer} from 'node:http';
import {readFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {launch} from './browser.mjs';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');

function serve(host) {
    const files = {
        '/host.html': ['text/html', join(dist, host, 'host.html')],
        '/unprune-host.js': ['application/javascript', join(dist, host, 'unprune-host.js')],
        '/unprune-host.css': ['text/css', join(dist, host, 'unprune-host.css')],
        '/extensions.js': ['application/javascript', join(dist, 'extension-unprune.js')]
    };
    const server = createServer((req, res) => {
        const path = req.url.split('?')[0];
        if (path === '/api/v1/session/userinfo') {
            res.writeHead(200, {'Content-Type': 'application/json'});
            res.end('{"loggedIn":false}');
            return;
        }
        const f = files[path];
        if (!f) {
            res.writeHead(404);
            res.end();
            return;
        }
        res.writeHead(200, {'Content-Type': f[0]});
        res.end(readFileSync(f[1]));
    });
    return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(server)));
}

for (const [host, react] of [['host', '19.2.6'], ['host-react16', '16.14.0']]) {
    test(`with React ${react}, the bundle registers a status panel item and a top-bar action, without console errors`, async () => {
        const server = await serve(host);
        const {browser, page, problems} = await launch();
        try {
            await page.goto(`http://127.0.0.1:${server.address().port}/host.html`);
            await page.getByTestId('login').waitFor();
            const seen = await page.evaluate(() => {
                const s = window.unpruneHost.extensions;
                return {
                    react: window.React.version,
                    panels: s.getStatusPanelExtensions().map(e => ({title: e.title, id: e.id, flyout: typeof e.flyout})),
                    actions: s.getActionMenuExtensions().map(e => ({title: e.title, id: e.id, flyout: typeof e.flyout, icon: e.iconClassName})),
                    shownOnStuck: s.getActionMenuExtensions().map(e => e.shouldDisplay({status: {resources: [{kind: 'Namespace', name: 'a', requiresPruning: true}]}})),
                    shownOnSynced: s.getActionMenuExtensions().map(e => e.shouldDisplay({status: {resources: [{kind: 'Namespace', name: 'a'}]}})),
                    shownOnNew: s.getActionMenuExtensions().map(e => e.shouldDisplay({metadata: {name: 'new'}})),
                    namespaceTabs: s.getResourceTabs('', 'Namespace').map(e => e.title)
                };
            });
            assert.equal(seen.react, react);
            assert.deepEqual(seen.panels, [{title: 'Prune risk (unprune)', id: 'unprune', flyout: 'function'}]);
            assert.deepEqual(seen.actions, [{title: 'Unprune', id: 'unprune-release', flyout: 'function', icon: 'fa fa-shield-alt'}]);
            assert.deepEqual(seen.shownOnStuck, [true]);
            assert.deepEqual(seen.shownOnSynced, [false]);
            assert.deepEqual(seen.shownOnNew, [false]);
            assert.deepEqual(seen.namespaceTabs, []);
            assert.deepEqual(problems, []);
        } finally {
            await browser.close();
            server.close();
        }
    });
}
