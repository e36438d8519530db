// The client of one claimcheck server: the HTTP API of docs/HTTP.md over
// fetch. What differs between Node and browsers comes in a Runtime, given
// by the entry point (node.js, index.js).

import { ClaimcheckError, ChecksumMismatchError, InvalidArgumentError, UnavailableError, errorOfResponse } from './errors.js';
import { encoder } from './bytes.js';
import { digestWith } from './digest.js';
import { isRef, parseRef, refParts } from './ref.js';
import { Payload, verifying } from './payload.js';
import { uploadResumable } from './tus.js';
import { injectTraceContext } from './tracecontext.js';

/**
 * @import { ClaimEvent, ClaimInfo, ClaimPage, ClientOptions, FollowOptions, ListOptions, NamespaceInfo, OffloadOptions,
 *   PageOptions, PutBody, PutOptions, Ref, RefLike, ResumableUploadOptions, SignalOptions, Subscription, SubscriptionAttemptPage,
 *   SubscriptionPage, SubscriptionSpec, UploadOptions } from './types.js'
 */
/** @import { FetchLike, Runtime, UploadTarget } from './runtime.js' */
/** @import { OpenTelemetryAPI } from './tracecontext.js' */

/**
 * Labels as the Claimcheck-Labels header: url.QueryEscape's form, spaces
 * as "+", then "+" itself escaped.
 * @param {Record<string, string>} labels
 */
function formatLabels(labels) {
  /** @param {string} s */
  const esc = (s) => encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return Object.keys(labels)
    .sort()
    .map((k) => `${esc(k)}=${esc(labels[k])}`)
    .join(',');
}

/**
 * A client of one claimcheck server, on the given Runtime; the entry
 * points export it with theirs.
 */
export class BaseClient {
  /** @type {URL} */
  #base;
  /** @type {string | undefined} */
  #apiKey;
  /** @type {FetchLike} */
  #fetch;
  /** @type {Map<string, number>} */
  #thresholds = new Map();
  /** @type {FetchLike | undefined} */
  #streamFetch;
  /** @type {Runtime} */
  #runtime;
  /** @type {OpenTelemetryAPI | null | undefined} */
  #otel;

  /**
   * @param {string | URL} url
   * @param {ClientOptions} options
   * @param {Runtime} runtime
   */
  constructor(url, { apiKey, fetch: f, opentelemetry } = {}, runtime) {
    if (typeof url !== 'string' && !(url instanceof URL)) throw new InvalidArgumentError('Client: want the server URL');
    const u = new URL(url, typeof location !== 'undefined' ? location.href : undefined);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError(`Client: URL scheme ${u.protocol} (want http: or https:)`);
    if (!u.pathname.endsWith('/')) u.pathname += '/';
    this.#base = u;
    this.#apiKey = apiKey;
    this.#fetch = f ?? globalThis.fetch.bind(globalThis);
    this.#runtime = runtime;
    this.#otel = opentelemetry;
    // Payloads go through the runtime's own sender (Node: node:http) only
    // when no fetch was given.
    this.#streamFetch = f ? undefined : runtime.streamFetch;
  }

  /**
   * @param {string} path
   * @param {string} [ns]
   */
  #url(path, ns) {
    const u = new URL(path, this.#base);
    if (ns) u.searchParams.set('ns', ns);
    return u;
  }

  /** @param {HeadersInit} [extra] */
  #headers(extra = {}) {
    const h = new Headers(extra);
    if (this.#apiKey) h.set('Authorization', `Bearer ${this.#apiKey}`);
    return h;
  }

  /**
   * Makes a request and returns the response if its status is want, else
   * throws the error of the answer's code.
   * @param {string} op
   * @param {URL} url
   * @param {RequestInit & { duplex?: 'half' }} init
   * @param {number} want
   * @param {FetchLike} [send]
   */
  async #send(op, url, init, want, send = this.#fetch) {
    if (init.headers instanceof Headers) await injectTraceContext(init.headers, this.#otel);
    let resp;
    try {
      resp = await send(url, init);
    } catch (e) {
      if (init.signal?.aborted) throw e;
      throw new UnavailableError(`${op}: ${/** @type {Error} */ (e).message}`, { cause: e });
    }
    if (resp.status !== want) throw await errorOfResponse(resp, op);
    return resp;
  }

