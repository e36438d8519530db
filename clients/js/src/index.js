// The claimcheck client for browsers and other Web-standard places
// (workers, Deno, Bun): the package's "browser" and "default" export
// conditions. It speaks the HTTP API of docs/HTTP.md; node.js is the same
// API for Node.

import { BaseClient } from './client.js';
import { digestWith } from './digest.js';
import { web } from './runtime-web.js';

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
