// A namespace's claims, newest first, filtered by state and label, a page
// at a time (GET /v1/namespaces/{ns}/claims reads one index range per
// page, ADR 0100).

import { api } from '../api.js';
import { h, table, bytes, when, facts, fill } from '../dom.js';

const PAGE = 50;

function labels(l) {
  return Object.entries(l ?? {}).map(([k, v]) => h('code', { class: 'label' }, `${k}=${v}`));
}

/** Shows namespace ns with the filters of the URL's query. */
export async function namespace(main, { params, query }) {
  const ns = params[0];
  const state = query.get('state') ?? '';
  const label = query.get('label') ?? '';
  const cursor = query.get('cursor') ?? '';
  const [info, page] = await Promise.all([
    api('/v1/namespaces/' + encodeURIComponent(ns)),
    api('/v1/namespaces/' + encodeURIComponent(ns) + '/claims', { query: { state, label: label || undefined, cursor, limit: PAGE } }),
  ]);
  const stateSel = h('select', { id: 'f-state', name: 'state' },
    ['', 'pending', 'active', 'deleted'].map((s) => h('option', { value: s, selected: s === state }, s || 'any')));
  const labelIn = h('input', { id: 'f-label', name: 'label', value: label, placeholder: 'key=value', autocomplete: 'off' });
  const form = h('form', {
    class: 'filters', role: 'search', 'aria-label': 'Filter claims',
    onsubmit: (e) => {
      e.preventDefault();
      const q = new URLSearchParams();
      if (stateSel.value) q.set('state', stateSel.value);
      if (labelIn.value.trim()) q.set('label', labelIn.value.trim());
      location.hash = '#/ns/' + encodeURIComponent(ns) + (q.size ? '?' + q : '');
    },
  }, h('label', { for: 'f-state' }, 'State '), stateSel, ' ', h('label', { for: 'f-label' }, 'Label '), labelIn, ' ', h('button', { type: 'submit' }, 'Filter'));
  const base = new URLSearchParams();
  if (state) base.set('state', state);
  if (label) base.set('label', label);
  const link = (c) => { const q = new URLSearchParams(base); if (c) q.set('cursor', c); return '#/ns/' + encodeURIComponent(ns) + (q.size ? '?' + q : ''); };
  const u = info.usage;
  fill(main, 
    h('h1', {}, 'Namespace ', h('span', { class: 'mono' }, ns)),
    facts([
      ['tenant', info.policy?.tenant], ['live claims', String(u.active_claims + u.pending_claims)],
      ['bytes used', bytes(u.used_bytes) + (info.limits?.bytes ? ' of ' + bytes(info.limits.bytes) : '')],
      ['max age', info.policy?.ttl?.max_age], ['delete after read', info.policy?.ttl?.delete_after_read ? 'yes' : ''],
    ]),
    form,
    table(`Claims of ${ns}${state ? ', ' + state : ''}${label ? ', label ' + label : ''}`,
      ['claim', 'state', 'size', 'labels', 'reads', 'releases', 'created', 'deadline', 'end'],
      page.claims.map((c) => h('tr', {},
        h('th', { scope: 'row' }, h('a', { class: 'mono', href: `#/claim/${encodeURIComponent(c.ref.id)}?ns=${encodeURIComponent(ns)}` }, c.ref.id)),
        h('td', {}, h('span', { class: 'state ' + c.state }, c.state)),
        h('td', { class: 'num' }, bytes(c.ref.size)),
        h('td', {}, labels(c.labels)),
        h('td', { class: 'num' }, String(c.reads)),
        h('td', { class: 'num' }, `${c.releases}/${c.consumers || '–'}`),
        h('td', {}, when(c.ref.created_at)),
        h('td', {}, when(c.delete_at)),
        h('td', {}, c.delete_reason ? `${c.delete_reason} ${when(c.deleted_at)}` : '')))),
    page.next && page.claims.length < PAGE
      ? h('p', { class: 'note' }, 'Fewer matches than a page among the claims this page read (a page reads at most 10,000); the next page reads on.')
      : null,
    h('nav', { class: 'pager', 'aria-label': 'Pages' },
      cursor ? h('a', { href: link('') }, 'First page') : null, ' ',
      page.next ? h('a', { href: link(page.next), rel: 'next' }, 'Next page') : null));
}
