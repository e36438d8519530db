// Live events: the tenant's Server-Sent Events stream, newest first,
// while the page is shown.

import { stream } from '../api.js';
import { h, when, fill } from '../dom.js';

const KEEP = 200;

/** Shows the stream until the page changes (signal). */
export async function live(main, { signal }) {
  const state = h('p', { role: 'status', id: 'stream-state' }, 'connecting…');
  const body = h('tbody', {});
  let paused = false;
  const pause = h('button', { type: 'button', 'aria-pressed': 'false', onclick: () => {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? 'Resume' : 'Pause';
  } }, 'Pause');
  fill(main, h('h1', {}, 'Live events'), h('div', { class: 'buttons' }, pause), state,
    h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Events as they happen' },
      h('table', {}, h('caption', {}, 'Events as they happen, newest first'),
        h('thead', {}, h('tr', {}, ['time', 'kind', 'namespace', 'claim', 'reason', 'actor'].map((t) => h('th', { scope: 'col' }, t)))),
        body)));
  stream((e) => {
    if (paused) return;
    body.prepend(h('tr', { class: 'live-event' },
      h('td', {}, when(e.at)), h('td', {}, h('code', {}, e.kind)), h('td', {}, e.ns ?? ''),
      h('td', {}, e.claim_id ? h('a', { class: 'mono', href: `#/claim/${e.claim_id}?ns=${encodeURIComponent(e.ns ?? '')}` }, e.claim_id) : ''),
      h('td', {}, e.reason ?? ''), h('td', {}, e.actor ?? '')));
    while (body.children.length > KEEP) body.lastElementChild.remove();
  }, signal, (s, err) => { state.textContent = s === 'open' ? 'connected' : `disconnected: ${err?.message ?? ''}`; });
}
