// Types of the claimcheck client (index.js). Written by hand: the package
// ships plain ESM without a build step.

/** A claim's reference, as the server answers it (docs/HTTP.md). */
export interface Ref {
  type: 'claim_check_ref';
  v: 1;
  id: string;
  ns: string;
  size: number;
  stored_size: number;
  compression: 'zstd' | 'gzip' | 'none';
  /** "sha256:" + 64 lowercase hex digits of the original bytes. */
  digest: string;
  created_at: number;
  expires_at: number;
}

/** A reference, its JSON, or a bare claim id ("cc_…"). */
export type RefLike = Ref | string;

export type ClaimState = 'pending' | 'active' | 'deleted';

export type GoneReason =
  | 'expired'
  | 'released'
  | 'read_retention_over'
  | 'deleted'
  | 'never_confirmed'
  | 'aborted'
  | 'key_destroyed';

export interface Hold {
  scope: 'claim' | 'namespace';
  reason?: string;
  since: string;
}

export interface ClaimInfo {
  ref: Ref;
  state: ClaimState;
  content_type?: string;
  labels?: Record<string, string>;
  reads: number;
  first_read_at?: string;
  releases: number;
  consumers: number;
  released_by?: string[];
  delete_at?: string;
  deleted_at?: string;
  delete_reason?: GoneReason;
  holds?: Hold[];
}

export interface NamespaceUsage {
  used_bytes: number;
  reserved_bytes: number;
  active_claims: number;
  pending_claims: number;
}

export interface NamespaceInfo {
  name: string;
  /** The effective policy: sizes in bytes, durations in Go syntax. */
  policy: { threshold: number; max_size: number; [key: string]: unknown };
  limits: { bytes: number; claims: number };
  usage: NamespaceUsage;
  tenant?: { name: string; limits: { bytes: number; claims: number }; usage: NamespaceUsage; namespaces: number };
  retired?: boolean;
}

export interface ClientOptions {
  /** An API key (cck_…), sent as Authorization: Bearer on API calls, never to upload URLs. */
  apiKey?: string;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
}

export interface PutOptions {
  /** Stored with the claim and answered on redeem. */
  contentType?: string;
  /** "sha256:<hex>" of the payload, if known: the server refuses other bytes. */
  digest?: string;
  /** Releases that finish the claim (fan-out). */
  consumers?: number;
  /** The consumers whose releases count. */
  consumerNames?: string[];
  labels?: Record<string, string>;
  signal?: AbortSignal;
}

export type PutBody = string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array>;

export interface ProgressEvent {
  /** "hashing" while the sha256 of the file is computed, then "uploading". */
  phase: 'hashing' | 'uploading';
  loaded: number;
  total: number;
}

/** A place to keep upload URLs by fingerprint (tus-js-client's UrlStorage). */
export interface ResumableUrlStorage {
  findAllUploads(): Promise<object[]>;
  findUploadsByFingerprint(fingerprint: string): Promise<object[]>;
  removeUpload(urlStorageKey: string): Promise<void>;
  addUpload(fingerprint: string, upload: object): Promise<string>;
}

export interface ResumableUploadOptions {
  onProgress?: (e: ProgressEvent) => void;
  /** Stops the upload without dropping it: it can be resumed until it expires. */
  signal?: AbortSignal;
  /** Stored with the claim; default: the Blob's type. */
  contentType?: string;
  /** "sha256:<hex>" of the file, when known: skips the hashing. */
  digest?: string;
  /** Bytes per PATCH request; default 16 MiB. */
  chunkSize?: number;
  /** Waits (ms) between attempts in a row without progress; default [500, 1000, 2000, 4000, 8000]. */
  retryDelays?: number[];
  /** Resume this upload (an URL given to onUploadUrl earlier) instead of creating one. */
  uploadUrl?: string;
  /** Called with the upload's URL once the server created it. */
  onUploadUrl?: (url: string) => void;
  /**
   * Where upload URLs are kept by fingerprint (server, namespace, size,
   * sha256) so that the same file continues its upload after a reload:
   * default localStorage in browsers, nowhere in Node; null: never.
   */
  urlStorage?: ResumableUrlStorage | null;
  /** The tus-js-client module, when it is not importable as 'tus-js-client' (a UMD global, say). */
  tus?: unknown;
  /** A tus-js-client HTTP stack to send the requests with (default its DefaultHttpStack); each PATCH still gets its Upload-Checksum. */
  httpStack?: unknown;
}

export interface UploadOptions {
  onProgress?: (e: ProgressEvent) => void;
  /** Default: the Blob's type. */
  contentType?: string;
  labels?: Record<string, string>;
  consumers?: number;
  consumerNames?: string[];
  /** Repeating an upload with the same key, size and sha256 continues it. */
  idempotencyKey?: string;
  /** "sha256:<hex>" when known: the file is then not hashed first. */
  digest?: string;
  signal?: AbortSignal;
}

export interface OffloadOptions extends Omit<PutOptions, 'contentType' | 'digest'> {
  /** Bytes; default the namespace's policy threshold. */
  threshold?: number;
}

