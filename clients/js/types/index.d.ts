/**
 * sha256 of bytes or a Blob, as "sha256:<hex>", read in pieces: a large
 * File is never held in memory whole.
 * @param {string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob} data
 * @param {{ onProgress?: OnProgress, signal?: AbortSignal }} [options]
 * @returns {Promise<string>}
 */
export function digestOf(data: string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob, options?: {
    onProgress?: OnProgress;
    signal?: AbortSignal;
}): Promise<string>;
export * from "./exports.js";
/**
 * A client of one claimcheck server.
 *
 *   const cc = new Client('https://claims.example.com', { apiKey })
 */
export class Client extends BaseClient {
    /**
     * @param {string | URL} url
     * @param {ClientOptions} [options]
     */
    constructor(url: string | URL, options?: ClientOptions);
}
import type { OnProgress } from './types.js';
import { BaseClient } from './client.js';
import type { ClientOptions } from './types.js';
