// The live stream of events in a real Chromium, from a page of another
// origin the server allows: the client's events() (fetch, sending
// Last-Event-ID through CORS) and the browser's own EventSource (resumed
// with ?last_event_id=) both resume after the event they are given.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@claimcheck/client';
import { startServer, startStatic, importMap, findChromium } from './server.js';

const chromiumPath = findChromium();
const skip = chromiumPath ? false : 'no Chromium found (install the chromium package, or set CHROMIUM to its binary)';

const page = `<!doctype html><meta charset="utf-8"><title>claimcheck events</title>
${importMap}
<script type="module">
import { Client } from '@claimcheck/client';
window.follow = async (server, last) => {
  const ac = new AbortController();
  const it = new Client(server).events({ types: ['created'], namespaces: ['web'], lastEventId: last, signal: ac.signal });
  const r = await it.next();
  ac.abort();
  return r.value;
};
window.eventSource = (server, last) => new Promise((resolve, reject) => {
  const es = new EventSource(server + '/v1/events/stream?type=created&ns=web&last_event_id=' + last);
  es.addEventListener('created', (e) => { es.close(); resolve({ id: e.lastEventId, event: JSON.parse(e.data) }); });
  es.onerror = () => { if (es.readyState === EventSource.CLOSED) reject(new Error('EventSource closed')); };
});
window.ready = true;
</script>`;

describe('events in Chromium', { skip }, () => {
  let chromium;
  let browser;
  let server;
  let site;
  let cc;
  before(async () => {
    ({ chromium } = await import('playwright-core'));
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    site = await startStatic({ '/': page });
    server = await startServer({ CLAIMCHECK_HTTP__CORS__ALLOWED_ORIGINS: site.origin });
    cc = new Client(server.url);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await site?.stop();
  });

  test('events() and EventSource resume after the id they are given', async () => {
    const a = await cc.put('web', 'a');
    const b = await cc.put('web', 'b');
    const c = await cc.put('web', 'c');
    const p = await browser.newPage();
    await p.goto(site.origin + '/');
    await p.waitForFunction(() => window.ready === true);
    const first = await p.evaluate(([s]) => window.follow(s, 'oldest'), [server.url]);
    assert.equal(first.claim_id, a.id, 'from the start of the retained events');
    const next = await p.evaluate(([s, last]) => window.follow(s, last), [server.url, first.id]);
    assert.equal(next.claim_id, b.id, 'events() with Last-Event-ID resumes after it');
    const es = await p.evaluate(([s, last]) => window.eventSource(s, last), [server.url, next.id]);
    await p.close();
    assert.equal(es.event.claim_id, c.id, 'EventSource with last_event_id resumes after it');
    assert.match(es.id, /^[0-9]+$/, 'the SSE id is the event seq');
  });
});
