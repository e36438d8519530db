// A real `claimcheck serve` for the console's suite: auth on, two tenants
// (acme with orders and invoices, globex with payroll), an admin key of
// each made offline with `claimcheck keys create` before the server
// starts, on a free port of 127.0.0.1, with its data in a temporary
// directory removed at stop. The binary is CLAIMCHECK_TEST_BIN, else
// built once (clients/js/test/server.js).

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { binary } from '../../../../clients/js/test/server.js';

const config = `
tenants:
  acme: { quota: { bytes: 1GiB } }
  globex: { quota: { bytes: 1GiB } }
namespaces:
  orders:
    tenant: acme
    quota: { bytes: 64MiB, claims: 1000 }
    ttl: { max_age: 24h }
  invoices: { tenant: acme }
  payroll: { tenant: globex }
subscriptions:
  allow_loopback_targets: true
  settle: 50ms
  interval: 50ms
  backoff_min: 300ms
  backoff_max: 1s
`;

/**
 * Starts serve; resolves to {url, keys: {acme, globex}, stop()}. extra
 * is more YAML appended to the config (a console switch).
 */
export async function startServe(extra = '') {
  const dir = mkdtempSync(join(tmpdir(), 'claimcheck-console-'));
  const cfg = join(dir, 'claimcheck.yaml');
  writeFileSync(cfg, config + extra);
  const data = join(dir, 'data');
  const env = { PATH: process.env.PATH, HOME: process.env.HOME };
  const key = (tenant) => execFileSync(binary(), ['keys', 'create', '--config', cfg, '--data', data, '--tenant', tenant, '--role', 'admin'],
    { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const keys = { acme: key('acme'), globex: key('globex') };
  const child = spawn(binary(), ['serve', '--config', cfg, '--data', data, '--listen', '127.0.0.1:0', '--auth'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in 60s:\n${log}`)), 60_000);
    child.stderr.on('data', (b) => {
      log += b;
      const m = /msg="claimcheck serving" url=(\S+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`serve exited with ${code}:\n${log}`)); });
  });
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return {
    url, keys, log: () => log,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An API caller with one tenant's key, for the suite's own set-up and checks. */
export function caller(url, token) {
  return async function call(method, path, { body, headers = {}, json } = {}) {
    const h = { Authorization: 'Bearer ' + token, ...headers };
    if (json !== undefined) { h['Content-Type'] = 'application/json'; body = JSON.stringify(json); }
    const r = await fetch(url + path, { method, headers: h, body });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return (r.headers.get("content-type") ?? "").includes("json") && text ? JSON.parse(text) : text;
  };
}
