/**
 * Wraps body in a stream that passes bytes on as they come and checks the
 * count at every chunk and the sha256 at the end.
 * @param {ReadableStream<Uint8Array>} body
 * @param {Ref} ref
 * @param {Hash} hash
 * @param {string} op
 * @returns {ReadableStream<Uint8Array>}
 */
export function verifying(body: ReadableStream<Uint8Array>, ref: Ref, hash: Hash, op: string): ReadableStream<Uint8Array>;
/** @import { Ref } from './types.js' */
/** @import { Hash } from './runtime.js' */
/**
 * A redeemed payload. Its bytes are verified against the ref's size and
 * sha256 as they arrive; read them once, through body, bytes(), text(),
 * json() or blob().
 */
export class Payload {
    /**
     * @param {Ref} ref
     * @param {string} contentType
     * @param {ReadableStream<Uint8Array>} body
     */
    constructor(ref: Ref, contentType: string, body: ReadableStream<Uint8Array>);
    /** @readonly */
    readonly ref: Ref;
    /** @readonly */
    readonly size: number;
    /** @readonly */
    readonly contentType: string;
    /**
     * The verified stream. Bytes arrive as the server sends them; the
     * stream errors (ChecksumMismatchError) instead of closing when the
     * whole is not the ref's bytes, so a consumer that waits for the end
     * never takes a broken payload for a whole one.
     * @returns {ReadableStream<Uint8Array>}
     */
    get body(): ReadableStream<Uint8Array>;
    /**
     * The whole payload, once verified; rejects on any mismatch.
     * @returns {Promise<Uint8Array>}
     */
    bytes(): Promise<Uint8Array>;
    /** @returns {Promise<string>} */
    text(): Promise<string>;
    /**
     * @template [T=unknown]
     * @returns {Promise<T>}
     */
    json<T = unknown>(): Promise<T>;
    /** @returns {Promise<Blob>} */
    blob(): Promise<Blob>;
    #private;
}
import type { Ref } from './types.js';
import type { Hash } from './runtime.js';
