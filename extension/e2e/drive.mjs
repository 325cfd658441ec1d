// Drives unprune's extension on a real argocd-server in headless Chromium, one scenario per run,
// for test/e2e/ui_test.go, which checks the cluster between the scenarios: in Argo CD's own UI
// ("ui": "argocd", the release built from its sources by the lab) or in the host page that stands
// in for it ("ui": "host", the default). Every step leaves a screenshot in the artifacts directory.
// The last stdout line is a JSON document of what the page showed; console errors and page errors
// are part of it (the Go test requires none).
//
//   node drive.mjs '{"url":..., "ui":"argocd|host", "user":..., "password":..., "app":"NS/NAME", "resource":"Namespace//NAME", "scenario":"release|refused|undo|guard|approve", "artifacts":DIR}'
import {join} from 'node:path';
import {mkdirSync, readdirSync} from 'node:fs';
import {launch} from '../test/browser.mjs';

const opts = JSON.parse(process.argv[2]);
mkdirSync(opts.artifacts, {recursive: true});
const {browser, page, problems} = await launch();
const out = {scenario: opts.scenario, ui: opts.ui || 'host'};
// Numbered after what earlier runs of the same test left, so that the files read in order.
let shot = readdirSync(opts.artifacts).length;
const snap = async name => {
    shot++;
    const file = join(opts.artifacts, `${opts.scenario}-${String(shot).padStart(3, '0')}-${name}.png`);
    await page.screenshot({path: file, fullPage: true});
    (out.screenshots = out.screenshots || []).push(file);
};
const text = async testid => (await page.getByTestId(testid).first().innerText()).trim();
const long = {timeout: 120000};
const [appNamespace, appName] = opts.app.split('/');

// cssString quotes s for a CSS attribute selector (a title holds newlines).
const cssString = s => '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\A ') + '"';

// What differs between the two pages: how one signs in, opens the app, closes a flyout and reads the
// sync status. Everything the extension renders is found the same way in both.
const pages = {
    // The host page: extension/host, its own sign-in form and a list of the app's resources.
    host: {
        async signIn() {
            await page.goto(opts.url);
            await page.getByTestId('username').fill(opts.user);
            await page.getByTestId('password').fill(opts.password);
            await page.getByTestId('login').click();
            await page.getByTestId('user').waitFor();
        },
        openApp: () => page.goto(`${opts.url}#/applications/${appNamespace}/${appName}`),
        user: () => text('user'),
        closeFlyout: () => page.getByTestId('close-flyout').click(),
        syncStatus: status => page.locator('[data-testid="sync-status"]', {hasText: status})
    },
    // Argo CD's own UI: its login form, the app's page with the resource tree, the sliding panels.
    argocd: {
        async signIn() {
            // The page at / as argocd-server serves it (its index.html, embedded in the binary).
            const index = await (await page.request.get(opts.url, {headers: {Accept: 'text/html'}})).text();
            out.title = (/<title>([^<]*)<\/title>/.exec(index) || [])[1];
            // Straight to the login form, as a signed-out user's bookmark leads there: opening / first
            // would let the UI ask the API as nobody and log Argo CD's 401s.
            await page.goto(`${opts.url}login?return_url=${encodeURIComponent(opts.url + 'applications')}`);
            const form = page.locator('.login__box form');
            await form.locator('input:not([type="password"])').first().fill(opts.user);
            await form.locator('input[type="password"]').fill(opts.password);
            await form.locator('button[type="submit"]').click();
            await page.waitForURL(/\/applications/, long);
        },
        openApp: () => page.goto(`${opts.url}applications/${appNamespace}/${appName}`),
        // The UI shows who is signed in only on its user-info page; its API says the same.
        user: () => page.evaluate(() => fetch('api/v1/session/userinfo', {credentials: 'same-origin'}).then(r => r.json()).then(u => u.username)),
        closeFlyout: () => page.locator('.sliding-panel--opened .sliding-panel__close').click(),
        syncStatus: status =>
            page.locator('.application-status-panel__item', {hasText: 'SYNC STATUS'}).locator('.application-status-panel__item-value', {hasText: status})
    }
};
const ui = pages[out.ui];

// openRelease opens the top-bar action's flyout and, in it, the release and guard of one resource
// (KIND[.GROUP]/[NAMESPACE/]NAME).
async function openRelease(resource) {
    await page.getByTestId('unprune-action').click();
    await page.locator(`[data-testid="release-row"][data-resource="${resource}"]`).getByTestId('open-release').click(long);
}

