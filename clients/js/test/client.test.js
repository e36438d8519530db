// The client in Node against a real `claimcheck serve`.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

import {
  Client,
  ClaimcheckError,
  NotFoundError,
  GoneError,
  ChecksumMismatchError,
  TooLargeError,
  QuotaExceededError,
  InvalidArgumentError,
  UnavailableError,
  digestOf,
  isRef,
} from '@claimcheck/client';
import { startServer } from './server.js';

let server;
let cc;

before(async () => {
  server = await startServer({
    CLAIMCHECK_NAMESPACES__SMALL__MAX_SIZE: '1KiB',
    CLAIMCHECK_NAMESPACES__SMALL__THRESHOLD: '1KiB',
    CLAIMCHECK_NAMESPACES__TINY__QUOTA__BYTES: '100',
    CLAIMCHECK_NAMESPACES__LONG__TTL__MAX_LIFETIME: '720h',
  });
  cc = new Client(server.url);
});

after(async () => {
  await server?.stop();
});

const sha = (b) => 'sha256:' + createHash('sha256').update(b).digest('hex');

test('put, redeem, stat, release, delete', async () => {
  const data = randomBytes(200_000);
  const ref = await cc.put('orders', data, { contentType: 'application/x-test', labels: { team: 'web ui', 'a,b': 'c=d' }, consumers: 2 });
  assert.ok(isRef(ref));
  assert.equal(ref.size, data.length);
  assert.equal(ref.digest, sha(data));

  const p = await cc.redeem(ref);
  assert.equal(p.contentType, 'application/x-test');
  assert.deepEqual(Buffer.from(await p.bytes()), data);

  // By id and by JSON too.
  assert.deepEqual(Buffer.from(await (await cc.redeem(ref.id)).bytes()), data);
  assert.deepEqual(Buffer.from(await (await cc.redeem(JSON.stringify(ref))).bytes()), data);

  const info = await cc.stat(ref);
  assert.equal(info.state, 'active');
  assert.equal(info.reads, 3);
  assert.equal(info.consumers, 2);
  assert.deepEqual(info.labels, { team: 'web ui', 'a,b': 'c=d' });

  await cc.release(ref, { consumer: 'billing' });
  await cc.release(ref);
  assert.equal((await cc.stat(ref)).releases, 2);

  await cc.delete(ref);
  await assert.rejects(cc.redeem(ref), (e) => e instanceof GoneError && e.code === 'gone' && e.reason === 'deleted' && e.status === 410);
});

test('a stream body (Node)', async () => {
  const data = randomBytes(300_000);
  const body = new Blob([data]).stream();
  const ref = await cc.put('orders', body);
  assert.equal(ref.digest, sha(data));
});

test('redeem verifies: a stream that is cut or altered on the way errors at its end', async () => {
  const data = randomBytes(100_000);
  const ref = await cc.put('orders', data);
  // A fetch that damages the payload in transit, as a broken proxy would.
  const damaging = (damage) => async (url, init) => {
    const resp = await fetch(url, init);
    if (!String(url).includes('/v1/claims/') || (init?.method ?? 'GET') !== 'GET' || String(url).includes('/meta')) return resp;
    const whole = new Uint8Array(await resp.arrayBuffer());
    return new Response(damage(whole), { status: resp.status, headers: resp.headers });
  };
  for (const [name, damage] of [
    ['one byte flipped', (b) => { b[500] ^= 1; return b; }],
    ['cut short', (b) => b.subarray(0, b.length - 10)],
    ['longer', (b) => Buffer.concat([b, Buffer.from('x')])],
  ]) {
    const bad = new Client(server.url, { fetch: damaging(damage) });
    await assert.rejects((await bad.redeem(ref)).bytes(), ChecksumMismatchError, name);
    // Through the stream: every chunk may arrive, but the stream errors
    // instead of closing.
    const reader = (await bad.redeem(ref)).body.getReader();
    await assert.rejects(
      (async () => {
        for (;;) if ((await reader.read()).done) break;
      })(),
      ChecksumMismatchError,
      name,
    );
  }
  // A ref whose digest is not the claim's is refused before any byte.
  await assert.rejects(cc.redeem({ ...ref, digest: 'sha256:' + '0'.repeat(64) }), ChecksumMismatchError);
});

