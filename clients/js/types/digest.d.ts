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
export function digestWith(h: Hash, data: string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob, { onProgress, signal }?: {
    onProgress?: OnProgress;
    signal?: AbortSignal;
}): Promise<string>;
import type { Hash } from './runtime.js';
import type { OnProgress } from './types.js';
