// Trace context on the client's requests: the application's
// @opentelemetry/api when it has one, nothing when not. A recording
// server stands in for claimcheck: what is checked is what the client
// sends (the end-to-end test through a real server and Jaeger is the Go
// suite's TestTracingThroughJaeger).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';

import { Client, NotFoundError } from '@claimcheck/client';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** @type {import('node:http').Server} */
let srv;
/** @type {import('node:http').IncomingHttpHeaders[]} */
const seen = [];
let url = '';

before(async () => {
  srv = createServer((req, res) => {
    seen.push(req.headers);
    const body = JSON.stringify({ code: 'not_found', message: 'no such claim' });
    res.writeHead(404, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  const addr = /** @type {import('node:net').AddressInfo} */ (srv.address());
  url = `http://127.0.0.1:${addr.port}`;
});

after(() => srv.close());

const id = 'cc_0123456789abcdefghijkl';

/** @param {Client} c */
async function statHeaders(c) {
  await assert.rejects(c.stat(id), NotFoundError);
  return seen[seen.length - 1];
}

test('no trace headers without OpenTelemetry', async () => {
  // This package does not depend on @opentelemetry/api, and the test
  // environment does not have it: the dynamic import finds nothing.
  const h = await statHeaders(new Client(url));
  assert.equal(h.traceparent, undefined);
  assert.equal(h.baggage, undefined);
});

test("the application's OpenTelemetry API injects its context", async () => {
  const active = { span: TP };
  const api = {
    context: { active: () => active },
    propagation: {
      /** @type {(ctx: unknown, carrier: Headers, setter?: { set(c: Headers, k: string, v: string): void }) => void} */
      inject(ctx, carrier, setter) {
        assert.equal(ctx, active);
        setter?.set(carrier, 'traceparent', TP);
        setter?.set(carrier, 'baggage', 'tenant=acme');
      },
    },
  };
  const h = await statHeaders(new Client(url, { opentelemetry: api }));
  assert.equal(h.traceparent, TP);
  assert.equal(h.baggage, 'tenant=acme');
});

test('a failing propagator does not fail the request', async () => {
  const api = {
    context: { active: () => ({}) },
    propagation: {
      inject() {
        throw new Error('broken');
      },
    },
  };
  const h = await statHeaders(new Client(url, { opentelemetry: api }));
  assert.equal(h.traceparent, undefined);
});

test('opentelemetry: null never sends trace headers', async () => {
  const h = await statHeaders(new Client(url, { opentelemetry: null }));
  assert.equal(h.traceparent, undefined);
});
