// Overview: every namespace the key may see with its usage against its
// quota, its live and finished claims (the store's own counters, kept by
// the transactions that change them) and its due claims (from the
// sweeper status's bounded read of the due index), the sweeper's lag,
// delivery lag, and how these moved while the console was open
// (sampler.js).

import { h, table, bytes, duration, when, failure, fill } from '../dom.js';
import { timeChart } from '../chart.js';
import { samples, onSample, next, samplingError } from '../sampler.js';

function meter(label, used, limit, fmt) {
  if (!limit) return h('span', {}, `${fmt(used)} (no quota)`);
  const pct = Math.min(100, Math.round((used / limit) * 100));
  return h('span', { class: 'usage' },
    h('meter', { min: 0, max: limit, value: used, high: limit * 0.9, 'aria-label': label }),
    ` ${fmt(used)} of ${fmt(limit)} (${pct}%)`);
}

// The due count, which the server reads up to a bound.
function dueText(sweeper) {
  return sweeper.due >= sweeper.due_bound ? `≥ ${sweeper.due_bound}` : String(sweeper.due);
}

// A namespace's due claims from GET /v1/sweeper: absent there means none
// among the claims read, which is "at least 0" when the read was capped.
function nsDueText(sweeper, name) {
  if (!sweeper) return '–';
  const n = sweeper.due_by_namespace?.[name] ?? 0;
  return sweeper.due_by_namespace_capped ? `≥ ${n}` : String(n);
}

function namespaceRow(n, sweeper) {
  const u = n.usage;
  const live = u.active_claims + u.pending_claims;
  return h('tr', {},
    h('th', { scope: 'row' }, h('a', { href: '#/ns/' + encodeURIComponent(n.name) }, n.name), n.retired ? ' (retired)' : ''),
    h('td', {}, n.policy?.tenant ?? ''),
    h('td', { class: 'num', 'data-live': n.name }, String(live)),
    h('td', { class: 'num' }, String(u.active_claims)),
    h('td', { class: 'num' }, String(u.pending_claims)),
    h('td', { class: 'num', 'data-due': n.name }, nsDueText(sweeper, n.name)),
    h('td', { class: 'num', 'data-finished': n.name }, String(u.finished_claims ?? 0)),
    h('td', {}, meter(`${n.name} bytes used`, u.used_bytes, n.limits?.bytes, bytes)),
    h('td', {}, meter(`${n.name} claims used`, live, n.limits?.claims, String)));
}

function render(main) {
  const last = samples.at(-1);
  if (!last) {
    const err = samplingError();
    fill(main, h('h1', {}, 'Overview'), err ? failure(err) : h('p', {}, 'Loading…'));
    return;
  }
  const times = samples.map((s) => s.t);
  const names = last.namespaces.map((n) => n.name).slice(0, 6);
  const subs = last.subs ?? [];
  const failing = subs.filter((s, i) => last.waiting[i] || s.state !== 'active');
  const notAdmin = 'not readable with this key (a tenant-wide admin key)';
  fill(main, 
    h('h1', {}, 'Overview'),
    h('section', { 'aria-labelledby': 'health' },
      h('h2', { id: 'health' }, 'Health'),
      h('ul', { class: 'cards' },
        h('li', { class: 'card' }, h('span', { class: 'big', id: 'sweeper-lag' }, last.sweeper ? duration(last.lag) : '–'), ' sweeper lag',
          h('small', {}, !last.sweeper ? ' ' + notAdmin : last.sweeper.oldest_due ? ` oldest due ${when(last.sweeper.oldest_due)}` : ' nothing due')),
        h('li', { class: 'card' }, h('span', { class: 'big', id: 'due' }, last.sweeper ? dueText(last.sweeper) : '–'), ' due now',
          h('small', {}, last.sweeper ? ' claims and blobs the sweeper has yet to finish or collect' : ' ' + notAdmin)),
        h('li', { class: 'card' }, h('span', { class: 'big', id: 'delivery-lag' }, last.subs ? duration(last.deliveryLag) : '–'), ' delivery lag',
          h('small', {}, last.subs ? ` ${subs.length} subscriptions, ${failing.length} with events waiting or stopped` : ' ' + notAdmin)),
        h('li', { class: 'card' }, h('span', { class: 'big' }, String(last.namespaces.reduce((a, n) => a + n.usage.active_claims + n.usage.pending_claims, 0))), ' live claims'))),
    h('section', { 'aria-labelledby': 'nss' },
      h('h2', { id: 'nss' }, 'Namespaces'),
      table('Namespaces, their live, due and finished claims and usage against quota',
        ['namespace', 'tenant', 'live', 'active', 'pending', 'due', 'finished', 'bytes', 'claims'],
        last.namespaces.map((n) => namespaceRow(n, last.sweeper))),
      h('p', { class: 'note' }, 'Live and finished claims are the namespace\'s counters (finished: for any reason, since the version ' +
        'that added the counter). Due claims are counted among the first ' + (last.sweeper ? String(last.sweeper.due_bound) : 'few thousand') +
        ' due by due time (≥ when that read was capped). The due backlog card and the sweeper lag are store-wide.')),
    h('section', { 'aria-labelledby': 'trends', class: 'charts' },
      h('h2', { id: 'trends' }, 'Since this console opened'),
      timeChart('Sweeper lag (age of the oldest due item)', times, [{ label: 'lag', values: samples.map((s) => s.lag) }], duration),
      timeChart('Due backlog (claims and blobs due)', times, [{ label: 'due', values: samples.map((s) => s.due) }], (v) => String(Math.round(v))),
      timeChart('Delivery lag (oldest event waiting)', times, [{ label: 'lag', values: samples.map((s) => s.deliveryLag) }], duration),
      timeChart('Live claims', times, names.map((n) => ({ label: n, values: samples.map((s) => s.live[n] ?? 0) })), (v) => String(Math.round(v)))));
}

/** Shows the overview, redrawn at every sample while it is shown. */
export async function overview(main, { signal }) {
  if (!samples.length) {
    fill(main, h('h1', {}, 'Overview'), h('p', {}, 'Loading…'));
    await next();
    if (signal.aborted) return; // left while loading: never subscribe
  }
  render(main);
  const off = onSample(() => render(main));
  signal.addEventListener('abort', off);
}
