// Resumable uploads over tus against a real `claimcheck serve`, once on
// file storage and once on MinIO (TEST_S3_URL): the client's
// uploadResumable (tus-js-client) in Node, and Uppy's tus plugin in a
// headless Chromium, each sending 50 MB through a proxy that drops the
// connection in the middle of a PATCH (until the client asks for the
// offset). The client resumes from the server's offset; the redeemed
// bytes have the sha256 that was sent, and the namespace holds one claim
// of exactly that size. The client's own uploadResumable runs in
// Chromium too (20 MB), for its checksummed chunks through CORS.
//
// Uppy and tus-js-client reach the browser as one bundle made by esbuild
// at the start: tus-js-client's dependencies are CommonJS, which an
// import map cannot load.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, openAsBlob } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client, ChecksumMismatchError, InvalidArgumentError } from '@claimcheck/client';
import { startServer, startStatic, jsRoot, findChromium } from './server.js';

const MB50 = 50 << 20;

const chromiumPath = findChromium();
const noBrowser = chromiumPath ? false : 'no Chromium found (install the chromium package, or set CHROMIUM to its binary)';

/**
 * A proxy in front of the server that records "METHOD Upload-Offset" of
 * each request and, when dropAfter is set, drops PATCHes after that many
 * bytes of their body until the client sends a HEAD: both connections
 * are destroyed, so the client sees its request fail without an answer
 * and the server a short body. Until the HEAD, not just once: Chromium
 * sends a request again by itself when a reused connection breaks before
 * the answer, and the tus client must be the one that sees the failure.
 */
async function startDropProxy(target) {
  const t = new URL(target);
  const state = { log: [], dropAfter: 0, drops: 0, patches: 0, checksums: 0 };
  const srv = createServer((req, res) => {
    state.log.push(`${req.method} ${req.headers['upload-offset'] ?? ''}`.trim());
    let drop = 0;
    if (req.method === 'HEAD') state.dropAfter = 0;
    if (req.method === 'PATCH') {
      state.patches++;
      if (/^sha256 [A-Za-z0-9+/]{43}=$/.test(req.headers['upload-checksum'] ?? '')) state.checksums++;
      drop = state.dropAfter;
    }
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.rawHeaders);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    let seen = 0;
    req.on('data', (b) => {
      if (drop && (seen += b.length) >= drop) {
        drop = 0;
        state.drops++;
        up.destroy();
        req.socket.destroy();
        return;
      }
      if (!up.write(b)) {
        req.pause();
        up.once('drain', () => req.resume());
      }
    });
    req.on('end', () => up.end());
    req.on('error', () => up.destroy());
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    state,
    take() {
      const l = state.log;
      state.log = [];
      return l;
    },
    stop: () => new Promise((resolve) => {
      srv.closeAllConnections();
      srv.close(resolve);
    }),
  };
}

// The browser page: Uppy with its tus plugin uploads a 50 MB file made in
// the page, with its sha256 in the metadata, and keeps the Claimcheck-Ref
// header of the answers.
const bundleEntry = `
import Uppy from '@uppy/core';
import Tus from '@uppy/tus';
import { Client } from '@claimcheck/client';

function file(mb) {
  const data = new Uint8Array(mb << 20);
  let x = 2463534242;
  for (let i = 0; i < data.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; data[i] = x; }
  return new File([data], 'video.bin', { type: 'application/octet-stream' });
}

function hex(buf) {
  return [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

window.upload = async (endpoint, mb) => {
  const f = file(mb);
  const sha256 = hex(await crypto.subtle.digest('SHA-256', await f.arrayBuffer()));
  let ref;
  const uppy = new Uppy().use(Tus, {
    endpoint,
    chunkSize: 16 << 20,
    retryDelays: [500, 1000, 2000, 4000, 8000],
    onAfterResponse: (req, res) => {
      const v = res.getHeader('Claimcheck-Ref');
      if (v) ref = v;
    },
  });
  uppy.addFile({ name: f.name, type: f.type, data: f, meta: { sha256 } });
  let progress = 0;
  uppy.on('upload-progress', () => progress++);
  const result = await uppy.upload();
  const failed = result.failed?.[0];
  return { ok: !failed, error: failed ? String(failed.error?.message ?? failed.error) : undefined, sha256, ref, progress };
};
// The client's own uploadResumable, for its checksummed chunks through
// CORS (Upload-Checksum is in the preflight's allowed headers).
window.ccUpload = async (server, ns, mb) => {
  const f = file(mb);
  let progress = 0;
  try {
    const ref = await new Client(server).uploadResumable(ns, f, { onProgress: () => progress++ });
    return { ok: true, ref, sha256: hex(await crypto.subtle.digest('SHA-256', await f.arrayBuffer())), progress };
  } catch (e) {
    return { ok: false, error: e.name + ': ' + e.message };
  }
};
window.ready = true;
`;

