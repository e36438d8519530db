// claimcheck client for browsers and Node 20+ (plain ESM; the types are
// in index.d.ts beside this file). It speaks the HTTP API of docs/HTTP.md.
//
// Verification: a redeemed payload is hashed and counted as it arrives
// and checked against the size and sha256 of its Claimcheck-Ref header.
// A browser cannot read the server's Claimcheck-Error trailer, so this
// check is what stands between a broken stream and the caller: the
// stream errors at its end instead of closing, and bytes() rejects.

const REF_TYPE = 'claim_check_ref';

// ---- errors (docs/HTTP.md "Errors"; one class per code) ----

/** Base class of every error the server answers, and of client-side failures. */
export class ClaimcheckError extends Error {
  constructor(code, message, { status = 0, reason, at, retryAfter, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'ClaimcheckError';
    this.code = code;
    this.status = status;
    if (reason !== undefined) this.reason = reason;
    if (at !== undefined) this.at = at;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

const define = (name, code, base = ClaimcheckError) => {
  const C = class extends base {
    constructor(message, opts) {
      super(code, message, opts);
      this.name = name;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
};

export const NotFoundError = define('NotFoundError', 'not_found');
export const GoneError = define('GoneError', 'gone');
/** A claim past its max_age: a GoneError with reason "expired". */
export class ExpiredError extends GoneError {
  constructor(message, opts) {
    super(message, opts);
    this.code = 'expired';
    this.name = 'ExpiredError';
  }
}
export const ChecksumMismatchError = define('ChecksumMismatchError', 'checksum_mismatch');
export const TooLargeError = define('TooLargeError', 'too_large');
export const QuotaExceededError = define('QuotaExceededError', 'quota_exceeded');
export const InvalidArgumentError = define('InvalidArgumentError', 'invalid_argument');
export const UnauthenticatedError = define('UnauthenticatedError', 'unauthenticated');
export const PermissionDeniedError = define('PermissionDeniedError', 'permission_denied');
export const RateLimitedError = define('RateLimitedError', 'rate_limited');
export const HeldError = define('HeldError', 'held');
export const UnavailableError = define('UnavailableError', 'unavailable');
export const InternalError = define('InternalError', 'internal');
export const NoRouteError = define('NoRouteError', 'no_route');
export const MethodNotAllowedError = define('MethodNotAllowedError', 'method_not_allowed');

const byCode = {
  not_found: NotFoundError,
  gone: GoneError,
  expired: ExpiredError,
  checksum_mismatch: ChecksumMismatchError,
  too_large: TooLargeError,
  quota_exceeded: QuotaExceededError,
  invalid_argument: InvalidArgumentError,
  unauthenticated: UnauthenticatedError,
  permission_denied: PermissionDeniedError,
  rate_limited: RateLimitedError,
  held: HeldError,
  unavailable: UnavailableError,
  internal: InternalError,
  no_route: NoRouteError,
  method_not_allowed: MethodNotAllowedError,
};

/** The server's error codes, each with its class. */
export const ERROR_CLASSES = Object.freeze({ ...byCode });

function retryAfterOf(resp) {
  const v = resp.headers.get('Retry-After');
  if (v === null) return undefined;
  const s = Number(v);
  return Number.isFinite(s) ? s : undefined;
}

// errorOf turns a non-2xx answer into the error of its code. An answer
// that is not the API's JSON (a proxy's page, S3's XML) keeps its status:
// gateway failures (502, 503, 504) are UnavailableError, anything else a
// ClaimcheckError with code "http_<status>".
async function errorOf(resp, op) {
  const text = await resp.text().catch(() => '');
  return errorFromAnswer(resp.status, text, op, retryAfterOf(resp));
}

/**
 * The error of an answer given as its status, body text and Retry-After
 * seconds (for answers that did not come through fetch: tus-js-client's).
 */
export function errorFromAnswer(status, text, op, retryAfter) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const opts = { status, retryAfter };
  if (body && typeof body.code === 'string' && typeof body.message === 'string') {
    const C = byCode[body.code];
    const msg = `${op}: ${body.message}`;
    if (C) return new C(msg, { ...opts, reason: body.reason, at: body.at });
    return new ClaimcheckError(body.code, msg, opts);
  }
  const snippet = text.length > 200 ? text.slice(0, 200) + '…' : text;
  const msg = `${op}: HTTP ${status}${snippet ? ': ' + snippet : ''}`;
  if (status === 502 || status === 503 || status === 504) return new UnavailableError(msg, opts);
  if (status === 460) return new ChecksumMismatchError(msg, opts); // tus: a chunk or payload whose checksum did not match
  return new ClaimcheckError(`http_${status}`, msg, opts);
}

// ---- sha256, streaming ----

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

// newHash returns an incremental sha256: Node's own, or a small pure-JS
// one in browsers, whose WebCrypto can only hash whole buffers.
async function newHash() {
  if (isNode) {
    const { createHash } = await import('node:crypto');
    const h = createHash('sha256');
    return { update: (b) => h.update(b), hex: () => h.digest('hex') };
  }
  const { sha256 } = await import('@noble/hashes/sha2');
  const h = sha256.create();
  return { update: (b) => h.update(b), hex: () => toHex(h.digest()) };
}

function toHex(bytes) {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/**
 * sha256 of bytes or a Blob, as "sha256:<hex>", read in pieces: a large
 * File is never held in memory whole.
 */
export async function digestOf(data, { onProgress, signal } = {}) {
  const h = await newHash();
  if (typeof Blob !== 'undefined' && data instanceof Blob) {
    const total = data.size;
    let loaded = 0;
    const reader = data.stream().getReader();
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      if (done) break;
      h.update(value);
      loaded += value.byteLength;
      onProgress?.({ phase: 'hashing', loaded, total });
    }
  } else {
    h.update(toBytes(data));
  }
  return 'sha256:' + h.hex();
}

const encoder = new TextEncoder();

function toBytes(data) {
  if (typeof data === 'string') return encoder.encode(data);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new InvalidArgumentError(`want a string, Uint8Array, ArrayBuffer or Blob, got ${Object.prototype.toString.call(data)}`);
}

// ---- refs ----

/** Whether v is a claimcheck reference object. */
export function isRef(v) {
  return !!v && typeof v === 'object' && v.type === REF_TYPE && typeof v.id === 'string';
}

const claimIdPattern = /^cc_[A-Za-z0-9_-]{22}$/;
const digestPattern = /^sha256:[0-9a-f]{64}$/;

// refParts accepts a ref object, its JSON, or a bare claim id.
function refParts(ref) {
  if (typeof ref === 'string') {
    const s = ref.trim();
    if (s.startsWith('{')) ref = parseRef(s);
    else if (claimIdPattern.test(s)) return { id: s };
    else throw new InvalidArgumentError(`ref: want a reference or a claim id (cc_…), got ${JSON.stringify(s.slice(0, 40))}`);
  }
  if (!isRef(ref)) throw new InvalidArgumentError('ref: want a reference object ({"type":"claim_check_ref",…}), its JSON, or a claim id');
  if (!claimIdPattern.test(ref.id)) throw new InvalidArgumentError(`ref: claim id ${JSON.stringify(ref.id)} is malformed`);
  return { id: ref.id, ns: ref.ns, ref };
}

/** Parses a reference from its JSON, checking what a client relies on. */
export function parseRef(json) {
  let r;
  try {
    r = JSON.parse(json);
  } catch (e) {
    throw new InvalidArgumentError(`ref: not JSON: ${e.message}`);
  }
  if (!r || r.type !== REF_TYPE) throw new InvalidArgumentError(`ref: type is ${JSON.stringify(r?.type)}, want "${REF_TYPE}"`);
  if (r.v !== 1) throw new InvalidArgumentError(`ref: unsupported version ${r.v} (this client reads version 1)`);
  if (!claimIdPattern.test(r.id ?? '')) throw new InvalidArgumentError(`ref: claim id ${JSON.stringify(r.id)} is malformed`);
  if (!digestPattern.test(r.digest ?? '')) throw new InvalidArgumentError(`ref: digest ${JSON.stringify(r.digest)} is not sha256:<64 lowercase hex>`);
  if (!Number.isSafeInteger(r.size) || r.size < 0) throw new InvalidArgumentError(`ref: size ${r.size} is not a byte count`);
  return r;
}

// ---- payloads ----

/**
 * A redeemed payload. Its bytes are verified against the ref's size and
 * sha256 as they arrive; read them once, through body, bytes(), text(),
 * json() or blob().
 */
export class Payload {
  #body;
  #used = false;
  constructor(ref, contentType, body) {
    this.ref = ref;
    this.size = ref.size;
    this.contentType = contentType;
    this.#body = body;
  }

  /**
   * The verified stream. Bytes arrive as the server sends them; the
   * stream errors (ChecksumMismatchError) instead of closing when the
   * whole is not the ref's bytes, so a consumer that waits for the end
   * never takes a broken payload for a whole one.
   */
  get body() {
    if (this.#used) throw new ClaimcheckError('used', 'payload: the body was already read');
    this.#used = true;
    return this.#body;
  }

  /** The whole payload, once verified; rejects on any mismatch. */
  async bytes() {
    const out = new Uint8Array(this.size);
    let n = 0;
    const reader = this.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out.set(value, n); // the verifier has already refused more than size bytes
      n += value.byteLength;
    }
    return out;
  }

  async text() {
    return new TextDecoder().decode(await this.bytes());
  }

  async json() {
    return JSON.parse(await this.text());
  }

  async blob() {
    return new Blob([await this.bytes()], { type: this.contentType });
  }
}

// verifying wraps body in a stream that passes bytes on as they come and
// checks the count at every chunk and the sha256 at the end.
function verifying(body, ref, hash, op) {
  let n = 0;
  const mismatch = (what) =>
    new ChecksumMismatchError(`${op}: ${what}; the payload is not the claim's bytes (want ${ref.size} bytes, ${ref.digest})`);
  return body.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        n += chunk.byteLength;
        if (n > ref.size) {
          controller.error(mismatch(`more than ${ref.size} bytes arrived`));
          return;
        }
        hash.update(chunk);
        controller.enqueue(chunk);
      },
      flush(controller) {
        if (n !== ref.size) {
          controller.error(mismatch(`the stream ended after ${n} of ${ref.size} bytes`));
          return;
        }
        const got = 'sha256:' + hash.hex();
        if (got !== ref.digest) controller.error(mismatch(`the bytes hash to ${got}`));
      },
    }),
  );
}

