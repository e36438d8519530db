// What both entry points export besides Client and digestOf: the error
// classes, the reference helpers, Payload and the public types. index.js
// (Web) and node.js (Node) differ only in the runtime they give Client.

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