const page = `<!doctype html><meta charset="utf-8"><title>claimcheck tus upload</title>
<script type="module" src="/uppy.js"></script>`;

async function bundle() {
  const { build } = await import('esbuild');
  const out = await build({
    stdin: { contents: bundleEntry, resolveDir: jsRoot, loader: 'js' },
    bundle: true, format: 'esm', platform: 'browser', write: false, logLevel: 'error',
    external: ['node:*'], // the client's Node-only branches
  });
  return out.outputFiles[0].text;
}

let browser;
let uppyBundle;

before(async () => {
  if (noBrowser) return;
  const { chromium } = await import('playwright-core');
  [browser, uppyBundle] = await Promise.all([chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] }), bundle()]);
});

after(async () => {
  await browser?.close();
});

const sha256hex = (b) => createHash('sha256').update(b).digest('hex');

function scenario(name, env) {
  describe(name, () => {
    let server;
    let proxy;
    let statics;
    let direct;
    let tmp;
    before(async () => {
      tmp = mkdtempSync(join(tmpdir(), 'claimcheck-js-tus-'));
      statics = await startStatic({ '/': page, '/uppy.js': uppyBundle ?? '' });
      server = await startServer({ ...env, CLAIMCHECK_HTTP__CORS__ALLOWED_ORIGINS: statics.origin });
      proxy = await startDropProxy(server.url);
      direct = new Client(server.url);
    });
    after(async () => {
      await proxy?.stop();
      await server?.stop();
      await statics?.stop();
      rmSync(tmp, { recursive: true, force: true });
    });

    // redeemed checks the claim from the server directly: its bytes have
    // the sha256 that was sent, and it is the namespace's only claim.
    async function redeemed(ns, ref, sha256, size = MB50) {
      assert.equal(ref.size, size);
      const got = await (await direct.redeem(ref)).bytes();
      assert.equal(got.length, size);
      assert.equal(sha256hex(got), sha256, 'redeemed bytes equal the uploaded ones');
      // The quota figures; finished_claims counts whatever uploads of the
      // namespace were given up before.
      const { used_bytes, reserved_bytes, active_claims, pending_claims } = (await direct.namespace(ns)).usage;
      assert.deepEqual({ used_bytes, reserved_bytes, active_claims, pending_claims },
        { used_bytes: size, reserved_bytes: 0, active_claims: 1, pending_claims: 0 });
    }

    test('Node: uploadResumable sends 50 MB, is cut once mid-way, resumes from the offset', async () => {
      const data = randomBytes(MB50);
      const path = join(tmp, 'in.bin');
      writeFileSync(path, data);
      proxy.state.dropAfter = 5 << 20;
      proxy.take();
      const patchesBefore = proxy.state.patches;
      const events = [];
      const ref = await new Client(proxy.url).uploadResumable('node', await openAsBlob(path), { onProgress: (e) => events.push(e) });
      const log = proxy.take();
      assert.equal(proxy.state.drops, 1, `one drop: ${log}`);
      assert.deepEqual(log.slice(0, 3), ['POST', 'PATCH 0', 'HEAD'], 'the cut PATCH is followed by a HEAD for the offset');
      assert.match(log[3], /^PATCH \d+$/, `resumed from the server's offset: ${log}`);
      assert.equal(proxy.state.checksums, proxy.state.patches, 'every PATCH carries Upload-Checksum: sha256');
      assert.ok(proxy.state.patches - patchesBefore >= 4, 'sent in 16 MiB chunks');
      assert.equal(ref.size, MB50);
      assert.equal(ref.digest, 'sha256:' + sha256hex(data));
      const up = events.filter((e) => e.phase === 'uploading');
      assert.ok(events.some((e) => e.phase === 'hashing'));
      assert.deepEqual(up.at(-1), { phase: 'uploading', loaded: MB50, total: MB50 });
      await redeemed('node', ref, sha256hex(data));
    });

    test('Node: an upload stopped by its signal continues from its URL in a later call', async () => {
      const data = randomBytes(12 << 20);
      const blob = new Blob([data]);
      const stop = new AbortController();
      let url;
      proxy.take();
      const first = new Client(proxy.url).uploadResumable('later', blob, {
        chunkSize: 4 << 20,
        signal: stop.signal,
        onUploadUrl: (u) => { url = u; },
        onProgress: (e) => { if (e.phase === 'uploading' && e.loaded >= 4 << 20) stop.abort(new Error('stopped')); },
      });
      await assert.rejects(first, /stopped/);
      proxy.take();
      const ref = await new Client(proxy.url).uploadResumable('later', blob, { chunkSize: 4 << 20, uploadUrl: url });
      const log = proxy.take();
      assert.equal(log[0], 'HEAD', `the second call asks for the offset first: ${log}`);
      assert.ok(!log.includes('POST') && !log.includes('PATCH 0'), `no new upload, no byte of the first chunk again: ${log}`);
      assert.equal(ref.digest, 'sha256:' + sha256hex(data));
      const got = await (await direct.redeem(ref)).bytes();
      assert.equal(sha256hex(got), sha256hex(data));
    });

    test('a payload that is not the declared sha256 is refused, nothing stored', async () => {
      // The quota figures; the refused upload is a claim that finished.
      const quota = ({ finished_claims, ...rest }) => ({ ...rest, finished: finished_claims ?? 0 });
      const before = quota((await direct.namespace('node')).usage);
      const blob = new Blob([randomBytes(100 << 10)]);
      await assert.rejects(direct.uploadResumable('node', blob, { digest: 'sha256:' + '0'.repeat(64) }), ChecksumMismatchError);
      assert.deepEqual(quota((await direct.namespace('node')).usage), { ...before, finished: before.finished + 1 });
    });

    // inBrowser runs window[name](...args) in a fresh page of the other
    // origin with the proxy armed to drop the next PATCH mid-way, and
    // checks that the page's client got over the drop by asking for the
    // offset. It answers the page's result and the proxy's counts.
    async function inBrowser(name, args) {
      const before = { ...proxy.state };
      proxy.state.dropAfter = 5 << 20;
      proxy.take();
      const p = await browser.newPage();
      try {
        await p.goto(statics.origin + '/');
        await p.waitForFunction(() => window.ready === true);
        const res = await p.evaluate(([n, a]) => window[n](...a), [name, args]);
        const log = proxy.take();
        assert.ok(res.ok, res.error);
        assert.ok(proxy.state.drops > before.drops, `dropped: ${log}`);
        assert.ok(log.includes('HEAD'), `the client asked for the offset after the drop: ${log}`);
        return { res, patches: proxy.state.patches - before.patches, checksums: proxy.state.checksums - before.checksums };
      } finally {
        await p.close();
      }
    }

    test('Chromium: Uppy with @uppy/tus sends 50 MB, is cut mid-way, resumes', { skip: noBrowser }, async () => {
      const { res } = await inBrowser('upload', [`${proxy.url}/v1/namespaces/web/tus`, 50]);
      assert.ok(res.ref, 'the page read Claimcheck-Ref (exposed by CORS)');
      const ref = JSON.parse(res.ref);
      assert.equal(ref.size, MB50);
      assert.equal(ref.digest, 'sha256:' + res.sha256);
      assert.ok(res.progress > 1, 'progress events');
      await redeemed('web', ref, res.sha256);
    });

    test('Chromium: the client\'s uploadResumable sends 20 MB in checksummed chunks, cut mid-way, resumes', { skip: noBrowser }, async () => {
      const { res, patches, checksums } = await inBrowser('ccUpload', [proxy.url, 'webcc', 20]);
      assert.equal(checksums, patches, 'every PATCH carries Upload-Checksum');
      assert.equal(res.ref.digest, 'sha256:' + res.sha256);
      await redeemed('webcc', res.ref, res.sha256, 20 << 20);
    });
  });
}

test('uploadResumable refuses what it cannot send, naming it', async () => {
  const cc = new Client('http://127.0.0.1:1');
  await assert.rejects(cc.uploadResumable('ns', 'not a blob'), (e) => e instanceof InvalidArgumentError && /want a Blob or File/.test(e.message));
  await assert.rejects(cc.uploadResumable('ns', new Blob(['x']), { digest: 'md5:00' }), (e) => e instanceof InvalidArgumentError && /digest "md5:00"/.test(e.message));
});

scenario('tus on file storage', {});

const s3 = process.env.TEST_S3_URL;
if (s3) {
  scenario('tus on S3 storage (MinIO)', {
    CLAIMCHECK_STORAGE: s3, CLAIMCHECK_STORAGE_SHARED: 'true',
    CLAIMCHECK_LIFECYCLE: 'off', // the bucket is shared with other suites
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
  });
} else {
  test('tus on S3 storage (MinIO)', { skip: 'TEST_S3_URL not set (scripts/minio.sh start DIR prints it)' }, () => {});
}