  /**
   * Stores body as a new claim in namespace ns and returns its reference.
   * body: string, Uint8Array, ArrayBuffer, Blob, or (Node only: browsers
   * stream request bodies only over HTTP/2) a ReadableStream.
   * @param {string} ns
   * @param {PutBody} body
   * @param {PutOptions} [opts]
   * @returns {Promise<Ref>}
   */
  async put(ns, body, opts = {}) {
    const h = this.#headers();
    if (opts.contentType) h.set('Content-Type', opts.contentType);
    if (opts.digest) h.set('Claimcheck-Digest', opts.digest);
    if (opts.consumers) h.set('Claimcheck-Consumers', String(opts.consumers));
    if (opts.consumerNames?.length) h.set('Claimcheck-Consumer-Names', opts.consumerNames.map(encodeURIComponent).join(','));
    if (opts.labels) h.set('Claimcheck-Labels', formatLabels(opts.labels));
    /** @type {RequestInit & { duplex?: 'half' }} */
    const init = { method: 'PUT', headers: h, body: /** @type {BodyInit} */ (body), signal: opts.signal };
    const isStream = typeof ReadableStream !== 'undefined' && body instanceof ReadableStream;
    const isBlob = typeof Blob !== 'undefined' && body instanceof Blob;
    if (isStream) init.duplex = 'half';
    let send = this.#fetch;
    if ((isStream || isBlob) && this.#streamFetch) {
      send = this.#streamFetch;
      if (isBlob) h.set('Content-Length', String(body.size)); // node:http would send it chunked
    }
    const resp = await this.#send(`put to ${ns}`, this.#url(`v1/namespaces/${encodeURIComponent(ns)}/claims`), init, 201, send);
    return resp.json();
  }

  /**
   * Redeems a claim (a read) and returns its verified Payload. ref: a
   * reference, its JSON, or a claim id.
   * @param {RefLike} ref
   * @param {SignalOptions} [options]
   * @returns {Promise<Payload>}
   */
  async redeem(ref, { signal } = {}) {
    const { id, ns, ref: given } = refParts(ref);
    const op = `redeem ${id}`;
    const resp = await this.#send(op, this.#url(`v1/claims/${id}`, ns), { headers: this.#headers(), signal }, 200);
    const header = resp.headers.get('Claimcheck-Ref');
    if (!header) {
      resp.body?.cancel();
      throw new ClaimcheckError('no_ref', `${op}: the answer has no Claimcheck-Ref header (a proxy dropped it, or the server does not expose it to this page: http.cors.allowed_origins)`);
    }
    const got = parseRef(header);
    if (got.id !== id || (given && given.digest && given.digest !== got.digest)) {
      resp.body?.cancel();
      throw new ChecksumMismatchError(`${op}: the server answered claim ${got.id} (${got.digest}), not the one asked for`);
    }
    const hash = await this.#runtime.newHash();
    const body = resp.body ?? /** @type {ReadableStream<Uint8Array>} */ (new Response(new Uint8Array(0)).body);
    return new Payload(got, resp.headers.get('Content-Type') ?? 'application/octet-stream', verifying(body, got, hash, op));
  }

