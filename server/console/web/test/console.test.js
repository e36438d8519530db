// The operator console end to end in the system's headless Chromium
// (driven by playwright-core, as clients/js/test/browser.test.js drives
// it): a real `claimcheck serve` with auth on and two tenants holding
// data; the suite signs in with each tenant's key, walks every page at a
// desktop (1280×800) and a phone (390×844) size, checks what each shows,
// clicks retry, hold and release (each behind its confirmation), runs
// axe-core on every page (a serious or critical violation fails), fails
// on any Content-Security-Policy report or page error, saves a
// screenshot of every page, and checks that one tenant's key never shows
// the other tenant's namespaces, claims or events.
//
// CLAIMCHECK_TEST_LONG=1 walks a tablet and a small phone size too.
// Screenshots go to CLAIMCHECK_TEST_ARTIFACTS/console (scripts/test.sh
// sets it to a directory it keeps), else to a temporary directory, named
// in the output. Without a Chromium the suite skips, saying so.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { createRequire } from 'node:module';

import { findChromium } from '../../../../clients/js/test/server.js';
import { startServe, caller } from './serve.js';

const chromiumPath = findChromium();
const skip = chromiumPath ? false : 'no Chromium found (install the chromium package, or set CHROMIUM to its binary)';
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const shots = process.env.CLAIMCHECK_TEST_ARTIFACTS
  ? join(process.env.CLAIMCHECK_TEST_ARTIFACTS, 'console')
  : mkdtempSync(join(tmpdir(), 'claimcheck-console-shots-'));
// CLAIMCHECK_TEST_LONG=1 (scripts/test.sh's long mode) walks two more sizes.
const sizes = {
  desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 },
  ...(process.env.CLAIMCHECK_TEST_LONG === '1' ? { tablet: { width: 768, height: 1024 }, small: { width: 320, height: 640 } } : {}),
};

let browser;
let server;
let acme;
let globex;
let receiver;
const seen = { acme: [], globex: [] }; // claim ids each tenant put

