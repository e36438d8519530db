// Deliveries: the tenant's subscriptions with how far behind each is and
// its parked and dead-lettered events (GET /v1/subscriptions/{id}/attempts),
// with retry, replay and resume through the API.

import { api, all } from '../api.js';
import { h, table, when, duration, confirm, failure, fill } from '../dom.js';
import { deliveryLag } from '../sampler.js';

function attemptsTable(sub, attempts) {
  return table(`Waiting and failed events of ${sub.id}`, ['event', 'kind', 'claim', 'state', 'attempts', 'next attempt', 'last error'],
    attempts.map((a) => h('tr', {},
      h('th', { scope: 'row', class: 'mono' }, a.event.seq),
      h('td', {}, a.event.kind),
      h('td', {}, a.event.claim_id ? h('a', { class: 'mono', href: `#/claim/${a.event.claim_id}?ns=${encodeURIComponent(a.event.ns ?? '')}` }, a.event.claim_id) : ''),
      h('td', {}, h('span', { class: 'state ' + a.state }, a.state)),
      h('td', { class: 'num' }, String(a.attempts)),
      h('td', {}, when(a.next_attempt)),
      h('td', { class: 'err' }, a.last_error ?? ''))));
}

function lag(sub, attempts) {
  const s = deliveryLag(sub, attempts);
  if (!s) return 'none';
  if (sub.failing_since) return `${duration(s)} (every delivery failing since ${when(sub.failing_since)})`;
  return `${duration(s)} (oldest parked event failing since ${when(attempts.find((a) => a.state === 'parked').failing_since)})`;
}

async function subscription(sub, reload) {
  const attempts = await all('/v1/subscriptions/' + encodeURIComponent(sub.id) + '/attempts', 'attempts', { max: 200 });
  const status = h('p', { role: 'status', class: 'status' });
  const act = (fn) => async () => { try { await fn(); } catch (err) { fill(status, failure(err)); } };
  const path = '/v1/subscriptions/' + encodeURIComponent(sub.id);
  const sinceId = 'since-' + sub.id;
  const since = h('input', { id: sinceId, name: 'since', placeholder: '2026-03-01T12:00:00Z or a seq', autocomplete: 'off' });
  const configured = sub.source === 'config';
  return h('article', { class: 'sub', 'aria-labelledby': 'h-' + sub.id },
    h('h2', { id: 'h-' + sub.id, class: 'mono' }, sub.id),
    h('dl', { class: 'facts' },
      h('dt', {}, 'url'), h('dd', { class: 'mono' }, sub.url),
      h('dt', {}, 'state'), h('dd', {}, h('span', { class: 'state ' + sub.state }, sub.state), sub.enabled ? '' : ' (disabled)'),
      h('dt', {}, 'delivered'), h('dd', {}, String(sub.delivered)),
      h('dt', {}, 'lag'), h('dd', { class: 'lag' }, lag(sub, attempts)),
      sub.last_error ? [h('dt', {}, 'last error'), h('dd', { class: 'err' }, sub.last_error)] : null),
    attemptsTable(sub, attempts),
    configured ? h('p', { class: 'note' }, 'A target of the config file: retried and replayed there only.') :
      h('div', { class: 'buttons' },
        h('button', { type: 'button', class: 'retry', disabled: attempts.length === 0, onclick: act(async () => {
          const r = await api(path + '/retry', { method: 'POST' });
          fill(status, `Retrying ${r.retried} event${r.retried === 1 ? '' : 's'} now.`);
          setTimeout(reload, 1500);
        }) }, `Retry ${attempts.length} now`),
        sub.state === 'dead_lettered' ? h('button', { type: 'button', onclick: act(async () => {
          if (!(await confirm(`Resume delivery to ${sub.url}?`, 'Resume'))) return;
          await api(path + '/resume', { method: 'POST' });
          reload();
        }) }, 'Resume') : null,
        h('span', { class: 'replay' }, h('label', { for: sinceId }, 'Replay since '), since, ' ',
          h('button', { type: 'button', onclick: act(async () => {
            if (!since.value.trim()) { fill(status, 'Say since when: an RFC 3339 time or an event seq.'); return; }
            if (!(await confirm(`Deliver again to ${sub.url} every event after ${since.value.trim()}?`, 'Replay'))) return;
            const r = await api(path + '/replay', { method: 'POST', query: { since: since.value.trim() } });
            fill(status, `Replaying from cursor ${r.cursor}.`);
          }) }, 'Replay'))),
    status);
}

/** Shows every subscription of the key's tenant. */
export async function deliveries(main, { reload }) {
  const subs = await all('/v1/subscriptions', 'subscriptions', { query: { limit: 1000 } });
  const parts = await Promise.all(subs.map((s) => subscription(s, reload)));
  fill(main, h('h1', {}, 'Deliveries'),
    ...(subs.length ? parts : [h('p', {}, 'No subscriptions. Make one with POST /v1/subscriptions or claimcheck subscriptions create.')]));
}
