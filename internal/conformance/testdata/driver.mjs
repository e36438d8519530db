// One path of the conformance matrix with the JavaScript client of this
// repository (clients/js/src, its node_modules from `npm ci` there):
//   node driver.mjs SERVER_URL API_KEY NAMESPACE PATH PAYLOAD_FILE
// PATH is put, redeem, direct, tus, release or events (the client offers
// no ranged redeem). The driver checks what it can itself (the bytes it
// redeems, a refused wrong upload) and prints the claim's ref JSON as its
// last line for the test to check from Go. Exit 0: done; 1: failed, with
// the reason on stderr.

import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { Client } from '../../../clients/js/src/node.js';

const [url, apiKey, ns, path, file] = process.argv.slice(2);
const data = new Uint8Array(await readFile(file));
const cc = new Client(url, { apiKey });

function same(a, b) {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

async function putAndRedeem() {
  const ref = await cc.put(ns, data, { contentType: 'application/octet-stream' });
  const got = await (await cc.redeem(ref)).bytes();
  if (!same(got, data)) throw new Error(`redeemed ${got.length} bytes that differ from the ${data.length} put`);
  return ref;
}

// A direct upload declared with the payload's sha256 whose first PUT
// sends other bytes of the same size: the storage or the confirm must
// refuse them; the same idempotency key then continues that upload with
// the right bytes.
async function direct() {
  const digest = 'sha256:' + createHash('sha256').update(data).digest('hex');
  const key = `conformance-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const wrong = data.map((b) => b ^ 0xff);
  let refused = false;
  try {
    await cc.upload(ns, new Blob([wrong]), { digest, idempotencyKey: key });
  } catch {
    refused = true;
  }
  if (!refused) throw new Error('an upload of other bytes than its sha256 was confirmed');
  const ref = await cc.upload(ns, new Blob([data]), { idempotencyKey: key });
  const got = await (await cc.redeem(ref)).bytes();
  if (!same(got, data)) throw new Error('redeemed bytes differ from the uploaded ones');
  return ref;
}

async function tus() {
  const ref = await cc.uploadResumable(ns, new Blob([data]), { contentType: 'application/octet-stream' });
  const got = await (await cc.redeem(ref)).bytes();
  if (!same(got, data)) throw new Error('redeemed bytes differ from the uploaded ones');
  return ref;
}

async function release() {
  const ref = await cc.put(ns, data);
  await cc.release(ref);
  const info = await cc.stat(ref);
  if (info.releases !== 1) throw new Error(`after a release the claim has releases=${info.releases}`);
  return ref;
}

// The claim's created event on the tenant's stream, read from the
// oldest event retained so that an event before the stream opened counts.
async function events() {
  const ref = await cc.put(ns, data);
  const signal = AbortSignal.timeout(30000);
  for await (const ev of cc.events({ types: ['created'], namespaces: [ns], lastEventId: 'oldest', signal })) {
    if (ev.claim_id === ref.id) return ref;
  }
  throw new Error(`no created event of ${ref.id} on the stream within 30s`);
}

const paths = { put: putAndRedeem, redeem: putAndRedeem, direct, tus, release, events };
try {
  if (!paths[path]) throw new Error(`unknown path ${path}`);
  const ref = await paths[path]();
  console.log(JSON.stringify(ref));
} catch (e) {
  console.error(`${path}: ${e?.stack ?? e}`);
  process.exit(1);
}
