// Builds the extension bundle (dist/extension-unprune.js, and dist/extension-unprune.tar with the
// resources/ layout argocd-extension-installer extracts into /tmp/extensions/, with its checksum
// file), and the host page the browser tests serve through argocd-server (dist/host/).
//
// The version comes from $UNPRUNE_VERSION (the release's), else `git describe`.
import {build} from 'esbuild';
import {execFileSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import {copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');

function version() {
    if (process.env.UNPRUNE_VERSION) {
        return process.env.UNPRUNE_VERSION;
    }
    try {
        return execFileSync('git', ['describe', '--tags', '--always', '--dirty'], {cwd: here, encoding: 'utf8'}).trim();
    } catch (e) {
        return 'dev';
    }
}

const v = version();
rmSync(dist, {recursive: true, force: true});
mkdirSync(dist, {recursive: true});

const bundle = join(dist, 'extension-unprune.js');
await build({
    entryPoints: [join(here, 'src/index.js')],
    outfile: bundle,
    bundle: true,
    format: 'iife',
    target: 'es2019',
    define: {__UNPRUNE_VERSION__: JSON.stringify(v)},
    banner: {js: `// unprune's Argo CD UI extension ${v} (Apache-2.0). It uses the UI's own React (window.React).`},
    logLevel: 'warning'
});

// One host page per React the releases' UIs pin: dist/host (19, v3.6) and dist/host-react16
// (v2.14, v3.0). The extension bundle is the same for both.
for (const [dir, entry, alias] of [
    ['host', 'host/react19.js', {}],
    ['host-react16', 'host/react16.js', {react: 'react16', 'react-dom': 'react-dom16'}]
]) {
    mkdirSync(join(dist, dir), {recursive: true});
    await build({
        entryPoints: [join(here, entry)],
        outfile: join(dist, dir, 'unprune-host.js'),
        bundle: true,
        format: 'iife',
        target: 'es2019',
        minify: true,
        alias,
        define: {'process.env.NODE_ENV': '"production"'},
        logLevel: 'warning'
    });
    copyFileSync(join(here, 'host/host.html'), join(dist, dir, 'host.html'));
    copyFileSync(join(here, 'host/host.css'), join(dist, dir, 'unprune-host.css'));
}

// The installer's layout: resources/<dir>/extension-*.js. Reproducible: fixed owner and time.
const stage = join(dist, 'stage');
mkdirSync(join(stage, 'resources/unprune'), {recursive: true});
copyFileSync(bundle, join(stage, 'resources/unprune/extension-unprune.js'));
const tar = join(dist, 'extension-unprune.tar');
execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--format=ustar', '-C', stage, '-cf', tar, 'resources']);
rmSync(stage, {recursive: true, force: true});
const sum = createHash('sha256').update(readFileSync(tar)).digest('hex');
writeFileSync(join(dist, 'extension-unprune_checksums.txt'), `${sum}  extension-unprune.tar\n`);
console.log(`built unprune extension ${v}: ${bundle}, ${tar}, host pages in ${join(dist, 'host')} and ${join(dist, 'host-react16')}`);
