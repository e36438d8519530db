// Resumable uploads over tus 1.0.0, through tus-js-client: the protocol
// (create, HEAD for the offset after a failure, PATCH from there, retries
// with backoff, URL storage for resuming after a reload) is its; this
// module adds what claimcheck needs around it: the payload's sha256 in
// the metadata (the server checks the whole payload against it before it
// commits the claim), an Upload-Checksum on every chunk, a Blob source in
// Node, the reference read from the Claimcheck-Ref header of the last
// answer, and the client's error classes.
//
// tus-js-client is loaded on the first resumable upload, so the rest of
// the client neither loads nor needs it.

import { ClaimcheckError, ChecksumMismatchError, InvalidArgumentError, UnavailableError, errorFromAnswer } from './errors.js';
import { digestPattern, parseRef } from './ref.js';
import { digestWith } from './digest.js';

/** @import { Ref, ResumableUploadOptions } from './types.js' */
/** @import { Runtime } from './runtime.js' */

/** The chunk size when none is given: 16 MiB per PATCH request. */
export const DEFAULT_CHUNK_SIZE = 16 << 20;

/**
 * Waits between attempts in a row that made no progress (tus-js-client
 * starts over at the first after a retry that moved the offset): five
 * retries, as the Go client makes.
 */
export const DEFAULT_RETRY_DELAYS = [500, 1000, 2000, 4000, 8000];

/**
 * Wraps an HTTP stack so that each PATCH carries the sha256 of its chunk:
 * tus-js-client builds the request before it has the body, so the header
 * is set when the body is handed to send.
 * @param {any} stack a tus-js-client HttpStack
 * @param {Runtime} runtime
 */
function checksummed(stack, runtime) {
  return {
    getName: () => 'claimcheck+' + stack.getName(),
    /**
     * @param {string} method
     * @param {string} url
     */
    createRequest(method, url) {
      const req = stack.createRequest(method, url);
      if (method !== 'PATCH') return req;
      const send = req.send.bind(req);
      /** @param {any} body */
      req.send = async (body) => {
        if (body != null) req.setHeader('Upload-Checksum', 'sha256 ' + (await runtime.sha256Base64(body)));
        return send(body);
      };
      return req;
    },
  };
}

/**
 * The answers that may pass by themselves, as the Go client's: no answer
 * at all (0), the server failing (5xx), an offset that is not ours (409:
 * the HEAD before the retry tells), an upload still locked by a request
 * the server has not seen end (423), a rate limit (429). tus-js-client's
 * own rule leaves out 429.
 * @param {number} status
 */
function retryable(status) {
  return status === 0 || status >= 500 || status === 409 || status === 423 || status === 429;
}

/**
 * The client's error for tus-js-client's: the server's JSON answer when
 * there is one, else UnavailableError (the server was not reached, or the
 * connection kept failing).
 * @param {any} err
 * @param {string} op
 */
function tusError(err, op) {
  const res = err?.originalResponse;
  if (res) {
    const retry = Number(res.getHeader('Retry-After'));
    return errorFromAnswer(res.getStatus(), res.getBody() ?? '', op, Number.isFinite(retry) ? retry : undefined);
  }
  const cause = err?.causingError ?? err;
  return new UnavailableError(`${op}: ${cause?.message ?? err}`, { cause: err });
}

/**
 * The body of Client.uploadResumable. endpoint is the namespace's tus
 * creation URL, headers the client's (Authorization).
 * @param {{ endpoint: string, headers: Record<string, string>, ns: string, runtime: Runtime }} target
 * @param {Blob} blob
 * @param {ResumableUploadOptions} [opts]
 * @returns {Promise<Ref>}
 */
