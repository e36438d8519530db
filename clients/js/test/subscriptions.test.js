// Subscriptions through the client against a real server (docs/HTTP.md,
// "Pushed events"): a receiver on 127.0.0.1 that refuses one claim's
// events; the other claim's arrive, the refused one is listed among the
// attempts (parked), retried once the receiver takes it, and a replay
// delivers the events again. Sequence numbers come back as strings.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Client } from '../src/node.js';
import { ClaimcheckError } from '../src/errors.js';
import { startServer } from './server.js';

let server;
let receiver;
let cc;
const refused = new Set();
/** @type {Record<string, number>} claim id: events taken */
const got = {};

before(async () => {
  server = await startServer({
    CLAIMCHECK_SUBSCRIPTIONS__ALLOW_LOOPBACK_TARGETS: 'true',
    CLAIMCHECK_SUBSCRIPTIONS__SETTLE: '50ms',
    CLAIMCHECK_SUBSCRIPTIONS__INTERVAL: '20ms',
    CLAIMCHECK_SUBSCRIPTIONS__BACKOFF_MIN: '100ms',
    CLAIMCHECK_SUBSCRIPTIONS__BACKOFF_MAX: '200ms',
  });
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const ce = JSON.parse(body);
      if (refused.has(ce.subject)) {
        res.writeHead(500).end();
        return;
      }
      got[ce.subject] = (got[ce.subject] ?? 0) + 1;
      res.writeHead(204).end();
    });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  cc = new Client(server.url);
});
after(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await server?.stop();
});

/** Polls cond every 20ms for up to 20s. */
async function until(what, cond) {
  const end = Date.now() + 20_000;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('subscriptions: create, attempts, retry, replay, list, delete', async () => {
  const { port } = /** @type {import('node:net').AddressInfo} */ (receiver.address());
  const sub = await cc.createSubscription({ id: 'js-hook', url: `http://127.0.0.1:${port}/hook`, types: ['created'], events_per_request: 1 });
  assert.equal(sub.id, 'js-hook');
  assert.match(sub.secret ?? '', /^whsec_/);
  assert.equal(typeof sub.cursor, 'string');
  const since = new Date();

  const bad = await cc.put('js-subs', 'refused');
  refused.add(bad.id);
  const good = await cc.put('js-subs', 'taken');
  await until("the other claim's event", () => got[good.id] === 1);
  await until('the refused event parked', async () => (await cc.subscriptionAttempts(sub.id)).attempts.length === 1);
  const { attempts } = await cc.subscriptionAttempts(sub.id, { limit: 10 });
  assert.equal(attempts[0].event.claim_id, bad.id);
  assert.equal(attempts[0].state, 'parked');
  assert.equal(typeof attempts[0].event.seq, 'string');

  refused.delete(bad.id);
  const { retried } = await cc.retrySubscription(sub.id);
  assert.equal(retried, 1);
  await until('the retried event', () => got[bad.id] === 1);

  const { cursor } = await cc.replaySubscription(sub.id, since);
  assert.equal(typeof cursor, 'string');
  await until('the replayed events', () => got[good.id] === 2 && got[bad.id] === 2);

  const page = await cc.subscriptions({ limit: 10 });
  assert.deepEqual(page.subscriptions.map((s) => s.id), ['js-hook']);
  assert.equal(page.subscriptions[0].secret, undefined);

  await cc.deleteSubscription(sub.id);
  await assert.rejects(cc.subscriptionAttempts(sub.id), (e) => e instanceof ClaimcheckError && e.status === 404);
  await assert.rejects(cc.createSubscription({ url: 'http://127.0.0.1:1/x', id: 'bad id' }), (e) => e instanceof ClaimcheckError && e.status === 400 && /id/.test(e.message));
});
