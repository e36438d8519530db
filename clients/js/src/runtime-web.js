// The Runtime of browsers and other Web-standard places (workers, Deno,
// Bun): a small pure-JS sha256 for streaming, whose WebCrypto can only
// hash whole buffers, and XMLHttpRequest for upload progress.

import { toHex } from './bytes.js';
import { sendBlobXHR } from './upload.js';

/** @import { Runtime } from './runtime.js' */

/** @type {Runtime} */
export const web = {
  async newHash() {
    const { sha256 } = await import('@noble/hashes/sha2');
    const h = sha256.create();
    return { update: (b) => h.update(b), hex: () => toHex(h.digest()) };
  },
  async sha256Base64(body) {
    const bytes = body instanceof Blob ? await body.arrayBuffer() : body;
    const d = new Uint8Array(await crypto.subtle.digest('SHA-256', /** @type {BufferSource} */ (bytes)));
    let s = '';
    for (const b of d) s += String.fromCharCode(b);
    return btoa(s);
  },
  sendBlob: sendBlobXHR,
};