// ---- the client ----

/**
 * A client of one claimcheck server.
 *
 *   const cc = new Client('https://claims.example.com', { apiKey })
 */
export class Client {
  #base;
  #apiKey;
  #fetch;
  #thresholds = new Map();
  #nodeStreams;

  constructor(url, { apiKey, fetch: f } = {}) {
    if (typeof url !== 'string' && !(url instanceof URL)) throw new InvalidArgumentError('Client: want the server URL');
    const u = new URL(url, typeof location !== 'undefined' ? location.href : undefined);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError(`Client: URL scheme ${u.protocol} (want http: or https:)`);
    if (!u.pathname.endsWith('/')) u.pathname += '/';
    this.#base = u;
    this.#apiKey = apiKey;
    this.#fetch = f ?? globalThis.fetch.bind(globalThis);
    // Node's fetch writes a streamed request body without waiting for
    // the socket (Node 20), so a large upload would sit in memory; with
    // the default fetch, Node sends payloads through node:http instead.
    this.#nodeStreams = isNode && !f;
  }

  #url(path, ns) {
    const u = new URL(path, this.#base);
    if (ns) u.searchParams.set('ns', ns);
    return u;
  }

  #headers(extra = {}) {
    const h = new Headers(extra);
    if (this.#apiKey) h.set('Authorization', `Bearer ${this.#apiKey}`);
    return h;
  }

