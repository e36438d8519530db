// The console's one way to the server: fetch to its own origin, with the
// API key the operator typed in the Authorization header, never a cookie
// (ADR 0282). The key lives in sessionStorage: it survives a reload of
// the tab and is gone when the tab closes; no other tab or site sees it.

const KEY = 'claimcheck.console.key';

export const apiKey = {
  get: () => sessionStorage.getItem(KEY) ?? '',
  set: (v) => sessionStorage.setItem(KEY, v),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An error answer of the API: its status, code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${message} (${status}${code ? ' ' + code : ''})`);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const k = apiKey.get();
  return k ? { ...extra, Authorization: 'Bearer ' + k } : extra;
}

/**
 * path plus the query parameters that are set (arrays repeat).
 * @param {string} path
 * @param {Record<string, any>} [query]
 */
export function url(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    for (const x of Array.isArray(v) ? v : [v]) if (x !== undefined && x !== null && x !== '') q.append(k, String(x));
  }
  const s = q.toString();
  return s ? path + '?' + s : path;
}

/**
 * Calls the API and answers its JSON (null for 204).
 * @param {string} path
 * @param {{method?: string, query?: Record<string, any>, body?: any}} [opts]
 */
export async function api(path, { method = 'GET', query, body } = {}) {
  const init = { method, headers: headers(), credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    init.headers = headers({ 'Content-Type': 'application/json' });
    init.body = JSON.stringify(body);
  }
  const r = await fetch(url(path, query), init);
  if (r.status === 204) return null;
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { message: text } }
  if (!r.ok) {
    const e = data?.error ?? data ?? {};
    throw new ApiError(r.status, e.code, e.message ?? r.statusText);
  }
  return data;
}

/**
 * Every page of a listing that answers {field: [...], next}, up to max
 * items (the console never walks a whole store).
 */
export async function all(path, field, { query = {}, max = 1000, cursorParam = 'cursor' } = {}) {
  const out = [];
  let cursor;
  do {
    const page = await api(path, { query: { ...query, [cursorParam]: cursor } });
    out.push(...(page[field] ?? []));
    cursor = page.next;
  } while (cursor && out.length < max);
  return out;
}

/**
 * Downloads a claim's payload through the API (a redeem: it counts as a
 * read) and hands it to the browser as a file; the page never shows it.
 */
export async function download(id, ns) {
  const r = await fetch(url('/v1/claims/' + encodeURIComponent(id), { ns }), { headers: headers(), credentials: 'omit', cache: 'no-store' });
  if (!r.ok) {
    const e = (await r.json().catch(() => ({})))?.error ?? {};
    throw new ApiError(r.status, e.code, e.message ?? r.statusText);
  }
  const blob = await r.blob();
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = id;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/**
 * Reads the tenant's live Server-Sent Events stream with fetch (an
 * EventSource cannot send the Authorization header) and calls onEvent
 * with each event's JSON until signal aborts. It resumes after the last
 * id when the stream ends, as EventSource would.
 */
export async function stream(onEvent, signal, onState = () => {}) {
  let last = '';
  while (!signal.aborted) {
    try {
      const r = await fetch(url('/v1/events/stream', { last_event_id: last || undefined }), { headers: headers(), credentials: 'omit', signal });
      if (!r.ok) {
        const e = (await r.json().catch(() => ({})))?.error ?? {};
        throw new ApiError(r.status, e.code, e.message ?? r.statusText);
      }
      onState('open');
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('id:')) last = line.slice(3).trim();
            else if (line.startsWith('data:')) data += line.slice(5).trim();
          }
          if (data) onEvent(JSON.parse(data));
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      onState('error', err);
      if (err instanceof ApiError && err.status < 500 && err.status !== 429) return;
    }
    await new Promise((res) => setTimeout(res, 1000));
  }
}
