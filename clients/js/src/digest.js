// sha256 digests, as "sha256:<hex>".

import { toBytes } from './bytes.js';

/** @import { Hash } from './runtime.js' */
/** @import { OnProgress } from './types.js' */

/**
 * The digest of bytes or a Blob, read in pieces: a large File is never
 * held in memory whole.
 * @param {Hash} h a fresh hash
 * @param {string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob} data
 * @param {{ onProgress?: OnProgress, signal?: AbortSignal }} [options]
 * @returns {Promise<string>}
 */
export async function digestWith(h, data, { onProgress, signal } = {}) {
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
    h.update(toBytes(/** @type {Exclude<typeof data, Blob>} */ (data)));
  }
  return 'sha256:' + h.hex();
}
