// Two steps of lab/build.sh's argocd-ui-* components, which build an Argo CD release's UI from the
// ui/ folder of its Go module with argo-ui from ../shared/third_party/argo-ui/<commit>/:
//
//   node lab/argocd-ui.mjs pin DIR PINNED ARGO_UI
//       checks that the release pins argo-ui at the commit PINNED (yarn.lock's resolved commit, or
//       package.json's spec with pnpm), then points DIR/package.json's argo-ui dependency at the
//       folder ARGO_UI (file:), the one change made to the release's sources; the release's lockfile
//       is kept beside as <lockfile>.release.
//   node lab/argocd-ui.mjs check DIR ARGO_UI
//       after the install: every package is the version the release's lockfile names. yarn: except
//       argo-ui and what argo-ui's own package.json asks that the lockfile lacked (printed); entries
//       yarn dropped as unused are counted. pnpm: every package of the release's lockfile is still
//       there at its version; what the install added (for another argo-ui) is printed. Anything else
//       fails the build.
import {copyFileSync, existsSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';

// lockfile reads a yarn v1 lockfile into pattern -> version ("argo-ui@git+…" -> "1.0.0").
function lockfile(file) {
    const entries = new Map();
    let patterns = null;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (line.startsWith('#') || line.trim() === '') {
            continue;
        }
        if (!line.startsWith(' ')) {
            patterns = line
                .replace(/:$/, '')
                .split(', ')
                .map(p => p.replace(/^"|"$/g, ''));
            continue;
        }
        const m = /^ {2}version "(.*)"$/.exec(line);
        if (m && patterns) {
            patterns.forEach(p => entries.set(p, m[1]));
        }
    }
    return entries;
}

function fail(message) {
    console.error(`lab/argocd-ui.mjs: ${message}`);
    process.exit(1);
}

// pnpmPackages reads the package keys of a pnpm v9 lockfile's packages section ("react@19.2.6").
function pnpmPackages(file) {
    const keys = new Set();
    let inPackages = false;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (/^\S/.test(line)) {
            inPackages = line === 'packages:';
            continue;
        }
        const m = /^ {2}(\S.*):$/.exec(line);
        if (inPackages && m) {
            keys.add(m[1].replace(/^'|'$/g, ''));
        }
    }
    return keys;
}

const [cmd, dir, ...args] = process.argv.slice(2);
const pkgFile = join(dir, 'package.json');
const pnpm = existsSync(join(dir, 'pnpm-lock.yaml'));
const lockFile = join(dir, pnpm ? 'pnpm-lock.yaml' : 'yarn.lock');
const releaseLock = lockFile + '.release';

if (cmd === 'pin') {
    const [commit, argoUI] = args;
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
    if (!pkg.dependencies || !pkg.dependencies['argo-ui']) {
        fail(`${pkgFile} has no argo-ui dependency`);
    }
    const pinned = pnpm
        ? /#([0-9a-f]{40})$/.exec(pkg.dependencies['argo-ui'])
        : /^"?argo-ui@[^\n]*\n {2}version "[^"]*"\n {2}resolved "[^"#]*#([0-9a-f]{40})"/m.exec(readFileSync(lockFile, 'utf8'));
    if (!pinned || pinned[1] !== commit) {
        fail(`the release pins argo-ui at ${pinned ? pinned[1] : 'no commit'} (${pnpm ? pkgFile : lockFile}), the lab's file names ${commit}`);
    }
    pkg.dependencies['argo-ui'] = `file:${argoUI}`;
    writeFileSync(pkgFile, JSON.stringify(pkg, null, 2) + '\n');
    copyFileSync(lockFile, releaseLock);
} else if (cmd === 'check' && pnpm) {
    const before = pnpmPackages(releaseLock);
    const after = pnpmPackages(lockFile);
    const missing = [...before].filter(k => !after.has(k) && !k.startsWith('argo-ui@'));
    const added = [...after].filter(k => !before.has(k) && !k.startsWith('argo-ui@'));
    if (missing.length > 0) {
        fail(`the install lacks packages of the release's lockfile (another version was resolved): ${missing.join(', ')}`);
    }
    console.error(
        `lab/argocd-ui.mjs: every package of the release's lockfile at its version; added for argo-ui ${args[0]}: ${added.length ? added.join(', ') : 'nothing'}`
    );
} else if (cmd === 'check') {
    const [argoUI] = args;
    const before = lockfile(releaseLock);
    const after = lockfile(lockFile);
    const argoDeps = JSON.parse(readFileSync(join(argoUI, 'package.json'), 'utf8')).dependencies || {};
    const asked = new Set(Object.entries(argoDeps).map(([name, range]) => `${name}@${range}`));
    const problems = [];
    const fresh = [];
    for (const [pattern, version] of after) {
        if (pattern.startsWith('argo-ui@')) {
            continue;
        }
        if (before.has(pattern)) {
            if (before.get(pattern) !== version) {
                problems.push(`${pattern}: ${version}, the release's lockfile says ${before.get(pattern)}`);
            }
        } else if (asked.has(pattern)) {
            fresh.push(`${pattern} -> ${version}`);
        } else {
            problems.push(`${pattern} -> ${version} is not in the release's lockfile`);
        }
    }
    const dropped = [...before.keys()].filter(p => !after.has(p) && !p.startsWith('argo-ui@')).length;
    if (problems.length > 0) {
        fail(`the install differs from the release's lockfile:\n  ${problems.join('\n  ')}`);
    }
    console.error(
        `lab/argocd-ui.mjs: every package as the release's lockfile says; resolved for argo-ui's package.json, ` +
            `which the lockfile lacked: ${fresh.length ? fresh.join(', ') : 'nothing'}; ${dropped} unused lockfile entries dropped by yarn`
    );
} else {
    fail(`usage: node lab/argocd-ui.mjs pin DIR PINNED ARGO_UI | check DIR ARGO_UI`);
}
