// The claimcheck client for Node 20+: the package's "node" export
// condition. The same API as index.js, with Node's own sha256 and
// payloads sent through node:http as the socket drains.

import { BaseClient } from './client.js';
import { digestWith } from './digest.js';
import { node } from './runtime-node.js';

/** @import { OnProgress } from './types.js' */

export {
  ClaimcheckError,
  NotFoundError,
  GoneError,
  ExpiredError,
  ChecksumMismatchError,
  TooLargeError,
  QuotaExceededError,
  InvalidArgumentError,
  UnauthenticatedError,
  PermissionDeniedError,
  RateLimitedError,
  HeldError,
  UnavailableError,
  InternalError,
  NoRouteError,
  MethodNotAllowedError,
  ERROR_CLASSES,
  errorFromAnswer,
} from './errors.js';
export { isRef, parseRef } from './ref.js';
export { Payload } from './payload.js';

/**
 * @typedef {import('./types.js').Ref} Ref
 * @typedef {import('./types.js').RefLike} RefLike
 * @typedef {import('./types.js').ClaimState} ClaimState
 * @typedef {import('./types.js').GoneReason} GoneReason
 * @typedef {import('./types.js').Hold} Hold
 * @typedef {import('./types.js').ClaimInfo} ClaimInfo
 * @typedef {import('./types.js').NamespaceUsage} NamespaceUsage
 * @typedef {import('./types.js').NamespaceInfo} NamespaceInfo
 * @typedef {import('./types.js').ClientOptions} ClientOptions
 * @typedef {import('./types.js').PutOptions} PutOptions
 * @typedef {import('./types.js').PutBody} PutBody
 * @typedef {import('./types.js').ProgressEvent} ProgressEvent
 * @typedef {import('./types.js').ResumableUrlStorage} ResumableUrlStorage
 * @typedef {import('./types.js').ResumableUploadOptions} ResumableUploadOptions
 * @typedef {import('./types.js').UploadOptions} UploadOptions
 * @typedef {import('./types.js').OffloadOptions} OffloadOptions
 * @typedef {import('./types.js').ListOptions} ListOptions
 * @typedef {import('./types.js').ClaimPage} ClaimPage
 * @typedef {import('./errors.js').ErrorCode} ErrorCode
 */

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
