// The package as npm users get it: `npm pack` writes the tarball, which
// installs into a new project with its dependencies (the lockfile's
// versions, from npm's cache, offline: scripts/js-test.sh has just filled
// it with npm ci); the
// README's tour (its ```js tour blocks) runs there in Node against a real
// server, and a page bundled by esbuild from that project's
// node_modules puts and redeems in headless Chromium. package.json's
// version is the VERSION file's.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { randomBytes, createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startServer, startStatic, jsRoot, repoRoot, findChromium } from './server.js';

const chromiumPath = findChromium();
const noBrowser = chromiumPath ? false : 'no Chromium found (install the chromium package, or set CHROMIUM to its binary)';
const pkg = JSON.parse(readFileSync(join(jsRoot, 'package.json'), 'utf8'));

/** The blocks of a Markdown file whose info string is `lang tour`. */
export function tourBlocks(markdown, lang) {
  const out = [];
  const re = /^```+[ \t]*(\S+)[ \t]+tour[ \t]*\n([\s\S]*?)^```+[ \t]*$/gm;
  for (const m of markdown.matchAll(re)) if (m[1] === lang) out.push(m[2]);
  return out;
}

test('package.json and VERSION name one version', () => {
  const version = readFileSync(join(repoRoot, 'VERSION'), 'utf8').trim();
  assert.equal(pkg.version, version);
  const lock = JSON.parse(readFileSync(join(jsRoot, 'package-lock.json'), 'utf8'));
  assert.equal(lock.version, version, 'package-lock.json');
  assert.equal(lock.packages[''].version, version, 'package-lock.json packages[""]');
  assert.ok(pkg.license && pkg.engines?.node && pkg.exports?.['.'] && pkg.files?.length, 'license, engines, exports and files');
});

describe('the packed package', () => {
  let tmp;
  let project;
  let server;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'claimcheck-js-pack-'));
    execFileSync('npm', ['pack', '--pack-destination', tmp, '--loglevel=error'], { cwd: jsRoot, stdio: ['ignore', 'ignore', 'inherit'] });
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    assert.equal(tgz, `claimcheck-client-${pkg.version}.tgz`);
    project = join(tmp, 'app');
    mkdirSync(project);
    // A project that depends on the tarball, with a lockfile made of the
    // committed one's entries of the package's own dependencies, so npm
    // installs exactly those, from its cache and without network.
    const spec = `file:../${tgz}`;
    const lock = JSON.parse(readFileSync(join(jsRoot, 'package-lock.json'), 'utf8'));
    const packages = {
      '': { name: 'app', dependencies: { '@claimcheck/client': spec } },
      'node_modules/@claimcheck/client': {
        version: pkg.version, resolved: spec,
        integrity: 'sha512-' + createHash('sha512').update(readFileSync(join(tmp, tgz))).digest('base64'),
        license: pkg.license, dependencies: pkg.dependencies, engines: pkg.engines,
      },
    };
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path !== '' && !entry.dev) packages[path] = entry;
    }
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { '@claimcheck/client': spec } }));
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify({ name: 'app', lockfileVersion: 3, requires: true, packages }));
    execFileSync('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
    server = await startServer({ CLAIMCHECK_DEFAULTS__TTL__MAX_LIFETIME: '720h' });
  });
  after(async () => {
    await server?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('holds the sources, the types, the README and the LICENSE only', () => {
    const installed = join(project, 'node_modules', '@claimcheck', 'client');
    const top = readdirSync(installed).sort();
    assert.deepEqual(top, ['LICENSE', 'README.md', 'package.json', 'src', 'types']);
    // The package's LICENSE is the repository's, word for word.
    assert.equal(readFileSync(join(installed, 'LICENSE'), 'utf8'), readFileSync(join(jsRoot, '..', '..', 'LICENSE'), 'utf8'));
    for (const dep of Object.keys(pkg.dependencies)) {
      assert.ok(readdirSync(join(project, 'node_modules', ...dep.split('/'))).includes('package.json'), `${dep} installed`);
    }
  });

  test("the README's tour runs in Node", () => {
    const blocks = tourBlocks(readFileSync(join(jsRoot, 'README.md'), 'utf8'), 'js');
    assert.ok(blocks.length > 0, 'the README has ```js tour blocks');
    writeFileSync(join(project, 'big.json'), JSON.stringify(Array.from({ length: 20000 }, (_, i) => ({ id: i, title: `photo ${i}` }))));
    writeFileSync(join(project, 'video.mp4'), randomBytes((3 << 20) + 5));
    blocks.forEach((code, i) => {
      const file = join(project, `tour${i}.mjs`);
      writeFileSync(file, code.replaceAll('http://127.0.0.1:8080', server.url));
      execFileSync(process.execPath, [file], { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
    });
  });

  test('bundled by esbuild, it works in Chromium', { skip: noBrowser }, async () => {
    const { build } = await import('esbuild');
    const out = await build({
      stdin: {
        contents: `import { Client } from '@claimcheck/client';
window.roundTrip = async (url) => {
  const cc = new Client(url);
  const ref = await cc.put('web', new Blob(['hello from a bundle']));
  return new TextDecoder().decode(await (await cc.redeem(ref)).bytes());
};`,
        resolveDir: project, loader: 'js',
      },
      bundle: true, format: 'esm', platform: 'browser', write: false, logLevel: 'error',
    });
    const statics = await startStatic({ '/': '<!doctype html><script type="module" src="/app.js"></script>', '/app.js': out.outputFiles[0].text });
    const web = await startServer({ CLAIMCHECK_HTTP__CORS__ALLOWED_ORIGINS: statics.origin });
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(statics.origin + '/');
      await page.waitForFunction(() => typeof window.roundTrip === 'function');
      assert.equal(await page.evaluate((u) => window.roundTrip(u), web.url), 'hello from a bundle');
    } finally {
      await browser.close();
      await web.stop();
      await statics.stop();
    }
  });
});
