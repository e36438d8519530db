// The claimcheck client for Node 20+: the package's "node" export
// condition. The same API as index.js, with Node's own sha256 and
// payloads sent through node:http as the socket drains.

import { BaseClient } from './client.js';
import { digestWith } from './digest.js';
import { node } from './runtime-node.js';

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
    super(url, options, node);
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
  return digestWith(await node.newHash(), data, options);
}
