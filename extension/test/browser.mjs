// Debian's Chromium, headless, with the flags this closed network needs (no background
// networking, no component updates, no sync: their connections would be refused) and a fresh
// profile; every console error and page error is collected.
import {chromium} from 'playwright-core';
import {mkdtempSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';

export const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

export async function launch() {
    const profile = mkdtempSync(join(tmpdir(), 'unprune-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
        executablePath,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
        viewport: {width: 1400, height: 900}
    });
    const page = context.pages()[0] || (await context.newPage());
    const problems = [];
    page.on('console', msg => {
        if (msg.type() === 'error') {
            const where = msg.location() && msg.location().url ? ` (${msg.location().url})` : '';
            problems.push(`console: ${msg.text()}${where}`);
        }
    });
    page.on('pageerror', err => problems.push(`page error: ${err.message}`));
    return {browser: context, page, problems};
}