/** A redeemed payload: its bytes are verified (size and sha256) as they arrive. Read it once. */
export class Payload {
  readonly ref: Ref;
  readonly size: number;
  readonly contentType: string;
  /** The verified stream: it errors with ChecksumMismatchError at the end instead of closing when the bytes are not the claim's. */
  readonly body: ReadableStream<Uint8Array>;
  /** The whole payload once verified; rejects on any mismatch. */
  bytes(): Promise<Uint8Array>;
  text(): Promise<string>;
  json<T = unknown>(): Promise<T>;
  blob(): Promise<Blob>;
}

export class Client {
  constructor(url: string | URL, options?: ClientOptions);
  put(ns: string, body: PutBody, options?: PutOptions): Promise<Ref>;
  redeem(ref: RefLike, options?: { signal?: AbortSignal }): Promise<Payload>;
  stat(ref: RefLike, options?: { signal?: AbortSignal }): Promise<ClaimInfo>;
  release(ref: RefLike, options?: { consumer?: string; signal?: AbortSignal }): Promise<void>;
  delete(ref: RefLike, options?: { signal?: AbortSignal }): Promise<void>;
  /** Moves the expiry later (up to ttl.max_lifetime): one of expiresAt and by ("24h"). */
  extend(ref: RefLike, options: { expiresAt?: Date | string; by?: string; signal?: AbortSignal }): Promise<ClaimInfo>;
  /** One page of the namespace's claims; pass next as cursor for the following page. */
  list(ns: string, options?: ListOptions): Promise<ClaimPage>;
  namespace(ns: string, options?: { signal?: AbortSignal }): Promise<NamespaceInfo>;
  /** Direct upload: hash, init, PUT to the answered URL with progress, confirm. */
  upload(ns: string, file: Blob, options?: UploadOptions): Promise<Ref>;
  confirmUpload(id: string, options?: { signal?: AbortSignal }): Promise<Ref>;
  /**
   * Resumable upload over tus (through tus-js-client, loaded on first
   * use): hash, create the upload with its sha256, send it in chunks with
   * a checksum each, resume from the server's offset after a failure.
   * The ref comes from the Claimcheck-Ref header of the last answer. In
   * Node, pass a file as a Blob: `await fs.openAsBlob(path)`.
   */
  uploadResumable(ns: string, file: Blob, options?: ResumableUploadOptions): Promise<Ref>;
  threshold(ns: string): Promise<number>;
  offload<T>(ns: string, value: T, options?: OffloadOptions): Promise<T | Ref>;
  resolve<T = unknown>(value: T | Ref, options?: { signal?: AbortSignal }): Promise<T>;
}

export function isRef(v: unknown): v is Ref;
export function parseRef(json: string): Ref;
/**
 * The error of an answer given by its status, body text and Retry-After
 * seconds (the error classes of the server's codes; 460 is
 * ChecksumMismatchError), for answers that did not come through fetch.
 */
export function errorFromAnswer(status: number, text: string, op: string, retryAfter?: number): ClaimcheckError;
export function digestOf(
  data: string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob,
  options?: { onProgress?: (e: ProgressEvent) => void; signal?: AbortSignal },
): Promise<string>;

export type ErrorCode =
  | 'not_found'
  | 'gone'
  | 'expired'
  | 'checksum_mismatch'
  | 'too_large'
  | 'quota_exceeded'
  | 'invalid_argument'
  | 'unauthenticated'
  | 'permission_denied'
  | 'rate_limited'
  | 'held'
  | 'unavailable'
  | 'internal'
  | 'no_route'
  | 'method_not_allowed';

interface ErrorOptions {
  status?: number;
  reason?: GoneReason;
  at?: string;
  retryAfter?: number;
  cause?: unknown;
}

/** Every error of the client: a server's answer (code, status) or a local failure. */
export class ClaimcheckError extends Error {
  constructor(code: string, message: string, options?: ErrorOptions);
  /** The server's error code; http_<status> for an answer that is not the API's JSON. */
  readonly code: ErrorCode | string;
  /** The HTTP status, 0 when no answer was received. */
  readonly status: number;
  /** gone/expired: why the claim was finished. */
  readonly reason?: GoneReason;
  readonly at?: string;
  /** rate_limited: seconds to wait (Retry-After). */
  readonly retryAfter?: number;
}
type ErrorClass = new (message: string, options?: ErrorOptions) => ClaimcheckError;
export class NotFoundError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class GoneError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class ExpiredError extends GoneError {}
export class ChecksumMismatchError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class TooLargeError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class QuotaExceededError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class InvalidArgumentError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class UnauthenticatedError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class PermissionDeniedError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class RateLimitedError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class HeldError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class UnavailableError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class InternalError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class NoRouteError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export class MethodNotAllowedError extends ClaimcheckError { constructor(message: string, options?: ErrorOptions) }
export const ERROR_CLASSES: Readonly<Record<ErrorCode, ErrorClass>>;

export interface ListOptions {
  /** All must match. */
  labels?: Record<string, string>;
  state?: 'pending' | 'active' | 'deleted';
  /** Expiry in [expiresAfter, expiresBefore). */
  expiresAfter?: Date | string;
  expiresBefore?: Date | string;
  /** newest (default) or expiring: live claims, soonest expiry first. */
  order?: 'newest' | 'expiring';
  cursor?: string;
  /** 1 to 1000 (default 100). */
  limit?: number;
  signal?: AbortSignal;
}

export interface ClaimPage {
  claims: ClaimInfo[];
  /** The cursor of the next page; absent on the last one. */
  next?: string;
}
