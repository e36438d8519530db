/**
 * The body of Client.uploadResumable. endpoint is the namespace's tus
 * creation URL, headers the client's (Authorization).
 * @param {{ endpoint: string, headers: Record<string, string>, ns: string, runtime: Runtime }} target
 * @param {Blob} blob
 * @param {ResumableUploadOptions} [opts]
 * @returns {Promise<Ref>}
 */
export function uploadResumable({ endpoint, headers, ns, runtime }: {
    endpoint: string;
    headers: Record<string, string>;
    ns: string;
    runtime: Runtime;
}, blob: Blob, opts?: ResumableUploadOptions): Promise<Ref>;
/** @import { Ref, ResumableUploadOptions } from './types.js' */
/** @import { Runtime } from './runtime.js' */
/** The chunk size when none is given: 16 MiB per PATCH request. */
export const DEFAULT_CHUNK_SIZE: number;
/**
 * Waits between attempts in a row that made no progress (tus-js-client
 * starts over at the first after a retry that moved the offset): five
 * retries, as the Go client makes.
 */
export const DEFAULT_RETRY_DELAYS: number[];
import type { Runtime } from './runtime.js';
import type { ResumableUploadOptions } from './types.js';
import type { Ref } from './types.js';
