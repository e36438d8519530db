// A real `claimcheck serve` for the tests: built from this repository
// (or CLAIMCHECK_TEST_BIN, which scripts/test.sh builds once), on a free port
// of 127.0.0.1, with its data in a temporary directory removed at stop.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const jsRoot = join(repoRoot, 'clients', 'js');

let built;

/**
 * The system's Chromium: CHROMIUM, else chromium or chromium-browser on
 * PATH; undefined when there is none (the browser suites then skip).
 */
export function findChromium() {
  if (process.env.CHROMIUM && existsSync(process.env.CHROMIUM)) return process.env.CHROMIUM;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    for (const name of ['chromium', 'chromium-browser']) {
      if (dir && existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return undefined;
}

// binary returns the claimcheck binary, building it once per process.
export function binary() {
  if (process.env.CLAIMCHECK_TEST_BIN) return process.env.CLAIMCHECK_TEST_BIN;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), 'claimcheck-js-bin-'));
    built = join(dir, 'claimcheck');
    execFileSync('go', ['build', '-o', built, './cmd/claimcheck'], { cwd: repoRoot, stdio: 'inherit' });
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return built;
}

/**
 * Starts serve. env holds CLAIMCHECK_* settings (the CORS origins, the
 * storage). Resolves to {url, stop, log()}.
 */
export async function startServer(env = {}) {
  const data = mkdtempSync(join(tmpdir(), 'claimcheck-js-data-'));
  const child = spawn(binary(), ['serve', '--data', data, '--listen', '127.0.0.1:0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in 60s:\n${log}`)), 60_000);
    child.stderr.on('data', (b) => {
      log += b;
      const m = /msg="claimcheck serving" url=(\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${log}`));
    });
  });
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return {
    url,
    log: () => log,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(data, { recursive: true, force: true });
    },
  };
}

const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };

/**
 * A static server on a free port of 127.0.0.1, another origin than the
 * claimcheck server: it serves files under clients/js (the client and
 * its node_modules) and the pages given as {path: content}, HTML unless
 * the path ends in .js.
 */
export async function startStatic(pages = {}) {
  const srv = createServer(async (req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (pages[path] !== undefined) {
      const ext = path.includes('.') ? path.slice(path.lastIndexOf('.')) : '.html';
      res.writeHead(200, { 'Content-Type': types[ext] ?? types['.html'] });
      res.end(pages[path]);
      return;
    }
    const file = join(jsRoot, path);
    if (!file.startsWith(jsRoot + '/') || !existsSync(file) || (!path.startsWith('/src/') && !path.startsWith('/node_modules/@noble/'))) {
      res.writeHead(404).end();
      return;
    }
    const ext = path.slice(path.lastIndexOf('.'));
    res.writeHead(200, { 'Content-Type': types[ext] ?? 'application/octet-stream' });
    res.end(await readFile(file));
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${srv.address().port}`,
    stop: () => new Promise((resolve) => srv.close(resolve)),
  };
}

/** The import map that lets a page import the client and its hash library. */
export const importMap = `<script type="importmap">{"imports":{
  "@claimcheck/client":"/src/index.js",
  "@noble/hashes/sha2":"/node_modules/@noble/hashes/esm/sha2.js",
  "@noble/hashes/crypto":"/node_modules/@noble/hashes/esm/crypto.js"}}</script>`;