test('direct upload with progress, confirmed and redeemed', async () => {
  const data = randomBytes(3 << 20);
  const events = [];
  const ref = await cc.upload('media', new Blob([data], { type: 'video/mp4' }), { onProgress: (e) => events.push(e), labels: { from: 'node' } });
  assert.equal(ref.size, data.length);
  assert.equal(ref.digest, sha(data));
  const uploading = events.filter((e) => e.phase === 'uploading');
  assert.ok(events.some((e) => e.phase === 'hashing'), 'hashing events');
  assert.ok(uploading.length > 1, 'several upload progress events');
  for (let i = 1; i < uploading.length; i++) assert.ok(uploading[i].loaded >= uploading[i - 1].loaded, 'progress only grows');
  assert.deepEqual(uploading.at(-1), { phase: 'uploading', loaded: data.length, total: data.length });
  const p = await cc.redeem(ref);
  assert.equal(p.contentType, 'video/mp4');
  assert.deepEqual(Buffer.from(await p.bytes()), data);
  // The same upload again with the same idempotency key answers the same claim.
  const k = { idempotencyKey: 'job-1' };
  const a = await cc.upload('media', new Blob([data]), k);
  const b = await cc.upload('media', new Blob([data]), k);
  assert.equal(a.id, b.id);
});

test('offload and resolve JSON values against the namespace threshold', async () => {
  assert.equal(await cc.threshold('orders'), 50 * 1024);
  const small = { order: 42, items: ['a', 'b'] };
  assert.equal(await cc.offload('orders', small), small);
  assert.equal(await cc.resolve(small), small);
  const big = { order: 43, blob: 'x'.repeat(60_000) };
  const v = await cc.offload('orders', big);
  assert.ok(isRef(v));
  assert.deepEqual(await cc.resolve(v), big);
  assert.ok(isRef(await cc.offload('orders', small, { threshold: 10 })));
});

test('errors mirror the server codes', async () => {
  await assert.rejects(cc.redeem('cc_AAAAAAAAAAAAAAAAAAAAAA'), (e) => e instanceof NotFoundError && e instanceof ClaimcheckError && e.status === 404);
  await assert.rejects(cc.put('small', randomBytes(2000)), (e) => e instanceof TooLargeError && e.status === 413);
  // A Blob goes through node:http; its errors are the same.
  await assert.rejects(cc.put('small', new Blob([randomBytes(2000)])), (e) => e instanceof TooLargeError && /max_size|too large|exceeds/i.test(e.message));
  await assert.rejects(cc.upload('small', new Blob([randomBytes(2000)])), TooLargeError);
  await assert.rejects(cc.put('tiny', randomBytes(200)), (e) => e instanceof QuotaExceededError && e.status === 403);
  await assert.rejects(cc.put('Bad NS!', 'x'), (e) => e instanceof InvalidArgumentError);
  await assert.rejects(cc.put('orders', 'x', { digest: await digestOf('y') }), ChecksumMismatchError);
  await assert.rejects(cc.redeem('nonsense'), InvalidArgumentError);
  // No server there at all.
  const nobody = new Client('http://127.0.0.1:9');
  await assert.rejects(nobody.stat('cc_AAAAAAAAAAAAAAAAAAAAAA'), UnavailableError);
});

test('list a namespace by label and extend a claim up to max_lifetime', async () => {
  const mine = await cc.put('long', randomBytes(1000), { labels: { run: 'r-1' } });
  await cc.put('long', randomBytes(1000), { labels: { run: 'r-2' } });
  const page = await cc.list('long', { labels: { run: 'r-1' } });
  assert.deepEqual(page.claims.map((c) => c.ref.id), [mine.id]);
  assert.equal(page.next, undefined);

  const later = new Date(mine.expires_at * 1000 + 48 * 3600 * 1000);
  const info = await cc.extend(mine, { expiresAt: later });
  assert.equal(info.ref.expires_at, later.getTime() / 1000);
  const again = await cc.extend(mine, { by: '24h' });
  assert.equal(again.ref.expires_at, later.getTime() / 1000 + 24 * 3600);
  await assert.rejects(cc.extend(mine, { by: '8760h' }), (e) => {
    // The server's message names the operation already: said once.
    assert.ok(e instanceof InvalidArgumentError);
    assert.equal(e.message.split(`extend ${mine.id}:`).length, 2, e.message);
    return true;
  });
  await assert.rejects(cc.extend(mine, {}), InvalidArgumentError);
});
