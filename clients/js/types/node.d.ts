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
export { Payload } from "./payload.js";
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
    constructor(url: string | URL, options?: ClientOptions);
}
export type Ref = import("./types.js").Ref;
export type RefLike = import("./types.js").RefLike;
export type ClaimState = import("./types.js").ClaimState;
export type GoneReason = import("./types.js").GoneReason;
export type Hold = import("./types.js").Hold;
export type ClaimInfo = import("./types.js").ClaimInfo;
export type NamespaceUsage = import("./types.js").NamespaceUsage;
export type NamespaceInfo = import("./types.js").NamespaceInfo;
export type ClientOptions = import("./types.js").ClientOptions;
export type PutOptions = import("./types.js").PutOptions;
export type PutBody = import("./types.js").PutBody;
export type ProgressEvent = import("./types.js").ProgressEvent;
export type ResumableUrlStorage = import("./types.js").ResumableUrlStorage;
export type ResumableUploadOptions = import("./types.js").ResumableUploadOptions;
export type UploadOptions = import("./types.js").UploadOptions;
export type OffloadOptions = import("./types.js").OffloadOptions;
export type ListOptions = import("./types.js").ListOptions;
export type ClaimPage = import("./types.js").ClaimPage;
export type ErrorCode = import("./errors.js").ErrorCode;
import type { OnProgress } from './types.js';
import { BaseClient } from './client.js';
export { ClaimcheckError, NotFoundError, GoneError, ExpiredError, ChecksumMismatchError, TooLargeError, QuotaExceededError, InvalidArgumentError, UnauthenticatedError, PermissionDeniedError, RateLimitedError, HeldError, UnavailableError, InternalError, NoRouteError, MethodNotAllowedError, ERROR_CLASSES, errorFromAnswer } from "./errors.js";
export { isRef, parseRef } from "./ref.js";
