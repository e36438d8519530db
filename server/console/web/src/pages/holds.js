// Dead letters and holds: the blobs the sweeper parked after failed
// deletes (retry puts one back in its queue) and the namespaces' legal
// holds (place and release). Every change asks first. A claim's own hold
// is placed and lifted on the claim's page.

import { api, all } from '../api.js';
import { h, table, bytes, when, confirm, failure, fill } from '../dom.js';

/** Shows the key's dead letters and its namespaces' holds. */
export async function holds(main, { reload }) {
  const status = h('p', { role: 'status', class: 'status' });
  const act = (fn) => async () => { try { await fn(); } catch (err) { fill(status, failure(err)); } };
  const [dead, namespaces] = await Promise.all([
    all('/v1/dead-letters', 'dead_letters', { cursorParam: 'after', max: 500 }),
    all('/v1/namespaces', 'namespaces', { query: { limit: 1000 } }),
  ]);
  const nsHolds = await Promise.all(namespaces.map((n) =>
    api('/v1/namespaces/' + encodeURIComponent(n.name) + '/hold').then((r) => r.hold, () => undefined)));
  const holdRows = namespaces.map((n, i) => {
    const hold = nsHolds[i];
    const path = '/v1/namespaces/' + encodeURIComponent(n.name) + '/hold';
    const reason = h('input', { id: 'reason-' + n.name, name: 'reason', maxlength: 512, autocomplete: 'off' });
    return h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: '#/ns/' + encodeURIComponent(n.name) }, n.name)),
      h('td', { class: 'hold-state' }, hold === undefined ? 'not readable with this key' : hold ? `held since ${when(hold.since)}${hold.reason ? ': ' + hold.reason : ''}` : 'not held'),
      h('td', {}, hold === undefined ? '' : hold
        ? h('button', { type: 'button', class: 'release-ns-hold', 'data-ns': n.name, onclick: act(async () => {
          if (!(await confirm(`Lift the hold on every claim of ${n.name}? Overdue claims without a hold of their own are finished at once.`, 'Release hold'))) return;
          await api(path, { method: 'DELETE' });
          reload();
        }) }, 'Release hold')
        : h('button', { type: 'button', class: 'place-ns-hold', 'data-ns': n.name, onclick: act(async () => {
          const extra = h('p', {}, h('label', { for: 'reason-' + n.name }, 'Reason '), reason);
          if (!(await confirm(`Hold every claim of ${n.name}, present and future? Nothing in it is deleted until the hold is lifted.`, 'Place hold', extra))) return;
          await api(path, { method: 'PUT', body: reason.value ? { reason: reason.value } : {} });
          reload();
        }) }, 'Place hold')));
  });
  const deadRows = dead.map((d) => h('tr', {},
    h('th', { scope: 'row', class: 'mono' }, d.blob_id),
    h('td', {}, d.namespace),
    h('td', { class: 'num' }, bytes(d.stored_size)),
    h('td', { class: 'num' }, String(d.attempts)),
    h('td', {}, when(d.parked_at)),
    h('td', { class: 'err' }, d.last_error),
    h('td', {}, h('button', { type: 'button', onclick: act(async () => {
      if (!(await confirm(`Put ${d.blob_id} back in the sweeper's queue? Its object is deleted at the next sweep.`, 'Retry delete'))) return;
      await api('/v1/dead-letters/' + encodeURIComponent(d.blob_id) + '/retry', { method: 'POST' });
      reload();
    }) }, 'Retry'))));
  fill(main, 
    h('h1', {}, 'Dead letters and holds'),
    status,
    h('h2', {}, 'Namespace holds'),
    table('Legal holds of the namespaces', ['namespace', 'hold', 'action'], holdRows),
    h('h2', {}, 'Dead letters'),
    table('Blobs parked after failed deletes', ['blob', 'namespace', 'stored', 'attempts', 'parked', 'last error', 'action'], deadRows));
}