// A webhook receiver on 127.0.0.1 that takes every event but releases:
// those it refuses, so that acme's subscription parks them (and their
// claims' later events) while the rest flows (ADR 0277).
async function startReceiver() {
  let posts = 0;
  const srv = createServer((req, res) => {
    posts++;
    let body = '';
    req.on('data', (b) => { body += b; });
    req.on('end', () => res.writeHead(/released/.test(body) ? 500 : 204).end());
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${srv.address().port}/hook`,
    posts: () => posts,
    stop: () => new Promise((resolve) => srv.close(resolve)),
  };
}

async function until(what, f, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  if (skip) return;
  mkdirSync(shots, { recursive: true });
  console.log(`# screenshots: ${shots}`);
  receiver = await startReceiver();
  server = await startServe();
  acme = caller(server.url, server.keys.acme);
  globex = caller(server.url, server.keys.globex);
  await acme('POST', '/v1/subscriptions', { json: { url: receiver.url, namespaces: ['orders'] } });
  // 60 claims in orders (more than a page of 50), two in invoices, three
  // of globex in payroll.
  for (let i = 0; i < 60; i++) {
    const ref = await acme('PUT', '/v1/namespaces/orders/claims', {
      body: `order ${i} `.repeat(50), headers: { 'Claimcheck-Labels': `team=${i % 2 ? 'billing' : 'shipping'},n=${i}`, 'Claimcheck-Consumers': '2' },
    });
    seen.acme.push(ref.id);
    if (i === 0) {
      // The life of one claim: read, released by one consumer, deleted;
      // the claims put after it are delivered while its release parks.
      await acme('GET', `/v1/claims/${ref.id}`);
      await acme('POST', `/v1/claims/${ref.id}/release`, { json: { consumer: 'billing-worker' } });
      await acme('DELETE', `/v1/claims/${ref.id}`);
    }
  }
  for (let i = 0; i < 2; i++) seen.acme.push((await acme('PUT', '/v1/namespaces/invoices/claims', { body: 'invoice ' + i })).id);
  for (let i = 0; i < 3; i++) {
    seen.globex.push((await globex('PUT', '/v1/namespaces/payroll/claims', { body: 'salary ' + i, headers: { 'Claimcheck-Labels': 'secret=globex-only' } })).id);
  }
  // The subscription has failed at least once.
  await until('a parked event', async () => {
    const subs = await acme('GET', '/v1/subscriptions');
    const page = await acme('GET', `/v1/subscriptions/${subs.subscriptions[0].id}/attempts`);
    return page.attempts.length > 0;
  });
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await receiver?.stop();
});

// open signs in with token on a new page of the given size and answers
// the page and the problems it reported (CSP, errors).
async function open(token, size) {
  const ctx = await browser.newContext({ viewport: sizes[size] });
  const page = await ctx.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await page.goto(server.url + '/console/');
  await page.getByLabel('API key').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#sweeper-lag').waitFor();
  return { page, problems, close: () => ctx.close() };
}

// check runs axe-core on what the page shows and saves its screenshot.
async function check(page, name, size) {
  const text = await page.locator('body').textContent();
  assert.doesNotMatch(text, /\bnull\b|\bundefined\b|\[object /, `${name} (${size}) shows a value that is not one`);
  await page.evaluate(axeSource); // through DevTools, not a <script>: the CSP allows none inline
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`), [], `axe on ${name} (${size})`);
  await page.screenshot({ path: join(shots, `${name}-${size}.png`), fullPage: size !== 'desktop' });
}

async function go(page, hash, ready) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  try {
    await page.locator(ready).first().waitFor({ timeout: 10_000 });
  } catch (err) {
    throw new Error(`${hash}: no ${ready} on the page, which shows: ${await page.locator('main').textContent()}`, { cause: err });
  }
  await page.waitForFunction(() => !document.getElementById('main').hasAttribute('aria-busy'));
}

async function confirmDialog(page, action) {
  const dlg = page.getByRole('dialog');
  await dlg.waitFor();
  await dlg.getByRole('button', { name: action }).click();
}

describe('the console', { skip }, () => {
  before(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  });

  test('the sign-in page passes axe', async () => {
    for (const size of Object.keys(sizes)) {
      const ctx = await browser.newContext({ viewport: sizes[size] });
      const page = await ctx.newPage();
      await page.goto(server.url + '/console/');
      await page.getByLabel('API key').waitFor();
      await check(page, 'signin', size);
      await ctx.close();
    }
  });

  test('a wrong key is refused and not kept', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(server.url + '/console/');
    await page.getByLabel('API key').fill('cck_nothing');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').textContent(), /401/);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('claimcheck.console.key')), null);
    await ctx.close();
  });

  test('a producer key of acme signs in and sees its namespaces, without the admin figures', async () => {
    const created = await acme('POST', '/v1/keys', { json: { role: 'producer' } });
    const { page, problems, close } = await open(created.token, 'desktop');
    try {
      await page.locator('[data-live="orders"]').waitFor();
      assert.match(await page.locator('main').textContent(), /not readable with this key/);
    } finally {
      await close();
    }
    assert.deepEqual(problems.filter((p) => !/403/.test(p)), [], 'no CSP report or page error');
  });

  for (const size of Object.keys(sizes)) {
    test(`acme walks every page (${size})`, async () => {
      const { page, problems, close } = await open(server.keys.acme, size);
      try {
        // Overview: acme's namespaces with their counters, none of globex's.
        await page.locator('[data-live="orders"]').waitFor();
        // The figures are the store's counters (the walks before this one put more).
        for (const ns of ['orders', 'invoices']) {
          const u = (await acme('GET', '/v1/namespaces/' + ns)).usage;
          assert.equal(await page.locator(`[data-live="${ns}"]`).textContent(), String(u.active_claims + u.pending_claims), ns);
          assert.equal(await page.locator(`[data-finished="${ns}"]`).textContent(), String(u.finished_claims), ns + ' finished');
          assert.match(await page.locator(`[data-due="${ns}"]`).textContent(), /^\d+$/, ns + ' due');
        }
        assert.ok(Number(await page.locator('[data-finished="orders"]').textContent()) >= 1, 'the deleted claim of orders finished');
        assert.ok(Number(await page.locator('[data-live="orders"]').textContent()) >= 59);
        assert.equal(await page.locator('[data-live="payroll"]').count(), 0);
        assert.ok(await page.locator('.chart canvas').count() >= 4, 'uPlot drew the charts');
        assert.match(await page.locator('#due').textContent(), /^\d+$/, 'the due backlog');
        await check(page, 'overview', size);

        // A namespace: the first page of 50, the next, a state filter, a label filter.
        await go(page, '#/ns/orders', 'table tbody tr');
        assert.equal(await page.locator('tbody tr').count(), 50);
        await page.getByRole('link', { name: 'Next page' }).click();
        await page.getByRole('link', { name: 'First page' }).waitFor();
        assert.equal(await page.locator('tbody tr').count(), 10);
        await go(page, '#/ns/orders', 'table tbody tr');
        await page.getByLabel('State').selectOption('deleted');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 1);
        assert.match(await page.locator('tbody tr').textContent(), /deleted/);
        await page.getByLabel('State').selectOption('');
        await page.getByLabel('Label').fill('n=7');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.waitForFunction((id) => document.querySelectorAll('tbody tr').length === 1 && document.querySelector('tbody tr th').textContent === id, seen.acme[7]);
        await check(page, 'namespace', size);

        // A claim from put to deletion: its timeline and why it ended.
        await go(page, `#/claim/${seen.acme[0]}?ns=orders`, '.timeline');
        const timeline = await page.locator('.timeline').textContent();
        for (const want of ['created', 'first_redeemed', 'released', 'billing-worker', 'deleted']) assert.ok(timeline.includes(want), `timeline has ${want}: ${timeline}`);
        assert.match(await page.locator('.facts').textContent(), /reason deleted/);
        assert.equal(await page.locator('#download').count(), 0, 'no download of a deleted claim');
        await check(page, 'claim', size);

        // Hold and release a live claim, each behind its confirmation.
        const held = seen.acme[5 + Object.keys(sizes).indexOf(size)];
        await go(page, `#/claim/${held}?ns=orders`, '#place-hold');
        await page.locator('#place-hold').click();
        await page.getByLabel('Reason').fill('case 42');
        await confirmDialog(page, 'Place hold');
        await page.locator('#release-hold').waitFor();
        assert.deepEqual((await acme('GET', `/v1/claims/${held}/meta`)).holds.map((x) => x.reason), ['case 42']);
        await page.locator('.timeline >> text=legal hold set').waitFor();
        await page.locator('#release-hold').click();
        await confirmDialog(page, 'Release hold');
        await page.locator('#place-hold').waitFor();
        assert.equal((await acme('GET', `/v1/claims/${held}/meta`)).holds, undefined);

        // Download: a redeem through the API, after the confirmation
        // that it counts as a read; the bytes go to a file, not the page.
        const reads = (await acme('GET', `/v1/claims/${held}/meta`)).reads;
        await page.locator('#download').click();
        const [file] = await Promise.all([page.waitForEvent('download'), confirmDialog(page, 'Download')]);
        assert.ok(file.suggestedFilename().startsWith(held), file.suggestedFilename()); // the browser may add an extension for the type
        const i = seen.acme.indexOf(held);
        assert.equal(readFileSync(await file.path(), 'utf8'), `order ${i} `.repeat(50));
        assert.equal((await acme('GET', `/v1/claims/${held}/meta`)).reads, reads + 1, 'the download counted as a read');
        assert.ok(!(await page.locator('main').textContent()).includes(`order ${i} order`), 'the page never shows the bytes');

        // Deliveries: the failing subscription, its parked events, retry.
        // A walk before this one retried and replayed: its events fail
        // again a moment later, and the page shows them once reloaded.
        await until('a parked event failing again on the deliveries page', async () => {
          await page.reload();
          await go(page, '#/deliveries', '.sub');
          return /parked/.test(await page.locator('.sub').textContent()) && /failing since/.test(await page.locator('.sub .lag').textContent());
        });
        await check(page, 'deliveries', size);
        const before = receiver.posts();
        await page.locator('button.retry').click();
        await page.locator('.sub .status >> text=Retrying').waitFor();
        await until('a delivery after retry', () => receiver.posts() > before);
        // Replay from a time, behind its confirmation.
        await page.getByLabel('Replay since').fill(new Date(Date.now() - 3_600_000).toISOString());
        await page.getByRole('button', { name: 'Replay', exact: true }).click();
        await confirmDialog(page, 'Replay');
        await page.locator('.sub .status >> text=Replaying from cursor').waitFor();

        // Holds: place and release the namespace hold of invoices.
        await go(page, '#/holds', 'button.place-ns-hold');
        await page.locator('button.place-ns-hold[data-ns="invoices"]').click();
        await confirmDialog(page, 'Place hold');
        await page.locator('button.release-ns-hold[data-ns="invoices"]').waitFor();
        assert.notEqual((await acme('GET', '/v1/namespaces/invoices/hold')).hold, null);
        await check(page, 'holds', size);
        await page.locator('button.release-ns-hold[data-ns="invoices"]').click();
        await confirmDialog(page, 'Release hold');
        await page.locator('button.place-ns-hold[data-ns="invoices"]').waitFor();
        assert.equal((await acme('GET', '/v1/namespaces/invoices/hold')).hold, null);

        // Live events: a put made now shows up.
        await go(page, '#/live', '#stream-state');
        await page.locator('#stream-state', { hasText: /^connected$/ }).waitFor();
        const ref = await acme('PUT', '/v1/namespaces/invoices/claims', { body: 'live ' + size });
        seen.acme.push(ref.id);
        await page.locator(`.live-event >> text=${ref.id}`).first().waitFor();
        await check(page, 'live', size);
      } finally {
        await close();
      }
      assert.deepEqual(problems, [], 'no CSP report or page error');
    });
  }

  test('a page left while it loads never draws over the page shown next', async () => {
    const { page, problems, close } = await open(server.keys.acme, 'desktop');
    try {
      // The URLs of the API answers the page has read, so the test knows
      // when the left page's render has had its turn.
      await page.evaluate(() => {
        window.readAnswers = [];
        const text = Response.prototype.text;
        Response.prototype.text = function () { return text.call(this).then((t) => { window.readAnswers.push(this.url); return t; }); };
      });
      // A claim's page waits for its /meta answer, which the test holds
      // until the operator has moved on to the holds page.
      let release;
      const held = new Promise((resolve) => { release = resolve; });
      await page.route((u) => u.pathname.endsWith('/meta'), async (route) => { await held; await route.continue(); });
      const asked = page.waitForRequest((r) => r.url().includes('/meta'));
      await page.evaluate((h) => { location.hash = h; }, `#/claim/${seen.acme[2]}?ns=orders`);
      await asked;
      await go(page, '#/holds', 'button.place-ns-hold');
      release();
      await page.waitForFunction(() => window.readAnswers.some((u) => u.includes('/meta')));
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0))); // the render behind that answer runs first
      assert.equal(await page.locator('main h1').textContent(), 'Dead letters and holds');
      assert.equal(await page.locator('#download').count(), 0, 'the claim page drew over the holds page');
    } finally {
      await close();
    }
    assert.deepEqual(problems, [], 'no CSP report or page error');
  });

  test("globex's key never shows acme's data", async () => {
    const { page, problems, close } = await open(server.keys.globex, 'desktop');
    try {
      await page.locator('[data-live="payroll"]').waitFor();
      assert.equal(await page.locator('[data-live="orders"]').count(), 0);
      await go(page, '#/ns/orders', '.error');
      assert.match(await page.locator('.error').textContent(), /404/);
      await go(page, `#/claim/${seen.acme[1]}?ns=orders`, '.error');
      assert.match(await page.locator('.error').textContent(), /404/);
      await go(page, `#/claim/${seen.acme[1]}`, '.error');
      await go(page, '#/deliveries', 'h1');
      await go(page, '#/holds', 'button.place-ns-hold');
      await go(page, '#/live', '#stream-state');
      await page.locator('#stream-state', { hasText: /^connected$/ }).waitFor();
      await acme('PUT', '/v1/namespaces/orders/claims', { body: 'not for globex' });
      const own = await globex('PUT', '/v1/namespaces/payroll/claims', { body: 'for globex' });
      await page.locator(`.live-event >> text=${own.id}`).first().waitFor();
      // Everything globex saw on every page, against acme's names and ids.
      const text = [];
      for (const hash of ['#/', '#/ns/payroll', '#/deliveries', '#/holds', '#/live']) {
        if (hash !== '#/live') await go(page, hash, 'h1');
        text.push(await page.locator('body').textContent());
      }
      const all = text.join('\n');
      for (const word of ['orders', 'invoices', 'billing-worker', receiver.url, ...seen.acme]) {
        assert.ok(!all.includes(word), `globex's pages show ${word}`);
      }
      assert.ok(all.includes('payroll') && all.includes(seen.globex[0]));
    } finally {
      await close();
    }
    assert.deepEqual(problems.filter((p) => !/404/.test(p)), [], 'no CSP report or page error');
  });
});
