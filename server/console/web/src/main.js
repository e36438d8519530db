// The console's shell: the key form, the navigation, and the router. The
// pages route by the URL's fragment (#/ns/orders?state=active), so the
// server serves one document and any link can be bookmarked or shared
// (it carries no key).

import { api, apiKey } from './api.js';
import { h, failure, fill } from './dom.js';
import * as sampler from './sampler.js';
import { overview } from './pages/overview.js';
import { namespace } from './pages/namespace.js';
import { claim } from './pages/claim.js';
import { deliveries } from './pages/deliveries.js';
import { holds } from './pages/holds.js';
import { live } from './pages/live.js';

const routes = [
  [/^\/$/, overview, 'Overview'],
  [/^\/ns\/([^/]+)$/, namespace, 'Namespace'],
  [/^\/claim\/([^/]+)$/, claim, 'Claim'],
  [/^\/deliveries$/, deliveries, 'Deliveries'],
  [/^\/holds$/, holds, 'Dead letters and holds'],
  [/^\/live$/, live, 'Live events'],
];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
let current = new AbortController();

function keyForm(message) {
  const input = h('input', { id: 'key', name: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: false });
  fill(main, 
    h('h1', {}, 'Sign in with an API key'),
    message ? failure(message) : null,
    h('form', { id: 'key-form', onsubmit: async (e) => {
      e.preventDefault();
      apiKey.set(input.value.trim());
      await signIn();
    } },
    h('p', {}, h('label', { for: 'key' }, 'API key '), input, ' ', h('button', { type: 'submit' }, 'Sign in')),
    h('p', { class: 'note' }, 'The key stays in this tab (sessionStorage) and goes only to this server, in the Authorization header. ' +
      'An admin key of a tenant sees that tenant\'s namespaces, claims, deliveries and holds. Leave it empty when the server runs without auth.')));
  input.focus();
}

async function signIn() {
  try {
    await api('/v1/namespaces', { query: { limit: 1 } }); // every role may: the key is good
  } catch (err) {
    apiKey.clear();
    sampler.stop();
    nav.hidden = true;
    keyForm(err);
    return;
  }
  sessionStorage.setItem('claimcheck.console.signed-in', '1');
  nav.hidden = false;
  const k = apiKey.get();
  // A token is cck_ + key id + _ + secret: only the public id is shown.
  const id = /^cck_([^_]+)_/.exec(k)?.[1];
  who.textContent = k ? 'key ' + (id ?? '…') : 'no key (auth off)';
  sampler.start();
  show();
}

async function show() {
  current.abort();
  current = new AbortController();
  const signal = current.signal;
  const [path, qs] = (location.hash.slice(1) || '/').split('?');
  for (const a of nav.querySelectorAll('a')) a.toggleAttribute('aria-current', a.getAttribute('href') === '#' + path);
  for (const [re, page, title] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    document.title = title + ' · claimcheck console';
    const params = m.slice(1).map(decodeURIComponent);
    main.setAttribute('aria-busy', 'true');
    // Each showing draws into a view of its own. A render that was
    // superseded (the operator moved on, or reloaded, while it waited for
    // the API) then fills a view no longer on the page instead of
    // overwriting the page that replaced it.
    const view = h('div', { class: 'view' });
    main.replaceChildren(view);
    try {
      // reload redraws this page only while it is shown: a late call (a
      // retry's redraw after the operator moved on) does nothing.
      const reload = () => { if (!signal.aborted) show(); };
      await page(view, { params, query: new URLSearchParams(qs ?? ''), signal, reload });
    } catch (err) {
      if (!signal.aborted) fill(view, h('h1', {}, title), failure(err));
    } finally {
      if (!signal.aborted) main.removeAttribute('aria-busy');
    }
    return;
  }
  fill(main, h('h1', {}, 'Not found'), h('p', {}, 'No such page: ', path));
}

document.getElementById('sign-out').addEventListener('click', () => {
  apiKey.clear();
  sessionStorage.removeItem('claimcheck.console.signed-in');
  sampler.stop();
  current.abort();
  nav.hidden = true;
  who.textContent = '';
  keyForm();
});
window.addEventListener('hashchange', () => { if (!nav.hidden) show(); });

if (sessionStorage.getItem('claimcheck.console.signed-in')) signIn();
else keyForm();
