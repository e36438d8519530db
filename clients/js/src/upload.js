// Direct uploads: sending a Blob's bytes to the URL the server answered
// (the server itself, or an S3 bucket), with no API key (the URL is the
// credential), reporting progress.

import { ClaimcheckError, UnavailableError, errorOfResponse } from './errors.js';

/** @import { SendBlob } from './runtime.js' */

const progressStep = 256 << 10;

/**
 * Sends with fetch: a counting stream and the length set, as S3 wants.
 * @type {SendBlob}
 */
export async function sendBlobFetch(fetchFn, up, blob, { onProgress, signal }) {
  const op = `upload ${up.id}`;
  const total = blob.size;
  const method = up.method || 'PUT';
  const headers = up.headers ?? {};
  let loaded = 0;
  let pending = new Uint8Array(0);
  const reader = blob.stream().getReader();
  /** @type {ReadableStream<Uint8Array>} */
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
    resp = await fetchFn(/** @type {string} */ (up.url), {
      method,
      headers: { ...headers, 'Content-Length': String(total) },
      body: total === 0 ? new Uint8Array(0) : body,
      duplex: 'half',
      signal,
    });
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new UnavailableError(`${op}: ${/** @type {Error} */ (e).message}`, { cause: e });
  }
  if (resp.status < 200 || resp.status >= 300) throw await errorOfResponse(resp, op);
  await resp.body?.cancel();
}

/**
 * Sends with XMLHttpRequest, the one browser API with upload progress
 * (fetch streams request bodies only over HTTP/2); where there is none (a
 * service worker), with fetch.
 * @type {SendBlob}
 */
export async function sendBlobXHR(fetchFn, up, blob, { onProgress, signal }) {
  if (typeof XMLHttpRequest === 'undefined') return sendBlobFetch(fetchFn, up, blob, { onProgress, signal });
  const op = `upload ${up.id}`;
  const total = blob.size;
  const method = up.method || 'PUT';
  const headers = up.headers ?? {};
  await new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, /** @type {string} */ (up.url));
    // Content-Length is the browser's to set (from the Blob).
    for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'content-length') xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress?.({ phase: 'uploading', loaded: e.loaded, total });
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress?.({ phase: 'uploading', loaded: total, total });
        resolve(undefined);
        return;
      }
      const resp = new Response(xhr.responseText, { status: xhr.status, headers: { 'Retry-After': xhr.getResponseHeader('Retry-After') ?? '' } });
      errorOfResponse(resp, op).then(reject, reject);
    };
    xhr.onerror = () => reject(new UnavailableError(`${op}: the request failed (network, or the storage's CORS rules refuse this page's origin)`));
    xhr.onabort = () => reject(signal?.reason ?? new ClaimcheckError('aborted', `${op}: aborted`));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(blob);
  });
}