  // #send makes a request and returns the response if its status is want,
  // else throws the error of the answer's code.
  async #send(op, url, init, want, send = this.#fetch) {
    let resp;
    try {
      resp = await send(url, init);
    } catch (e) {
      if (init.signal?.aborted) throw e;
      throw new UnavailableError(`${op}: ${e.message}`, { cause: e });
    }
    if (resp.status !== want) throw await errorOf(resp, op);
    return resp;
  }

  /**
   * Stores body as a new claim in namespace ns and returns its reference.
   * body: string, Uint8Array, ArrayBuffer, Blob, or (Node only: browsers
   * stream request bodies only over HTTP/2) a ReadableStream.
   */
  async put(ns, body, opts = {}) {
    const h = this.#headers();
    if (opts.contentType) h.set('Content-Type', opts.contentType);
    if (opts.digest) h.set('Claimcheck-Digest', opts.digest);
    if (opts.consumers) h.set('Claimcheck-Consumers', String(opts.consumers));
    if (opts.consumerNames?.length) h.set('Claimcheck-Consumer-Names', opts.consumerNames.map(encodeURIComponent).join(','));
    if (opts.labels) h.set('Claimcheck-Labels', formatLabels(opts.labels));
    const init = { method: 'PUT', headers: h, body, signal: opts.signal };
    const isStream = typeof ReadableStream !== 'undefined' && body instanceof ReadableStream;
    const isBlob = typeof Blob !== 'undefined' && body instanceof Blob;
    if (isStream) init.duplex = 'half';
    let send = this.#fetch;
    if ((isStream || isBlob) && this.#nodeStreams) {
      send = nodeFetch;
      if (isBlob) h.set('Content-Length', String(body.size)); // node:http would send it chunked
    }
    const resp = await this.#send(`put to ${ns}`, this.#url(`v1/namespaces/${encodeURIComponent(ns)}/claims`), init, 201, send);
    return resp.json();
  }

  /**
   * Redeems a claim (a read) and returns its verified Payload. ref: a
   * reference, its JSON, or a claim id.
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
    const hash = await newHash();
    const body = resp.body ?? new Response(new Uint8Array(0)).body;
    return new Payload(got, resp.headers.get('Content-Type') ?? 'application/octet-stream', verifying(body, got, hash, op));
  }

  /** The claim's state, deadlines and counters (ClaimInfo). */
  async stat(ref, { signal } = {}) {
    const { id, ns } = refParts(ref);
    const resp = await this.#send(`stat ${id}`, this.#url(`v1/claims/${id}/meta`, ns), { headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /** A consumer is done with the claim (an ack); idempotent per consumer. */
  async release(ref, { consumer, signal } = {}) {
    const { id, ns } = refParts(ref);
    const init = { method: 'POST', headers: this.#headers(), signal };
    if (consumer) {
      init.headers.set('Content-Type', 'application/json');
      init.body = JSON.stringify({ consumer });
    }
    const resp = await this.#send(`release ${id}`, this.#url(`v1/claims/${id}/release`, ns), init, 204);
    await resp.body?.cancel();
  }

  /** Finishes the claim now (reason "deleted"). */
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
   */
  async list(ns, { labels, state, expiresAfter, expiresBefore, order, cursor, limit, signal } = {}) {
    const u = this.#url(`v1/namespaces/${encodeURIComponent(ns)}/claims`);
    for (const [k, v] of Object.entries(labels ?? {})) u.searchParams.append('label', `${k}=${v}`);
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

  /** The namespace's effective policy, limits and usage. */
  async namespace(ns, { signal } = {}) {
    const resp = await this.#send(`namespace ${ns}`, this.#url(`v1/namespaces/${encodeURIComponent(ns)}`), { headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /**
   * Direct upload of a Blob or File: hash it, init, send the bytes to the
   * URL the server answers (the server itself, or an S3 bucket), confirm.
   * onProgress gets {phase: "hashing"|"uploading", loaded, total}.
   */
  async upload(ns, blob, opts = {}) {
    if (typeof Blob === 'undefined' || !(blob instanceof Blob)) throw new InvalidArgumentError('upload: want a Blob or File');
    const { onProgress, signal } = opts;
    const sha256 = opts.digest ?? (await digestOf(blob, { onProgress, signal }));
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
    const up = await resp.json();
    if (up.state === 'pending') {
      if (!up.url) throw new ClaimcheckError('no_url', `upload ${up.id}: the init answer has no URL`);
      await sendBlob(this.#nodeStreams ? nodeFetch : this.#fetch, up, blob, { onProgress, signal });
    }
    return this.confirmUpload(up.id, { signal });
  }

  /**
   * Resumable upload of a Blob or File (in Node: fs.openAsBlob(path))
   * over tus: hash it, create the upload with its sha256, send it in
   * chunks (each with its own checksum), and after a cut connection ask
   * the server for its offset and go on from there. Resolves to the
   * claim's ref, read from the Claimcheck-Ref header of the last answer.
   * onProgress gets {phase: "hashing"|"uploading", loaded, total}; see
   * index.d.ts for the other options (uploadUrl, onUploadUrl, chunkSize,
   * retryDelays, urlStorage). Needs the tus-js-client package, loaded on
   * first use.
   */
  async uploadResumable(ns, blob, opts = {}) {
    const { uploadResumable } = await import('./tus.js');
    const headers = {};
    if (this.#apiKey) headers.Authorization = `Bearer ${this.#apiKey}`;
    return uploadResumable({ endpoint: this.#url(`v1/namespaces/${encodeURIComponent(ns)}/tus`).href, headers, ns }, blob, opts);
  }

  /** Confirms an upload whose bytes were sent; answers the claim's ref. */
  async confirmUpload(id, { signal } = {}) {
    const resp = await this.#send(`confirm upload ${id}`, this.#url(`v1/uploads/${id}/confirm`), { method: 'POST', headers: this.#headers(), signal }, 200);
    return resp.json();
  }

  /** The namespace's offload threshold in bytes, read once and remembered. */
  async threshold(ns) {
    if (!this.#thresholds.has(ns)) {
      const info = await this.namespace(ns);
      this.#thresholds.set(ns, Number(info.policy?.threshold ?? 0));
    }
    return this.#thresholds.get(ns);
  }

  /**
   * Offloads a JSON value: its JSON encoding at or over the namespace's
   * threshold is stored as a claim and its ref returned; a smaller value
   * comes back as it is. resolve() undoes it.
   */
  async offload(ns, value, opts = {}) {
    const json = JSON.stringify(value);
    if (json === undefined) throw new InvalidArgumentError('offload: the value has no JSON encoding');
    const bytes = encoder.encode(json);
    const threshold = opts.threshold ?? (await this.threshold(ns));
    if (bytes.byteLength < threshold) return value;
    return this.put(ns, bytes, { ...opts, contentType: 'application/json', digest: await digestOf(bytes) });
  }

  /** The value offload() was given: a ref is redeemed (verified) and parsed. */
  async resolve(value, { signal } = {}) {
    if (!isRef(value)) return value;
    const p = await this.redeem(value, { signal });
    return p.json();
  }
}

function formatLabels(labels) {
  // url.QueryEscape's form: spaces as "+", then "+" itself escaped.
  const esc = (s) => encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return Object.keys(labels)
    .sort()
    .map((k) => `${esc(k)}=${esc(labels[k])}`)
    .join(',');
}

const progressStep = 256 << 10;

// sendBlob sends the upload's bytes to its URL with its method and
// headers, no API key (the URL is the credential), reporting progress.
// Browsers: XMLHttpRequest, the one API with upload progress (fetch
// streams request bodies only over HTTP/2). Node: fetch with a counting
// stream and the length set, as S3 wants.
async function sendBlob(fetchFn, up, blob, { onProgress, signal }) {
  const op = `upload ${up.id}`;
  const total = blob.size;
  const method = up.method || 'PUT';
  const headers = up.headers ?? {};
  if (typeof XMLHttpRequest !== 'undefined') {
    await new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, up.url);
      // Content-Length is the browser's to set (from the Blob).
      for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'content-length') xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => onProgress?.({ phase: 'uploading', loaded: e.loaded, total });
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) {
          onProgress?.({ phase: 'uploading', loaded: total, total });
          resolve();
          return;
        }
        const resp = new Response(xhr.responseText, { status: xhr.status, headers: { 'Retry-After': xhr.getResponseHeader('Retry-After') ?? '' } });
        errorOf(resp, op).then(reject, reject);
      };
      xhr.onerror = () => reject(new UnavailableError(`${op}: the request failed (network, or the storage's CORS rules refuse this page's origin)`));
      xhr.onabort = () => reject(signal?.reason ?? new ClaimcheckError('aborted', `${op}: aborted`));
      signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      xhr.send(blob);
    });
    return;
  }
  let loaded = 0;
  let pending = new Uint8Array(0);
  const reader = blob.stream().getReader();
  const body = new ReadableStream({
    // Pieces of at most progressStep bytes, handed over as the request
    // takes them, so that progress follows the socket, not the file.
    async pull(controller) {
      if (pending.byteLength === 0) {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        pending = value;
      }
      const piece = pending.subarray(0, progressStep);
      pending = pending.subarray(piece.byteLength);
      loaded += piece.byteLength;
      onProgress?.({ phase: 'uploading', loaded, total });
      controller.enqueue(piece);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  let resp;
  try {
    resp = await fetchFn(up.url, {
      method,
      headers: { ...headers, 'Content-Length': String(total) },
      body: total === 0 ? new Uint8Array(0) : body,
      duplex: 'half',
      signal,
    });
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new UnavailableError(`${op}: ${e.message}`, { cause: e });
  }
  if (resp.status < 200 || resp.status >= 300) throw await errorOf(resp, op);
  await resp.body?.cancel();
}

// nodeFetch is the part of fetch the payload uploads use, on node:http:
// it writes the body as the socket drains, so memory stays bounded
// whatever the size. body: a Blob, a ReadableStream or bytes.
async function nodeFetch(url, { method, headers, body, signal }) {
  const u = new URL(url);
  const { request } = await import(u.protocol === 'https:' ? 'node:https' : 'node:http');
  const { once } = await import('node:events');
  const h = Object.fromEntries(new Headers(headers));
  return new Promise((resolve, reject) => {
    const req = request(u, { method, headers: h, signal });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const rh = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) rh.set(k, Array.isArray(v) ? v.join(', ') : v);
        const status = res.statusCode;
        const b = status === 204 || status === 304 ? null : Buffer.concat(chunks);
        resolve(new Response(b, { status, headers: rh }));
      });
    });
    (async () => {
      const stream = body instanceof Blob ? body.stream() : body instanceof ReadableStream ? body : null;
      if (stream === null) {
        req.end(body === undefined ? undefined : toBytes(body));
        return;
      }
      for await (const chunk of stream) {
        if (!req.write(chunk)) await once(req, 'drain');
      }
      req.end();
    })().catch((e) => req.destroy(e));
  });
}
