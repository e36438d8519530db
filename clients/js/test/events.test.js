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
