// The Runtime of Node: its own sha256, and payloads sent through
// node:http. Node's fetch writes a streamed request body without waiting
// for the socket (Node 20), so a large upload would sit in memory; with
// the default fetch, the client sends payloads through nodeFetch instead.

import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

import { toBytes } from './bytes.js';
import { sendBlobFetch } from './upload.js';

/** @import { Runtime, FetchLike } from './runtime.js' */

/**
 * The part of fetch the payload uploads use, on node:http: it writes the
 * body as the socket drains, so memory stays bounded whatever the size.
 * body: a Blob, a ReadableStream or bytes.
 * @type {FetchLike}
 */
export async function nodeFetch(url, { method, headers, body, signal }) {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  const h = Object.fromEntries(new Headers(headers));
  return new Promise((resolve, reject) => {
    const req = request(u, { method, headers: h, signal: signal ?? undefined });
    req.on('error', reject);
    req.on('response', (res) => {
      /** @type {Buffer[]} */
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const rh = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) rh.set(k, Array.isArray(v) ? v.join(', ') : v);
        const status = /** @type {number} */ (res.statusCode);
        const b = status === 204 || status === 304 ? null : Buffer.concat(chunks);
        resolve(new Response(b, { status, headers: rh }));
      });
    });
    (async () => {
      const stream = body instanceof Blob ? body.stream() : body instanceof ReadableStream ? body : null;
      if (stream === null) {
        req.end(body === undefined ? undefined : toBytes(/** @type {string | ArrayBuffer | ArrayBufferView} */ (body)));
        return;
      }
      for await (const chunk of /** @type {AsyncIterable<Uint8Array>} */ (/** @type {unknown} */ (stream))) {
        if (!req.write(chunk)) await once(req, 'drain');
      }
      req.end();
    })().catch((e) => req.destroy(e));
  });
}

/**
 * A tus-js-client file reader for Blobs (its own for Node reads Buffers
 * and streams only): fs.openAsBlob gives a file-backed Blob that is read
 * one chunk at a time.
 */
const blobReader = {
  /** @param {unknown} input */
  async openFile(input) {
    if (!(input instanceof Blob)) throw new Error('want a Blob');
    return {
      size: input.size,
      /**
       * @param {number} start
       * @param {number} end
       */
      async slice(start, end) {
        const value = Object.assign(Buffer.from(await input.slice(start, end).arrayBuffer()), { size: 0 });
        value.size = value.length;
        return { value, done: end >= input.size };
      },
      close() {},
    };
  },
};

/** @type {Runtime} */
export const node = {
  async newHash() {
    const h = createHash('sha256');
    return { update: (b) => h.update(b), hex: () => h.digest('hex') };
  },
  async sha256Base64(body) {
    const bytes = body instanceof Blob ? new Uint8Array(await body.arrayBuffer()) : body;
    return createHash('sha256').update(bytes).digest('base64');
  },
  sendBlob: sendBlobFetch,
  streamFetch: nodeFetch,
  tusFileReader: blobReader,
};
