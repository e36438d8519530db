// End to end in a real headless Chromium: a page served from another
// origin than the claimcheck server uploads through the client, with
// progress, confirms, redeems and compares; the same page from an origin
// the server does not allow fails and leaves nothing behind. Once with
// the server's own upload URLs (file storage), then with S3 (MinIO:
// TEST_S3_URL), Google Cloud Storage (fake-gcs-server: TEST_GCS_URL) and
// Azure Blob Storage (Azurite: TEST_AZURE_URL), where the PUT goes to the
// bucket with a presigned, V4 signed or SAS URL.
//
// The browser is the system's Chromium (CHROMIUM, else chromium or
// chromium-browser on PATH); without one the suite skips, saying so.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@claimcheck/client';
import { startServer, startStatic, importMap, findChromium } from './server.js';


const chromiumPath = findChromium();
const skip = chromiumPath ? false : 'no Chromium found (install the chromium package, or set CHROMIUM to its binary)';

// The page: the client, a 20 MB file made in the page, and the attacks a
// page of any site could try without the server's consent.
const page = `<!doctype html><meta charset="utf-8"><title>claimcheck upload</title>
${importMap}
<script type="module">
import { Client, isRef } from '@claimcheck/client';

function file(mb) {
  const data = new Uint8Array(mb << 20);
  let x = 2463534242;
  for (let i = 0; i < data.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; data[i] = x; }
  return new File([data], 'video.bin', { type: 'application/octet-stream' });
}

window.upload = async (server, ns, mb) => {
  const cc = new Client(server);
  const f = file(mb);
  const events = [];
  try {
    const ref = await cc.upload(ns, f, { onProgress: (e) => events.push(e) });
    const got = await (await cc.redeem(ref)).bytes();
    const want = new Uint8Array(await f.arrayBuffer());
    const same = got.length === want.length && got.every((b, i) => b === want[i]);
    let notFound;
    try { await cc.redeem('cc_AAAAAAAAAAAAAAAAAAAAAA'); } catch (e) { notFound = e.name + ' ' + e.code + ' ' + e.status; }
    // The rest of the API through CORS: a put with the API's headers
    // (offload sends Claimcheck-Digest), a JSON release, a delete.
    const v = await cc.offload(ns, { s: 'x'.repeat(60000) });
    const back = await cc.resolve(v);
    await cc.release(v, { consumer: 'web' });
    await cc.delete(v);
    const after = await cc.stat(v);
    const rest = isRef(v) + ' ' + back.s.length + ' ' + after.state + ' ' + after.delete_reason;
    return { ok: true, ref, same, events, notFound, rest };
  } catch (e) {
    return { ok: false, error: e.name + ': ' + e.message, events };
  }
};

// Requests a browser sends without a preflight: an upload init as
// text/plain, a release, a redeem (a read counts). In no-cors mode the
// page never sees an answer; the point is what the server did.
window.attack = async (server, ns, id) => {
  const init = JSON.stringify({ size: 1000000, sha256: '0'.repeat(64) });
  const out = [];
  for (const [url, opts] of [
    [server + '/v1/namespaces/' + ns + '/uploads', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: init }],
    [server + '/v1/claims/' + id + '/release', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{}' }],
    [server + '/v1/claims/' + id + '/release', { method: 'POST' }],
    [server + '/v1/claims/' + id, { method: 'GET' }],
  ]) {
    for (const mode of ['cors', 'no-cors']) {
      try { const r = await fetch(url, { ...opts, mode }); out.push(mode + ' ' + r.type + ' ' + r.status); }
      catch (e) { out.push(mode + ' ' + e.message); }
    }
  }
  return out;
};
window.ready = true;
</script>`;

let chromium;
let browser;

before(async () => {
  if (skip) return;
  ({ chromium } = await import('playwright-core'));
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
});

after(async () => {
  await browser?.close();
});

