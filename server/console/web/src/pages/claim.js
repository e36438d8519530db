// A claim's life: its facts (state, deadlines, consumers, holds) from
// GET /v1/claims/{id}/meta and its timeline from the audit trail
// (GET /v1/claims/{id}/events): put, reads, releases, extensions, holds,
// its end and the reason. The payload is never shown; Download is a
// redeem through the API, behind a confirmation because it counts as a
// read.

import { api, all, download } from '../api.js';
import { h, facts, bytes, when, confirm, failure, fill } from '../dom.js';

// What each audit kind means on a timeline, in the operator's words.
const kinds = {
  created: 'put: the claim became active',
  confirmed: 'upload confirmed',
  redeemed: 'read',
  first_redeemed: 'first read',
  released: 'released by a consumer',
  all_released: 'every expected consumer released',
  extended: 'expiry extended',
  hold_set: 'legal hold set',
  hold_cleared: 'legal hold lifted',
  expired: 'ended: expired',
  expired_unread: 'expired without a read',
  deleted: 'ended: deleted',
  reaped: 'ended: reaped (upload never completed)',
};
const endings = new Set(['expired', 'deleted', 'reaped']);

function timeline(events) {
  return h('ol', { class: 'timeline', 'aria-label': 'Timeline' }, events.map((e) =>
    h('li', { class: 'ev ' + (endings.has(e.kind) ? 'end' : e.kind.startsWith('hold') ? 'hold' : '') },
      h('time', { datetime: e.at }, when(e.at)), ' ',
      h('strong', {}, kinds[e.kind] ?? e.kind), ' ',
      h('code', {}, e.kind),
      e.reason ? h('span', { class: 'reason' }, ' reason ', h('code', {}, e.reason)) : null,
      e.detail ? h('span', { class: 'detail' }, ' — ', e.detail) : null,
      e.actor ? h('span', { class: 'actor' }, ' by ', h('code', {}, e.actor)) : null)));
}

/** Shows claim id (params[0]); ns from the query, when the link had it. */
export async function claim(main, { params, query, reload }) {
  const id = params[0];
  const ns = query.get('ns') ?? undefined;
  const [info, events] = await Promise.all([
    api('/v1/claims/' + encodeURIComponent(id) + '/meta', { query: { ns } }),
    all('/v1/claims/' + encodeURIComponent(id) + '/events', 'events', { query: { ns }, cursorParam: 'after' }),
  ]);
  const own = (info.holds ?? []).find((x) => x.scope === 'claim');
  const status = h('p', { role: 'status', class: 'status' });
  const act = (fn) => async () => { try { await fn(); } catch (err) { fill(status, failure(err)); } };
  const holdReason = h('input', { id: 'hold-reason', name: 'reason', maxlength: 512, autocomplete: 'off' });
  const buttons = [];
  if (info.state === 'active') {
    buttons.push(own
      ? h('button', { type: 'button', id: 'release-hold', onclick: act(async () => {
        if (!(await confirm(`Lift the legal hold on ${id}? If its deadline has passed and no namespace hold keeps it, it is finished at once.`, 'Release hold'))) return;
        await api('/v1/claims/' + encodeURIComponent(id) + '/hold', { method: 'DELETE' });
        reload();
      }) }, 'Release hold')
      : h('button', { type: 'button', id: 'place-hold', onclick: act(async () => {
        const extra = h('p', {}, h('label', { for: 'hold-reason' }, 'Reason '), holdReason);
        if (!(await confirm(`Put ${id} on legal hold? Nothing deletes it until the hold is lifted.`, 'Place hold', extra))) return;
        await api('/v1/claims/' + encodeURIComponent(id) + '/hold', { method: 'PUT', body: holdReason.value ? { reason: holdReason.value } : {} });
        reload();
      }) }, 'Place hold'));
    buttons.push(h('button', { type: 'button', id: 'download', onclick: act(async () => {
      if (!(await confirm('Downloading is a redeem: it counts as a read (a delete-after-read window starts on the first one).', 'Download'))) return;
      await download(id, info.ref.ns);
      fill(status, 'Downloaded through the API.');
    }) }, 'Download payload'));
  }
  const r = info.ref;
  fill(main, 
    h('h1', {}, 'Claim ', h('span', { class: 'mono' }, id)),
    h('p', {}, h('a', { href: '#/ns/' + encodeURIComponent(r.ns) }, '← namespace ' + r.ns)),
    facts([
      ['state', h('span', { class: 'state ' + info.state }, info.state)],
      ['namespace', r.ns], ['size', bytes(r.size)], ['stored', bytes(r.stored_size) + (r.compression ? ` (${r.compression})` : '')],
      ['content type', info.content_type], ['digest', r.digest ? h('code', {}, r.digest) : ''],
      ['labels', Object.entries(info.labels ?? {}).map(([k, v]) => h('code', { class: 'label' }, `${k}=${v}`))],
      ['created', when(r.created_at)], ['expires', when(r.expires_at)], ['deadline', when(info.delete_at)],
      ['reads', `${info.reads}${info.first_read_at ? ', first ' + when(info.first_read_at) : ''}`],
      ['consumers', `${info.releases} released of ${info.consumers || 'no expected count'}${info.released_by?.length ? ': ' + info.released_by.join(', ') : ''}`],
      ['holds', (info.holds ?? []).map((x) => `${x.scope}${x.reason ? ' (' + x.reason + ')' : ''} since ${when(x.since)}`).join('; ')],
      ['ended', info.delete_reason ? `${when(info.deleted_at)}, reason ${info.delete_reason}` : ''],
    ]),
    h('div', { class: 'buttons' }, buttons),
    status,
    h('h2', {}, 'Timeline'),
    events.length ? timeline(events) : h('p', {}, 'No audit events (pruned after events.retention).'));
}
