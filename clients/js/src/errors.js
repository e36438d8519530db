// The client's errors (docs/HTTP.md "Errors"): one class per code of the
// server, and the error of an answer that is not a success.

/** @import { GoneReason } from './types.js' */

/**
 * The server's error codes.
 * @typedef {'not_found' | 'gone' | 'expired' | 'checksum_mismatch' | 'too_large' | 'quota_exceeded' | 'invalid_argument' | 'unauthenticated' | 'permission_denied' | 'rate_limited' | 'held' | 'unavailable' | 'internal' | 'no_route' | 'method_not_allowed'} ErrorCode
 */

/**
 * @typedef {object} ErrorOptions
 * @property {number} [status]
 * @property {GoneReason} [reason]
 * @property {string} [at]
 * @property {number} [retryAfter]
 * @property {unknown} [cause]
 */

/** Every error of the client: a server's answer (code, status) or a local failure. */
export class ClaimcheckError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(code, message, { status = 0, reason, at, retryAfter, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'ClaimcheckError';
    /** The server's error code; http_<status> for an answer that is not the API's JSON. @type {ErrorCode | string} */
    this.code = code;
    /** The HTTP status, 0 when no answer was received. */
    this.status = status;
    /** gone/expired: why the claim was finished. @type {GoneReason | undefined} */
    this.reason;
    /** @type {string | undefined} */
    this.at;
    /** rate_limited: seconds to wait (Retry-After). @type {number | undefined} */
    this.retryAfter;
    if (reason !== undefined) this.reason = reason;
    if (at !== undefined) this.at = at;
    if (retryAfter !== undefined) this.retryAfter = retryAfter;
  }
}

/** @typedef {new (message: string, options?: ErrorOptions) => ClaimcheckError} ErrorClass */

/**
 * @param {string} name
 * @param {string} code
 * @returns {ErrorClass}
 */
const define = (name, code) => {
  const C = class extends ClaimcheckError {
    /**
     * @param {string} message
     * @param {ErrorOptions} [options]
     */
    constructor(message, options) {
      super(code, message, options);
      this.name = name;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
};

export const NotFoundError = define('NotFoundError', 'not_found');
export const GoneError = define('GoneError', 'gone');
/** A claim past its max_age: a GoneError with reason "expired". */
export class ExpiredError extends GoneError {
  /**
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(message, options) {
    super(message, options);
    this.code = 'expired';
    this.name = 'ExpiredError';
  }
}
export const ChecksumMismatchError = define('ChecksumMismatchError', 'checksum_mismatch');
export const TooLargeError = define('TooLargeError', 'too_large');
export const QuotaExceededError = define('QuotaExceededError', 'quota_exceeded');
export const InvalidArgumentError = define('InvalidArgumentError', 'invalid_argument');
export const UnauthenticatedError = define('UnauthenticatedError', 'unauthenticated');
export const PermissionDeniedError = define('PermissionDeniedError', 'permission_denied');
export const RateLimitedError = define('RateLimitedError', 'rate_limited');
export const HeldError = define('HeldError', 'held');
export const UnavailableError = define('UnavailableError', 'unavailable');
export const InternalError = define('InternalError', 'internal');
export const NoRouteError = define('NoRouteError', 'no_route');
export const MethodNotAllowedError = define('MethodNotAllowedError', 'method_not_allowed');

/** @type {Record<ErrorCode, ErrorClass>} */
const byCode = {
  not_found: NotFoundError,
  gone: GoneError,
  expired: ExpiredError,
  checksum_mismatch: ChecksumMismatchError,
  too_large: TooLargeError,
  quota_exceeded: QuotaExceededError,
  invalid_argument: InvalidArgumentError,
  unauthenticated: UnauthenticatedError,
  permission_denied: PermissionDeniedError,
  rate_limited: RateLimitedError,
  held: HeldError,
  unavailable: UnavailableError,
  internal: InternalError,
  no_route: NoRouteError,
  method_not_allowed: MethodNotAllowedError,
};

/** The server's error codes, each with its class. */
export const ERROR_CLASSES = Object.freeze({ ...byCode });

/**
 * @param {Response} resp
 * @returns {number | undefined}
 */
function retryAfterOf(resp) {
  const v = resp.headers.get('Retry-After');
  if (v === null) return undefined;
  const s = Number(v);
  return Number.isFinite(s) ? s : undefined;
}

/**
 * The error of a non-2xx answer. An answer that is not the API's JSON (a
 * proxy's page, S3's XML) keeps its status: gateway failures (502, 503,
 * 504) are UnavailableError, anything else a ClaimcheckError with code
 * "http_<status>".
 * @param {Response} resp
 * @param {string} op
 * @returns {Promise<ClaimcheckError>}
 */
export async function errorOfResponse(resp, op) {
  const text = await resp.text().catch(() => '');
  return errorFromAnswer(resp.status, text, op, retryAfterOf(resp));
}

/**
 * The error of an answer given by its status, body text and Retry-After
 * seconds (the error classes of the server's codes; 460 is
 * ChecksumMismatchError), for answers that did not come through fetch:
 * tus-js-client's.
 * @param {number} status
 * @param {string} text
 * @param {string} op
 * @param {number} [retryAfter]
 * @returns {ClaimcheckError}
 */
export function errorFromAnswer(status, text, op, retryAfter) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const opts = { status, retryAfter };
  if (body && typeof body.code === 'string' && typeof body.message === 'string') {
    const C = /** @type {Record<string, ErrorClass | undefined>} */ (byCode)[body.code];
    // The server's message may already name the operation and the claim
    // (`extend cc_…: …`): it is not said twice.
    const msg = body.message.startsWith(`${op}:`) ? body.message : `${op}: ${body.message}`;
    if (C) return new C(msg, { ...opts, reason: body.reason, at: body.at });
    return new ClaimcheckError(body.code, msg, opts);
  }
  const snippet = text.length > 200 ? text.slice(0, 200) + '…' : text;
  const msg = `${op}: HTTP ${status}${snippet ? ': ' + snippet : ''}`;
  if (status === 502 || status === 503 || status === 504) return new UnavailableError(msg, opts);
  if (status === 460) return new ChecksumMismatchError(msg, opts); // tus: a chunk or payload whose checksum did not match
  return new ClaimcheckError(`http_${status}`, msg, opts);
}