// scenario runs the allowed and the refused page against one server
// configuration (env: CLAIMCHECK_* settings).
function scenario(name, env, { putsTo }) {
  describe(name, { skip }, () => {
    let server;
    let allowed;
    let refused;
    let cc;
    before(async () => {
      allowed = await startStatic({ '/': page });
      refused = await startStatic({ '/': page });
      server = await startServer({ ...env, CLAIMCHECK_HTTP__CORS__ALLOWED_ORIGINS: allowed.origin });
      cc = new Client(server.url);
    });
    after(async () => {
      await server?.stop();
      await allowed?.stop();
      await refused?.stop();
    });

    async function open(origin) {
      const p = await browser.newPage();
      const puts = [];
      // The PUTs of direct uploads (not of claims put through the API).
      p.on('request', (r) => r.method() === 'PUT' && !r.url().includes('/claims') && puts.push(r.url()));
      await p.goto(origin + '/');
      await p.waitForFunction(() => window.ready === true);
      return { p, puts };
    }

    test('an allowed origin uploads 20 MB with progress, confirms, redeems the same bytes', async () => {
      const { p, puts } = await open(allowed.origin);
      const res = await p.evaluate(([s, ns]) => window.upload(s, ns, 20), [server.url, 'web']);
      await p.close();
      assert.ok(res.ok, res.error);
      assert.equal(res.same, true, 'redeemed bytes equal the file');
      assert.equal(res.ref.size, 20 << 20);
      const up = res.events.filter((e) => e.phase === 'uploading');
      assert.ok(res.events.some((e) => e.phase === 'hashing'), 'hashing progress');
      assert.ok(up.length >= 1, 'upload progress');
      for (let i = 1; i < up.length; i++) assert.ok(up[i].loaded >= up[i - 1].loaded, 'progress only grows');
      assert.deepEqual(up.at(-1), { phase: 'uploading', loaded: 20 << 20, total: 20 << 20 });
      assert.equal(res.notFound, 'NotFoundError not_found 404', 'the page reads error answers');
      assert.equal(res.rest, 'true 60000 deleted deleted', 'offload, resolve, release, delete, stat from the page');
      assert.equal(puts.length, 1, `one PUT: ${puts}`);
      assert.ok(puts[0].startsWith(putsTo(server)), `the PUT went to ${puts[0]}`);
      // The server agrees.
      const info = await cc.stat(res.ref);
      assert.equal(info.state, 'active');
      assert.equal(info.reads, 1);
    });

    test('an origin not allowed fails, and the server shows no side effect', async () => {
      const victim = await cc.put('victims', 'keep me');
      const before = (await cc.namespace('evil')).usage;
      const { p, puts } = await open(refused.origin);
      const res = await p.evaluate(([s, ns]) => window.upload(s, ns, 20), [server.url, 'evil']);
      assert.equal(res.ok, false);
      assert.match(res.error, /^UnavailableError/);
      const attacks = await p.evaluate(([s, ns, id]) => window.attack(s, ns, id), [server.url, 'evil', victim.id]);
      await p.close();
      assert.equal(puts.length, 0, 'nothing was sent to storage');
      // CORS mode fails in the page; no-cors gets an opaque answer: the
      // page learns nothing either way.
      for (const a of attacks) assert.match(a, /^(cors Failed to fetch|no-cors opaque 0)$/);
      assert.deepEqual((await cc.namespace('evil')).usage, before);
      assert.deepEqual(before, { used_bytes: 0, reserved_bytes: 0, active_claims: 0, pending_claims: 0, finished_claims: 0 });
      const info = await cc.stat(victim);
      assert.equal(info.state, 'active');
      assert.equal(info.reads, 0, 'no cross-site read counted');
      assert.equal(info.releases, 0, 'no cross-site release');
    });
  });
}

scenario('file storage: the server receives the PUT', {}, { putsTo: (server) => server.url + '/v1/uploads/' });

const s3 = process.env.TEST_S3_URL;
if (s3) {
  const endpoint = new URL(s3).searchParams.get('endpoint');
  scenario(
    'S3 storage (MinIO): the PUT goes to the bucket',
    {
      CLAIMCHECK_STORAGE: s3, CLAIMCHECK_STORAGE_SHARED: 'true',
      CLAIMCHECK_LIFECYCLE: 'off', // the bucket is shared with other suites
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
      AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    },
    { putsTo: () => endpoint + '/' },
  );
} else {
  test('S3 storage (MinIO)', { skip: 'TEST_S3_URL not set (scripts/minio.sh start DIR prints it)' }, () => {});
}

// GCS: a V4 signed URL. fake-gcs-server answers CORS from a server-wide
// setting (scripts/fakegcs.sh allows the signed headers); the server
// still writes its bucket rule (bucket_cors: manage).
const gcs = process.env.TEST_GCS_URL;
if (gcs) {
  const endpoint = new URL(gcs.replace(/^gs:/, 'http:')).searchParams.get('endpoint');
  scenario(
    'Google Cloud Storage (fake-gcs-server): the PUT goes to the bucket',
    { CLAIMCHECK_STORAGE: gcs, CLAIMCHECK_STORAGE_SHARED: 'true', CLAIMCHECK_LIFECYCLE: 'off', CLAIMCHECK_BUCKET_CORS: 'manage' },
    { putsTo: () => endpoint + '/' },
  );
} else {
  test('Google Cloud Storage (fake-gcs-server)', { skip: 'TEST_GCS_URL not set (scripts/fakegcs.sh start DIR prints it)' }, () => {});
}

// Azure: a SAS URL. Azurite, like Azure, refuses a browser's preflight
// until the account has a CORS rule for the page's origin: the server
// writes it at start (bucket_cors: manage).
const azure = process.env.TEST_AZURE_URL;
const azureConn = process.env.AZURE_STORAGE_CONNECTION_STRING;
if (azure && azureConn) {
  const endpoint = /BlobEndpoint=([^;]+)/.exec(azureConn)[1].replace(/\/$/, '');
  scenario(
    'Azure Blob Storage (Azurite): the PUT goes to the container',
    { CLAIMCHECK_STORAGE: azure, CLAIMCHECK_STORAGE_SHARED: 'true', CLAIMCHECK_BUCKET_CORS: 'manage', AZURE_STORAGE_CONNECTION_STRING: azureConn },
    { putsTo: () => endpoint + '/' },
  );
} else {
  test('Azure Blob Storage (Azurite)', { skip: 'TEST_AZURE_URL not set (scripts/azurite.sh start DIR prints it)' }, () => {});
}
