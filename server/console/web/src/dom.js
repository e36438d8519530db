// The console's one DOM helper. Text always goes in as text nodes, never
// as HTML, so nothing an API answer holds (a label, an error message, a
// webhook's last error) can become markup or script.

/**
 * h('a', {href: '#/', class: 'x', onclick: f}, 'text', child, [more])
 * makes an element; null and false children are skipped.
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...any} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/**
 * fill replaces el's children with children as h takes them (arrays
 * flattened, null and false skipped): replaceChildren itself would write
 * "null" for a child that is absent.
 * @param {Element} el
 * @param {...any} children
 */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** A table in a scroll region that a keyboard can reach (phones scroll it sideways). */
export function table(caption, head, rows) {
  return h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': caption },
    h('table', {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, head.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: head.length, class: 'empty' }, 'none')))));
}

/** A definition list of [term, value] pairs, values skipped when empty. */
export function facts(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** A time as the operator reads it (UTC, to the second); '' for none. */
export function when(t) {
  if (t === undefined || t === null || t === '' || t === 0) return '';
  const d = typeof t === 'number' ? new Date(t * 1000) : new Date(t);
  if (Number.isNaN(d.getTime()) || d.getUTCFullYear() < 1971) return '';
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** Bytes in binary units. */
export function bytes(n) {
  if (!n) return '0 B';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
}

/** A duration in seconds, short. */
export function duration(s) {
  if (!(s > 0)) return '0s';
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + Math.floor(s % 60) + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + Math.floor((s % 3600) / 60) + 'm';
  return Math.floor(s / 86400) + 'd' + Math.floor((s % 86400) / 3600) + 'h';
}

/**
 * confirm asks in a modal <dialog> (not window.confirm, which a page
 * cannot style or label) and resolves to true when the operator
 * confirms. extra, when given, is an element put in the dialog (a reason
 * field); its value is read by the caller after true.
 */
export function confirm(question, action, extra) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'submit', value: 'yes', class: 'danger' }, action);
    const no = h('button', { type: 'submit', value: 'no' }, 'Cancel');
    const title = h('h2', { id: 'confirm-title' }, action + '?');
    const dlg = h('dialog', { 'aria-labelledby': 'confirm-title', class: 'confirm' },
      h('form', { method: 'dialog' }, title, h('p', {}, question), extra ?? null, h('div', { class: 'buttons' }, no, yes)));
    dlg.addEventListener('close', () => { dlg.remove(); resolve(dlg.returnValue === 'yes'); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

/** An error shown where the page would be. */
export function failure(err) {
  return h('p', { class: 'error', role: 'alert' }, err?.message ?? String(err));
}
