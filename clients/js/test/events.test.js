// The live stream of events (GET /v1/events/stream) through the client's
// events() iterator, against a real server: it yields the events as they
// happen, and a new stream given the last id it yielded (Last-Event-ID)
// resumes after it, missing nothing that happened in between.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '../src/node.js';
import { startServer } from './server.js';

let server;
let cc;
before(async () => {
  server = await startServer();
  cc = new Client(server.url);
});
after(async () => {
  await server?.stop();
});

test('events() yields created events and resumes after Last-Event-ID', async () => {
  const ac = new AbortController();
  const stream = cc.events({ types: ['created'], namespaces: ['live'], signal: ac.signal });
  const first = await cc.put('live', 'one');
  await cc.put('other', 'not in the filter');
  const { value: e1 } = await stream.next();
  assert.equal(e1.kind, 'created');
  assert.equal(e1.claim_id, first.id);
  ac.abort();
  await stream.return(undefined);

  // While nobody listens.
  const second = await cc.put('live', 'two');
  const third = await cc.put('live', 'three');
  const ac2 = new AbortController();
  const resumed = cc.events({ types: ['created'], namespaces: ['live'], lastEventId: e1.id, signal: ac2.signal });
  const got = [];
  for await (const e of resumed) {
    got.push(e.claim_id);
    if (got.length === 2) break;
  }
  ac2.abort();
  assert.deepEqual(got, [second.id, third.id]);
});

test('events() throws the server\'s refusal of a filter', async () => {
  const stream = cc.events({ types: ['nope'] });
  await assert.rejects(stream.next(), (e) => e.code === 'invalid_argument' && /nope/.test(e.message));
});

test('events() skips a shutdown message and resumes with Last-Event-ID after its retry time', async () => {
  const first = '1795910484197391993';
  const second = '1795910484197391994';
  const lastIds = [];
  const { createServer } = await import('node:http');
  const fake = createServer((req, res) => {
    lastIds.push(req.headers['last-event-id'] ?? '');
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    if (lastIds.length === 1) {
      res.end(`retry: 1000\n\nid: ${first}\nevent: created\ndata: {"seq":"${first}","kind":"created"}\n\n` +
        'retry: 10\nevent: shutdown\ndata: {"reason":"server shutting down"}\n\n');
      return;
    }
    res.write(`id: ${second}\nevent: created\ndata: {"seq":"${second}","kind":"created"}\n\n`);
  });
  await new Promise((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const addr = /** @type {import('node:net').AddressInfo} */ (fake.address());
  const ac = new AbortController();
  const got = [];
  try {
    for await (const e of new Client(`http://127.0.0.1:${addr.port}`).events({ signal: ac.signal })) {
      got.push(e.seq);
      if (got.length === 2) break;
    }
  } finally {
    ac.abort();
    fake.closeAllConnections();
    fake.close();
  }
  assert.deepEqual(got, [first, second], 'no event for the shutdown message; seqs exact');
  assert.deepEqual(lastIds, ['', first]);
});

test('events() closes its connection when the loop over it stops, without an abort', { timeout: 20000 }, async () => {
  const { createServer } = await import('node:http');
  let closed;
  const streamClosed = new Promise((resolve) => { closed = resolve; });
  const fake = createServer((req, res) => {
    res.on('close', closed);
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.write('id: 1795910484197391993\nevent: created\ndata: {"seq":"1795910484197391993","kind":"created"}\n\n');
  });
  await new Promise((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const addr = /** @type {import('node:net').AddressInfo} */ (fake.address());
  try {
    for await (const e of new Client(`http://127.0.0.1:${addr.port}`).events()) {
      assert.equal(e.kind, 'created');
      break;
    }
    // The server sees the stream end: it no longer counts against the
    // tenant's http.max_event_streams_per_tenant.
    await streamClosed;
  } finally {
    fake.closeAllConnections();
    fake.close();
  }
});
