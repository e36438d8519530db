// The claimcheck client for browsers and other Web-standard places
// (workers, Deno, Bun): the package's "browser" and "default" export
// conditions. It speaks the HTTP API of docs/HTTP.md; node.js is the same
// API for Node.

import { BaseClient } from './client.js';
import { digestWith } from './digest.js';
import { web } from './runtime-web.js';

/** @import { OnProgress, ClientOptions } from './types.js' */

export * from './exports.js';

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
  constructor(url, options) {
    super(url, options, web);
  }
}

/**
 * sha256 of bytes or a Blob, as "sha256:<hex>", read in pieces: a large
 * File is never held in memory whole.
 * @param {string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob} data
 * @param {{ onProgress?: OnProgress, signal?: AbortSignal }} [options]
 * @returns {Promise<string>}
 */
export async function digestOf(data, options) {
  return digestWith(await web.newHash(), data, options);
}