  /**
   * The claim's state, deadlines and counters.
   * @param {RefLike} ref
   * @param {SignalOptions} [options]
   * @returns {Promise<ClaimInfo>}
   */
  async stat(ref, { signal } = {}) {
    const { id, ns } = refParts(ref);
    const resp = await this.#send(`stat ${id}`, this.#url(`v1/claims/${id}/meta`, ns), { headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /**
   * A consumer is done with the claim (an ack); idempotent per consumer.
   * @param {RefLike} ref
   * @param {{ consumer?: string, signal?: AbortSignal }} [options]
   * @returns {Promise<void>}
   */
  async release(ref, { consumer, signal } = {}) {
    const { id, ns } = refParts(ref);
    const headers = this.#headers();
    /** @type {RequestInit} */
    const init = { method: 'POST', headers, signal };
    if (consumer) {
      headers.set('Content-Type', 'application/json');
      init.body = JSON.stringify({ consumer });
    }
    const resp = await this.#send(`release ${id}`, this.#url(`v1/claims/${id}/release`, ns), init, 204);
    await resp.body?.cancel();
  }

  /**
   * Finishes the claim now (reason "deleted").
   * @param {RefLike} ref
   * @param {SignalOptions} [options]
   * @returns {Promise<void>}
   */
  async delete(ref, { signal } = {}) {
    const { id, ns } = refParts(ref);
    const resp = await this.#send(`delete ${id}`, this.#url(`v1/claims/${id}`, ns), { method: 'DELETE', headers: this.#headers(), signal }, 204);
    await resp.body?.cancel();
  }

  /**
   * Moves the claim's expiry later, up to the namespace's
   * ttl.max_lifetime, and answers its ClaimInfo. Give either expiresAt (a
   * Date or an RFC 3339 string; repeating it changes nothing) or by (a
   * duration such as "24h", added to the current expiry).
   * @param {RefLike} ref
   * @param {{ expiresAt?: Date | string, by?: string, signal?: AbortSignal }} options
   * @returns {Promise<ClaimInfo>}
   */
  async extend(ref, { expiresAt, by, signal } = {}) {
    const { id, ns } = refParts(ref);
    if ((expiresAt === undefined) === (by === undefined)) {
      throw new InvalidArgumentError(`extend ${id}: give one of expiresAt and by`);
    }
    const body = by !== undefined ? { by: String(by) } : { expires_at: expiresAt instanceof Date ? expiresAt.toISOString() : String(expiresAt) };
    const init = { method: 'POST', headers: this.#headers({ 'Content-Type': 'application/json' }), body: JSON.stringify(body), signal };
    const resp = await this.#send(`extend ${id}`, this.#url(`v1/claims/${id}/extend`, ns), init, 200);
    return resp.json();
  }

  /**
   * One page of a namespace's claims, newest first (or soonest expiry
   * first with order "expiring"): {claims, next}. labels: {key: value},
   * all must match; pass next as cursor for the following page.
   * @param {string} ns
   * @param {ListOptions} [options]
   * @returns {Promise<ClaimPage>}
   */
  async list(ns, { labels, state, expiresAfter, expiresBefore, order, cursor, limit, signal } = {}) {
    const u = this.#url(`v1/namespaces/${encodeURIComponent(ns)}/claims`);
    for (const [k, v] of Object.entries(labels ?? {})) u.searchParams.append('label', `${k}=${v}`);
    /** @param {Date | string} t */
    const time = (t) => (t instanceof Date ? t.toISOString() : String(t));
    if (state) u.searchParams.set('state', state);
    if (expiresAfter !== undefined) u.searchParams.set('expires_after', time(expiresAfter));
    if (expiresBefore !== undefined) u.searchParams.set('expires_before', time(expiresBefore));
    if (order) u.searchParams.set('order', order);
    if (cursor) u.searchParams.set('cursor', cursor);
    if (limit) u.searchParams.set('limit', String(limit));
    const resp = await this.#send(`list ${ns}`, u, { headers: this.#headers(), signal }, 200);
    const page = await resp.json();
    return { claims: page.claims ?? [], next: page.next };
  }

  // Subscriptions (docs/HTTP.md, "Pushed events"): they need a
  // tenant-wide admin key.

  /**
   * Makes a subscription of the key's tenant; the answer carries its
   * secret, which is never shown again.
   * @param {SubscriptionSpec} spec
   * @param {SignalOptions} [options]
   * @returns {Promise<Subscription>}
   */
  async createSubscription(spec, { signal } = {}) {
    const h = this.#headers();
    h.set('Content-Type', 'application/json');
    const init = { method: 'POST', headers: h, body: JSON.stringify(spec), signal };
    const resp = await this.#send('create subscription', this.#url('v1/subscriptions'), init, 201);
    return resp.json();
  }

  /**
   * One page of the key's tenant's subscriptions, by id: {subscriptions,
   * next}; pass next as cursor for the following page.
   * @param {PageOptions} [options]
   * @returns {Promise<SubscriptionPage>}
   */
  async subscriptions({ cursor, limit, signal } = {}) {
    const u = this.#paged(this.#url('v1/subscriptions'), cursor, limit);
    const resp = await this.#send('list subscriptions', u, { headers: this.#headers(), signal }, 200);
    const page = await resp.json();
    return { subscriptions: page.subscriptions ?? [], next: page.next };
  }

  /**
   * Deletes a subscription made over the API.
   * @param {string} id
   * @param {SignalOptions} [options]
   */
  async deleteSubscription(id, { signal } = {}) {
    await this.#send(`delete subscription ${id}`, this.#subscriptionURL(id), { method: 'DELETE', headers: this.#headers(), signal }, 204);
  }

  /**
   * Delivers again to a dead-lettered subscription.
   * @param {string} id
   * @param {SignalOptions} [options]
   */
  async resumeSubscription(id, { signal } = {}) {
    await this.#send(`resume subscription ${id}`, this.#subscriptionURL(id, 'resume'), { method: 'POST', headers: this.#headers(), signal }, 204);
  }

  /**
   * One page of a subscription's parked and dead-lettered events, by seq:
   * {attempts, next}.
   * @param {string} id
   * @param {PageOptions} [options]
   * @returns {Promise<SubscriptionAttemptPage>}
   */
  async subscriptionAttempts(id, { cursor, limit, signal } = {}) {
    const u = this.#paged(this.#subscriptionURL(id, 'attempts'), cursor, limit);
    const resp = await this.#send(`subscription attempts ${id}`, u, { headers: this.#headers(), signal }, 200);
    const page = await resp.json();
    return { attempts: page.attempts ?? [], next: page.next };
  }

  /**
   * Has a subscription's parked and dead-lettered events delivered now:
   * {retried}, how many.
   * @param {string} id
   * @param {SignalOptions} [options]
   * @returns {Promise<{ retried: number }>}
   */
  async retrySubscription(id, { signal } = {}) {
    const resp = await this.#send(`retry subscription ${id}`, this.#subscriptionURL(id, 'retry'), { method: 'POST', headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /**
   * Has a subscription's events after since delivered again: since is a
   * time (a Date or RFC 3339) or an event seq. Answers {cursor}, the
   * cursor the server set (a string).
   * @param {string} id
   * @param {Date | string} since
   * @param {SignalOptions} [options]
   * @returns {Promise<{ cursor: string }>}
   */
  async replaySubscription(id, since, { signal } = {}) {
    const u = this.#subscriptionURL(id, 'replay');
    u.searchParams.set('since', since instanceof Date ? since.toISOString() : String(since));
    const resp = await this.#send(`replay subscription ${id}`, u, { method: 'POST', headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /**
   * @param {string} id
   * @param {string} [action]
   */
  #subscriptionURL(id, action) {
    return this.#url(`v1/subscriptions/${encodeURIComponent(id)}${action ? '/' + action : ''}`);
  }

  /**
   * @param {URL} u
   * @param {string} [cursor]
   * @param {number} [limit]
   */
  #paged(u, cursor, limit) {
    if (cursor) u.searchParams.set('cursor', cursor);
    if (limit) u.searchParams.set('limit', String(limit));
    return u;
  }

  /**
   * The namespace's effective policy, limits and usage.
   * @param {string} ns
   * @param {SignalOptions} [options]
   * @returns {Promise<NamespaceInfo>}
   */
  async namespace(ns, { signal } = {}) {
    const resp = await this.#send(`namespace ${ns}`, this.#url(`v1/namespaces/${encodeURIComponent(ns)}`), { headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /**
   * The sha256 of bytes or a Blob, as "sha256:<hex>", read in pieces.
   * @param {string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob} data
   * @param {{ onProgress?: import('./types.js').OnProgress, signal?: AbortSignal }} [options]
   */
  async #digest(data, options) {
    return digestWith(await this.#runtime.newHash(), data, options);
  }

  /**
   * Direct upload of a Blob or File: hash it, init, send the bytes to the
   * URL the server answers (the server itself, or an S3 bucket), confirm.
   * onProgress gets {phase: "hashing"|"uploading", loaded, total}.
   * @param {string} ns
   * @param {Blob} blob
   * @param {UploadOptions} [opts]
   * @returns {Promise<Ref>}
   */
  async upload(ns, blob, opts = {}) {
    if (typeof Blob === 'undefined' || !(blob instanceof Blob)) throw new InvalidArgumentError('upload: want a Blob or File');
    const { onProgress, signal } = opts;
    const sha256 = opts.digest ?? (await this.#digest(blob, { onProgress, signal }));
    /** @type {Record<string, unknown>} */
    const req = { size: blob.size, sha256 };
    const contentType = opts.contentType ?? blob.type;
    if (contentType) req.content_type = contentType;
    if (opts.labels) req.labels = opts.labels;
    if (opts.consumers) req.consumers = opts.consumers;
    if (opts.consumerNames?.length) req.consumer_names = opts.consumerNames;
    const h = this.#headers({ 'Content-Type': 'application/json' });
    if (opts.idempotencyKey) h.set('Idempotency-Key', opts.idempotencyKey);
    const resp = await this.#send(`init upload to ${ns}`, this.#url(`v1/namespaces/${encodeURIComponent(ns)}/uploads`),
      { method: 'POST', headers: h, body: JSON.stringify(req), signal }, 201);
    /** @type {UploadTarget} */
    const up = await resp.json();
    if (up.state === 'pending') {
      if (!up.url) throw new ClaimcheckError('no_url', `upload ${up.id}: the init answer has no URL`);
      await this.#runtime.sendBlob(this.#streamFetch ?? this.#fetch, up, blob, { onProgress, signal });
    }
    return this.confirmUpload(up.id, { signal });
  }

  /**
   * Resumable upload of a Blob or File (in Node: fs.openAsBlob(path))
   * over tus: hash it, create the upload with its sha256, send it in
   * chunks (each with its own checksum), and after a cut connection ask
   * the server for its offset and go on from there. Resolves to the
   * claim's ref, read from the Claimcheck-Ref header of the last answer.
   * onProgress gets {phase: "hashing"|"uploading", loaded, total}. Needs
   * the tus-js-client package, loaded on first use.
   * @param {string} ns
   * @param {Blob} blob
   * @param {ResumableUploadOptions} [opts]
   * @returns {Promise<Ref>}
   */
  async uploadResumable(ns, blob, opts = {}) {
    /** @type {Record<string, string>} */
    const headers = {};
    if (this.#apiKey) headers.Authorization = `Bearer ${this.#apiKey}`;
    const endpoint = this.#url(`v1/namespaces/${encodeURIComponent(ns)}/tus`).href;
    return uploadResumable({ endpoint, headers, ns, runtime: this.#runtime }, blob, opts);
  }

  /**
   * Confirms an upload whose bytes were sent; answers the claim's ref.
   * @param {string} id
   * @param {SignalOptions} [options]
   * @returns {Promise<Ref>}
   */
  async confirmUpload(id, { signal } = {}) {
    const resp = await this.#send(`confirm upload ${id}`, this.#url(`v1/uploads/${id}/confirm`), { method: 'POST', headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /**
   * The namespace's offload threshold in bytes, read once and remembered.
   * @param {string} ns
   * @returns {Promise<number>}
   */
  async threshold(ns) {
    if (!this.#thresholds.has(ns)) {
      const info = await this.namespace(ns);
      this.#thresholds.set(ns, Number(info.policy?.threshold ?? 0));
    }
    return /** @type {number} */ (this.#thresholds.get(ns));
  }

  /**
   * Offloads a JSON value: its JSON encoding at or over the namespace's
   * threshold is stored as a claim and its ref returned; a smaller value
   * comes back as it is. resolve() undoes it.
   * @template T
   * @param {string} ns
   * @param {T} value
   * @param {OffloadOptions} [opts]
   * @returns {Promise<T | Ref>}
   */
  async offload(ns, value, opts = {}) {
    const json = JSON.stringify(value);
    if (json === undefined) throw new InvalidArgumentError('offload: the value has no JSON encoding');
    const bytes = encoder.encode(json);
    const threshold = opts.threshold ?? (await this.threshold(ns));
    if (bytes.byteLength < threshold) return value;
    return this.put(ns, bytes, { ...opts, contentType: 'application/json', digest: await this.#digest(bytes) });
  }

  /**
   * The value offload() was given: a ref is redeemed (verified) and parsed.
   * @template [T=unknown]
   * @param {T | Ref} value
   * @param {SignalOptions} [options]
   * @returns {Promise<T>}
   */
  async resolve(value, { signal } = {}) {
    if (!isRef(value)) return /** @type {T} */ (value);
    const p = await this.redeem(value, { signal });
    return p.json();
  }

  /**
   * The live stream of the key's tenant's events (GET /v1/events/stream,
   * Server-Sent Events), as an async iterator: events as they happen,
   * from now or after options.lastEventId. A broken connection is opened
   * again after the last event yielded (Last-Event-ID), so none is missed
   * or repeated; an error answer of the server (a filter it refuses, a
   * key without the right) is thrown. Aborting options.signal ends it.
   * Unlike EventSource it sends the API key, and works in Node too.
   * @param {FollowOptions} [options]
   * @returns {AsyncGenerator<ClaimEvent, void, void>}
   */
  async *events({ types, namespaces, labels, lastEventId, signal } = {}) {
    const u = this.#url('v1/events/stream');
    for (const t of types ?? []) u.searchParams.append('type', t);
    for (const ns of namespaces ?? []) u.searchParams.append('ns', ns);
    for (const [k, v] of Object.entries(labels ?? {})) u.searchParams.append('label', `${k}=${v}`);
    let last = lastEventId;
    /** The server's reconnection time (its retry field), in ms. */
    const hint = { retry: 1000 };
    while (!signal?.aborted) {
      const headers = this.#headers({ Accept: 'text/event-stream' });
      if (last) headers.set('Last-Event-ID', last);
      let resp;
      try {
        resp = await this.#send('events stream', u, { headers, signal }, 200);
      } catch (e) {
        if (signal?.aborted) return;
        const status = /** @type {ClaimcheckError} */ (e).status ?? 0;
        if (!(e instanceof UnavailableError) && status < 500) throw e;
        resp = undefined;
      }
      if (resp?.body) {
        try {
          for await (const [id, event, data] of sseMessages(resp.body, hint)) {
            // A server shutting down ends the stream with a "shutdown"
            // message: no event, no id; reconnect after its retry time
            // (ADR 0273).
            if (event === 'shutdown') continue;
            /** @type {ClaimEvent} */
            const ev = JSON.parse(data);
            // The seq is a JSON string; from an older server a number,
            // perhaps rounded: the SSE id is its exact text.
            if (id) ev.seq = id;
            ev.id = id;
            if (id) last = id;
            yield ev;
          }
        } catch (e) {
          if (signal?.aborted) return;
          // A broken stream: reconnect from the last event.
        }
      }
      await new Promise((resolve) => setTimeout(resolve, hint.retry));
    }
  }

}

/**
 * The messages of a Server-Sent Events body: [id, event, data] for each
 * that has data (comments skipped); a retry field sets hint.retry.
 * @param {ReadableStream<Uint8Array>} body
 * @param {{retry: number}} hint
 * @returns {AsyncGenerator<[string, string, string], void, void>}
 */
async function* sseMessages(body, hint) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let id = '';
  let event = '';
  /** @type {string[]} */
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (data.length) yield [id, event, data.join('\n')];
          data = [];
          event = '';
          continue;
        }
        const colon = line.indexOf(':');
        if (colon === 0) continue;
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(val);
        else if (field === 'id') id = val;
        else if (field === 'event') event = val;
        else if (field === 'retry' && /^[0-9]+$/.test(val)) hint.retry = Number(val);
      }
    }
  } finally {
    // A loop over events() that stops (break, return, a throw) ends here
    // too: cancelling the body closes the connection, which would
    // otherwise stay open until the server or the signal ends it, and
    // count against the tenant's http.max_event_streams_per_tenant.
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
