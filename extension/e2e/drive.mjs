// Drives the host page on a real argocd-server in headless Chromium, one scenario per run, for
// test/e2e/ui_test.go, which checks the cluster between the scenarios. Every step leaves a
// screenshot in the artifacts directory. The last stdout line is a JSON document of what the page
// showed; console errors and page errors are part of it (the Go test requires none).
//
//   node drive.mjs '{"url":..., "user":..., "password":..., "app":"NS/NAME", "resource":"Namespace//NAME", "scenario":"release|refused|undo", "artifacts":DIR}'
import {join} from 'node:path';
import {mkdirSync, readdirSync} from 'node:fs';
import {launch} from '../test/browser.mjs';

const opts = JSON.parse(process.argv[2]);
mkdirSync(opts.artifacts, {recursive: true});
const {browser, page, problems} = await launch();
const out = {scenario: opts.scenario};
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

try {
    await page.goto(opts.url);
    await page.getByTestId('username').fill(opts.user);
    await page.getByTestId('password').fill(opts.password);
    await page.getByTestId('login').click();
    await page.getByTestId('user').waitFor();
    const [ns, name] = opts.app.split('/');
    await page.goto(`${opts.url}#/applications/${ns}/${name}`);
    await page.getByTestId('panel-summary').waitFor(long);
    out.user = await text('user');
    out.react = await page.evaluate(() => window.React.version);

    if (opts.scenario === 'release' || opts.scenario === 'refused') {
        await page.getByTestId('panel-first').waitFor(long);
        out.panel = {summary: await text('panel-summary'), first: await text('panel-first'), cascade: await text('panel-cascade')};
        await snap('status-panel');
        await page.getByTestId('unprune-panel').click();
        await page.getByTestId('prune-item').first().waitFor(long);
        out.flyout = {summary: await text('flyout-summary'), item: await text('prune-item'), cascade: await text('flyout-cascade')};
        await snap('flyout');
        await page.getByTestId('close-flyout').click();
        await page.locator(`[data-testid="resource-row"][data-resource="${opts.resource}"]`).click();
        await page.getByTestId('tab-Unprune').click();
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
            await page.locator('[data-testid="sync-status"]', {hasText: 'Synced'}).waitFor(long);
            out.syncStatus = await text('sync-status');
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
        await page.locator(`[data-testid="resource-row"][data-resource="${opts.resource}"]`).click();
        await page.getByTestId('tab-Unprune').click();
        await page.getByTestId('confirm-guard').waitFor(long);
        out.guardPlan = await text('confirm-guard');
        await snap('guard-plan');
        await page.getByTestId('guard-confirm').click();
        await page.getByTestId('confirm-guard-confirm').click();
        await page.getByTestId('guarded').waitFor(long);
        out.guarded = await text('guarded');
        await snap('guarded');
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