export async function uploadResumable({ endpoint, headers, ns, runtime }, blob, opts = {}) {
  if (typeof Blob === 'undefined' || !(blob instanceof Blob)) throw new InvalidArgumentError('uploadResumable: want a Blob or File (in Node: fs.openAsBlob(path))');
  const { onProgress, signal } = opts;
  const op = `resumable upload to ${ns}`;
  /** @type {any} */
  const tus = opts.tus ?? (await import('tus-js-client'));
  const digest = opts.digest ?? (await digestWith(await runtime.newHash(), blob, { onProgress, signal }));
  if (!digestPattern.test(digest)) throw new InvalidArgumentError(`${op}: digest ${JSON.stringify(digest)} is not sha256:<64 lowercase hex digits>`);
  signal?.throwIfAborted();
  /** @type {Record<string, string>} */
  const metadata = { sha256: digest.slice('sha256:'.length) };
  const contentType = opts.contentType ?? blob.type;
  if (contentType) metadata.content_type = contentType;
  const name = /** @type {Blob & { name?: unknown }} */ (blob).name;
  if (typeof name === 'string' && name) metadata.filename = name;

  return new Promise((resolveOuter, rejectOuter) => {
    const onAbort = () => {
      // Stop without terminating: the upload stays on the server until
      // it expires, to be resumed (uploadUrl, or the stored fingerprint).
      upload.abort(false);
      rejectOuter(signal?.reason);
    };
    /**
     * @template T
     * @param {(v: T) => void} fn
     * @returns {(v: T) => void}
     */
    const settled = (fn) => (v) => {
      signal?.removeEventListener('abort', onAbort);
      fn(v);
    };
    const resolve = settled(resolveOuter);
    const reject = settled(rejectOuter);
    const upload = new tus.Upload(blob, {
      endpoint,
      uploadUrl: opts.uploadUrl,
      headers,
      metadata,
      uploadSize: blob.size,
      chunkSize: opts.chunkSize ?? DEFAULT_CHUNK_SIZE,
      retryDelays: opts.retryDelays ?? DEFAULT_RETRY_DELAYS,
      /** @param {any} err */
      onShouldRetry: (err) => retryable(err?.originalResponse?.getStatus() ?? 0),
      httpStack: checksummed(opts.httpStack ?? new tus.DefaultHttpStack({}), runtime),
      ...(runtime.tusFileReader ? { fileReader: runtime.tusFileReader } : {}),
      // The same payload to the same namespace of the same server: a
      // changed file has another digest and never continues an old
      // upload. Stored in localStorage in browsers; in Node only with a
      // urlStorage passed in.
      fingerprint: async () => `claimcheck-tus:${endpoint}:${blob.size}:${digest}`,
      storeFingerprintForResuming: opts.urlStorage !== null,
      removeFingerprintOnSuccess: true,
      ...(opts.urlStorage ? { urlStorage: opts.urlStorage } : {}),
      onUploadUrlAvailable: () => opts.onUploadUrl?.(upload.url),
      /**
       * @param {number} loaded
       * @param {number} total
       */
      onProgress: (loaded, total) => onProgress?.({ phase: 'uploading', loaded, total }),
      /** @param {any} err */
      onError: (err) => reject(signal?.aborted ? signal.reason : tusError(err, op)),
      /** @param {{ lastResponse: any }} answer */
      onSuccess: ({ lastResponse }) => {
        const header = lastResponse?.getHeader('Claimcheck-Ref');
        if (!header) {
          reject(new ClaimcheckError('no_ref', `${op}: the last answer has no Claimcheck-Ref header (is the server's CORS exposing it?)`));
          return;
        }
        try {
          const ref = parseRef(header);
          if (ref.size !== blob.size || ref.digest !== digest) {
            reject(new ChecksumMismatchError(`${op}: the server stored ${ref.size} bytes with ${ref.digest}, not the ${blob.size} bytes with ${digest} sent`));
            return;
          }
          resolve(ref);
        } catch (e) {
          reject(e);
        }
      },
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    const start = () => upload.start();
    if (opts.uploadUrl || !upload.options.storeFingerprintForResuming) {
      start();
      return;
    }
    // Continue the newest stored upload of this payload, if any.
    upload.findPreviousUploads().then(
      /** @param {any[]} prev */
      (prev) => {
        if (prev.length > 0) upload.resumeFromPreviousUpload(prev.sort((a, b) => String(b.creationTime).localeCompare(String(a.creationTime)))[0]);
        start();
      },
      start,
    );
  });
}