try {
    await ui.signIn();
    await ui.openApp();
    await page.getByTestId('panel-summary').waitFor(long);
    out.user = await ui.user();
    out.react = await page.evaluate(() => window.React.version);

    if (opts.scenario === 'release' || opts.scenario === 'refused') {
        await page.getByTestId('panel-first').waitFor(long);
        out.panel = {summary: await text('panel-summary'), first: await text('panel-first'), cascade: await text('panel-cascade')};
        await snap('status-panel');
        await page.getByTestId('unprune-panel').click();
        await page.getByTestId('prune-item').first().waitFor(long);
        out.flyout = {summary: await text('flyout-summary'), item: await text('prune-item'), cascade: await text('flyout-cascade')};
        await snap('flyout');
        await ui.closeFlyout();
        await openRelease(opts.resource);
        await page.getByTestId('diff').waitFor(long);
        out.plan = {changes: await text('changes'), diff: await text('diff')};
        await snap('release-plan');
        await page.getByTestId('release').click();
        await page.getByTestId('confirm-release').waitFor();
        await snap('confirm');
        await page.getByTestId('confirm-release').click();
        if (opts.scenario === 'release') {
            await page.getByTestId('released').waitFor(long);
            out.released = await text('released');
            out.undoCommand = await text('undo-command');
            await snap('released');
            await ui.syncStatus('Synced').first().waitFor(long);
            // Argo CD's UI puts the revision under the status ("Synced\nto main (932b625)"): its first line.
            out.syncStatus = (await ui.syncStatus('Synced').first().innerText()).trim().split('\n')[0].trim();
            await page.getByTestId('panel-summary').filter({hasText: 'Nothing requires pruning'}).waitFor(long);
            out.panelAfter = await text('panel-summary');
            await snap('synced');
        } else {
            await page.getByTestId('refused').waitFor(long);
            out.refused = await text('refused');
            await snap('refused');
        }
    }

    if (opts.scenario === 'guard') {
        await openRelease(opts.resource);
        await page.getByTestId('confirm-guard').waitFor(long);
        out.guardPlan = await text('confirm-guard');
        await snap('guard-plan');
        await page.getByTestId('guard-confirm').click();
        await page.getByTestId('confirm-guard-confirm').click();
        await page.getByTestId('guarded').waitFor(long);
        out.guarded = await text('guarded');
        await snap('guarded');
    }

    if (opts.scenario === 'approve') {
        await page.getByTestId('unprune-panel').click();
        await page.getByTestId('budget').waitFor(long);
        out.budget = await text('budget-summary');
        await snap('budget');
        await page.getByTestId('approve').click();
        await page.getByTestId('approve-confirm').click();
        await page.getByTestId('approved').waitFor(long);
        out.approved = await text('approved');
        await snap('approved');
    }

    if (opts.scenario === 'undo') {
        await page.getByTestId('unprune-panel').click();
        const journal = page.locator('[data-testid="journal"]', {hasText: opts.resourceLabel});
        await journal.first().waitFor(long);
        out.journal = await journal.first().innerText();
        const id = await journal.first().getAttribute('data-journal');
        await snap('journals');
        await journal.getByTestId('undo').first().click();
        await page.getByTestId('undo-plan').waitFor(long);
        out.undoPlan = await text('undo-plan');
        await snap('undo-plan');
        await page.getByTestId('confirm-undo').click();
        await page.getByTestId('undo-result').waitFor(long);
        out.undoResult = await text('undo-result');
        out.undoCommand = await text('undo-command');
        if (out.undoResult.includes('restored exactly')) {
            // The list is read again after an undo: the journal says so.
            await page.locator(`[data-testid="journal"][data-journal="${id}"]`, {hasText: 'undone'}).waitFor({timeout: 20000});
        }
        await snap('undo-result');
    }
} catch (e) {
    out.error = String(e && e.stack ? e.stack : e);
    try {
        await snap('failure');
    } catch (ignored) {
        // the page is gone
    }
} finally {
    await browser.close();
}
// Chromium logs every HTTP error answer as a console error. The one Argo CD answer a scenario
// expects — its RBAC refusing the viewer's patch (403), its API refusing to patch an object the app
// no longer lists (400) — is reported apart; anything else is a problem.
const expected = {refused: /status of 403 .*\/api\/v1\/applications\/[^/]+\/resource\?/, undo: /status of 400 .*\/api\/v1\/applications\/[^/]+\/resource\?/}[opts.scenario];
out.expectedRefusals = problems.filter(p => expected && expected.test(p));
out.problems = problems.filter(p => !(expected && expected.test(p)));
console.log(JSON.stringify(out));
