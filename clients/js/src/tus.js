// Resumable uploads over tus 1.0.0, through tus-js-client: the protocol
// (create, HEAD for the offset after a failure, PATCH from there, retries
// with backoff, URL storage for resuming after a reload) is its; this
// module adds what claimcheck needs around it: the payload's sha256 in
// the metadata (the server checks the whole payload against it before it
// commits the claim), an Upload-Checksum on every chunk, a Blob source in
// Node, the reference read from the Claimcheck-Ref header of the last
// answer, and the client's error classes.
//
// Loaded by Client.uploadResumable on first use, so the rest of the
// client neither loads nor needs tus-js-client.

import { digestOf, errorFromAnswer, UnavailableError, InvalidArgumentError, ChecksumMismatchError, ClaimcheckError, parseRef } from './index.js';

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

/** The chunk size when none is given: 16 MiB per PATCH request. */
export const DEFAULT_CHUNK_SIZE = 16 << 20;

/**
 * Waits between attempts in a row that made no progress (tus-js-client
 * starts over at the first after a retry that moved the offset): five
 * retries, as the Go client makes.
 */
export const DEFAULT_RETRY_DELAYS = [500, 1000, 2000, 4000, 8000];

async function sha256Base64(body) {
  if (isNode) {
    const { createHash } = await import('node:crypto');
    return createHash('sha256').update(body).digest('base64');
  }
  const bytes = body instanceof Blob ? await body.arrayBuffer() : body;
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  let s = '';
  for (const b of d) s += String.fromCharCode(b);
  return btoa(s);
}

// checksummed wraps an HTTP stack so that each PATCH carries the sha256
// of its chunk: tus-js-client builds the request before it has the body,
// so the header is set when the body is handed to send.
function checksummed(stack) {
  return {
    getName: () => 'claimcheck+' + stack.getName(),
    createRequest(method, url) {
      const req = stack.createRequest(method, url);
      if (method !== 'PATCH') return req;
      const send = req.send.bind(req);
      req.send = async (body) => {
        if (body != null) req.setHeader('Upload-Checksum', 'sha256 ' + (await sha256Base64(body)));
        return send(body);
      };
      return req;
    },
  };
}

// retryable tells the answers that may pass by themselves, as the Go
// client does: no answer at all (0), the server failing (5xx), an offset
// that is not ours (409: the HEAD before the retry tells), an upload
// still locked by a request the server has not seen end (423), a rate
// limit (429). tus-js-client's own rule leaves out 429.
function retryable(status) {
  return status === 0 || status >= 500 || status === 409 || status === 423 || status === 429;
}

// blobReader is a tus-js-client file reader for Blobs in Node (whose own
// reads Buffers and streams only): fs.openAsBlob gives a file-backed
// Blob that is read one chunk at a time.
const blobReader = {
  async openFile(input) {
    if (!(input instanceof Blob)) throw new Error('want a Blob');
    return {
      size: input.size,
      async slice(start, end) {
        const value = Buffer.from(await input.slice(start, end).arrayBuffer());
        value.size = value.length;
        return { value, done: end >= input.size };
      },
      close() {},
    };
  },
};

// errorOf turns tus-js-client's error into the client's: the server's
// JSON answer when there is one, else UnavailableError (the server was
// not reached, or the connection kept failing).
function errorOf(err, op) {
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
 */
export async function uploadResumable({ endpoint, headers, ns }, blob, opts = {}) {
  if (typeof Blob === 'undefined' || !(blob instanceof Blob)) throw new InvalidArgumentError('uploadResumable: want a Blob or File (in Node: fs.openAsBlob(path))');
  const { onProgress, signal } = opts;
  const op = `resumable upload to ${ns}`;
  const tus = opts.tus ?? (await import('tus-js-client'));
  const digest = opts.digest ?? (await digestOf(blob, { onProgress, signal }));
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new InvalidArgumentError(`${op}: digest ${JSON.stringify(digest)} is not sha256:<64 lowercase hex digits>`);
  signal?.throwIfAborted();
  const metadata = { sha256: digest.slice('sha256:'.length) };
  const contentType = opts.contentType ?? blob.type;
  if (contentType) metadata.content_type = contentType;
  if (typeof blob.name === 'string' && blob.name) metadata.filename = blob.name;

  return new Promise((resolveOuter, rejectOuter) => {
    const onAbort = () => {
      // Stop without terminating: the upload stays on the server until
      // it expires, to be resumed (uploadUrl, or the stored fingerprint).
      upload.abort(false);
      rejectOuter(signal.reason);
    };
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
      onShouldRetry: (err) => retryable(err?.originalResponse?.getStatus() ?? 0),
      httpStack: checksummed(opts.httpStack ?? new tus.DefaultHttpStack({})),
      ...(isNode ? { fileReader: blobReader } : {}),
      // The same payload to the same namespace of the same server: a
      // changed file has another digest and never continues an old
      // upload. Stored in localStorage in browsers; in Node only with a
      // urlStorage passed in.
      fingerprint: async () => `claimcheck-tus:${endpoint}:${blob.size}:${digest}`,
      storeFingerprintForResuming: opts.urlStorage !== null,
      removeFingerprintOnSuccess: true,
      ...(opts.urlStorage ? { urlStorage: opts.urlStorage } : {}),
      onUploadUrlAvailable: () => opts.onUploadUrl?.(upload.url),
      onProgress: (loaded, total) => onProgress?.({ phase: 'uploading', loaded, total }),
      onError: (err) => reject(signal?.aborted ? signal.reason : errorOf(err, op)),
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
    upload.findPreviousUploads().then((prev) => {
      if (prev.length > 0) upload.resumeFromPreviousUpload(prev.sort((a, b) => String(b.creationTime).localeCompare(String(a.creationTime)))[0]);
      start();
    }, start);
  });
}
