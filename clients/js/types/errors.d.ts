/**
 * The error of a non-2xx answer. An answer that is not the API's JSON (a
 * proxy's page, S3's XML) keeps its status: gateway failures (502, 503,
 * 504) are UnavailableError, anything else a ClaimcheckError with code
 * "http_<status>".
 * @param {Response} resp
 * @param {string} op
 * @returns {Promise<ClaimcheckError>}
 */
export function errorOfResponse(resp: Response, op: string): Promise<ClaimcheckError>;
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
export function errorFromAnswer(status: number, text: string, op: string, retryAfter?: number): ClaimcheckError;
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
    constructor(code: string, message: string, { status, reason, at, retryAfter, cause }?: ErrorOptions);
    /** The server's error code; http_<status> for an answer that is not the API's JSON. @type {ErrorCode | string} */
    code: ErrorCode | string;
    /** The HTTP status, 0 when no answer was received. */
    status: number;
    /** gone/expired: why the claim was finished. @type {GoneReason | undefined} */
    reason: GoneReason | undefined;
    /** @type {string | undefined} */
    at: string | undefined;
    /** rate_limited: seconds to wait (Retry-After). @type {number | undefined} */
    retryAfter: number | undefined;
}
export const NotFoundError: ErrorClass;
export const GoneError: ErrorClass;
/** A claim past its max_age: a GoneError with reason "expired". */
export class ExpiredError extends ClaimcheckError {
}
export const ChecksumMismatchError: ErrorClass;
export const TooLargeError: ErrorClass;
export const QuotaExceededError: ErrorClass;
export const InvalidArgumentError: ErrorClass;
export const UnauthenticatedError: ErrorClass;
export const PermissionDeniedError: ErrorClass;
export const RateLimitedError: ErrorClass;
export const HeldError: ErrorClass;
export const UnavailableError: ErrorClass;
export const InternalError: ErrorClass;
export const NoRouteError: ErrorClass;
export const MethodNotAllowedError: ErrorClass;
/** The server's error codes, each with its class. */
export const ERROR_CLASSES: Readonly<{
    expired: ErrorClass;
    not_found: ErrorClass;
    gone: ErrorClass;
    checksum_mismatch: ErrorClass;
    too_large: ErrorClass;
    quota_exceeded: ErrorClass;
    invalid_argument: ErrorClass;
    unauthenticated: ErrorClass;
    permission_denied: ErrorClass;
    rate_limited: ErrorClass;
    held: ErrorClass;
    unavailable: ErrorClass;
    internal: ErrorClass;
    no_route: ErrorClass;
    method_not_allowed: ErrorClass;
}>;
/**
 * The server's error codes.
 */
export type ErrorCode = "not_found" | "gone" | "expired" | "checksum_mismatch" | "too_large" | "quota_exceeded" | "invalid_argument" | "unauthenticated" | "permission_denied" | "rate_limited" | "held" | "unavailable" | "internal" | "no_route" | "method_not_allowed";
export type ErrorOptions = {
    status?: number | undefined;
    reason?: GoneReason | undefined;
    at?: string | undefined;
    retryAfter?: number | undefined;
    cause?: unknown;
};
export type ErrorClass = new (message: string, options?: ErrorOptions) => ClaimcheckError;
import type { GoneReason } from './types.js';
