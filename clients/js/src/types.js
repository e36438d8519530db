// The shapes the server answers and the options the client takes
// (docs/HTTP.md), as JSDoc types: the modules import them, tsc checks the
// code against them, and the declarations of types/ are generated from
// them. Nothing here runs.

/**
 * A claim's reference, as the server answers it.
 * @typedef {object} Ref
 * @property {'claim_check_ref'} type
 * @property {1} v
 * @property {string} id
 * @property {string} ns
 * @property {number} size
 * @property {number} stored_size
 * @property {'zstd' | 'gzip' | 'none'} compression
 * @property {string} digest "sha256:" + 64 lowercase hex digits of the original bytes.
 * @property {number} created_at
 * @property {number} expires_at
 */

/**
 * A reference, its JSON, or a bare claim id ("cc_…").
 * @typedef {Ref | string} RefLike
 */

/** @typedef {'pending' | 'active' | 'deleted'} ClaimState */

/**
 * Why a claim was finished.
 * @typedef {'expired' | 'released' | 'read_retention_over' | 'deleted' | 'never_confirmed' | 'aborted' | 'key_destroyed'} GoneReason
 */

/**
 * @typedef {object} Hold
 * @property {'claim' | 'namespace'} scope
 * @property {string} [reason]
 * @property {string} since
 */

/**
 * A claim's state, deadlines and counters.
 * @typedef {object} ClaimInfo
 * @property {Ref} ref
 * @property {ClaimState} state
 * @property {string} [content_type]
 * @property {Record<string, string>} [labels]
 * @property {number} reads
 * @property {string} [first_read_at]
 * @property {number} releases
 * @property {number} consumers
 * @property {string[]} [released_by]
 * @property {string} [delete_at]
 * @property {string} [deleted_at]
 * @property {GoneReason} [delete_reason]
 * @property {Hold[]} [holds]
 * @property {string} [object] the key of the claim's object in the store's blob storage when it is the payload as it is (uncompressed, unencrypted)
 */

/**
 * @typedef {object} NamespaceUsage
 * @property {number} used_bytes
 * @property {number} reserved_bytes
 * @property {number} active_claims
 * @property {number} pending_claims
 * @property {number} finished_claims claims finished for any reason (history, not quota)
 */

/**
 * @typedef {object} Limits
 * @property {number} bytes
 * @property {number} claims
 */

/**
 * The effective policy: sizes in bytes, durations in Go syntax.
 * @typedef {{ threshold: number, max_size: number, [key: string]: unknown }} NamespacePolicy
 */

/**
 * A namespace's effective policy, limits and usage.
 * @typedef {object} NamespaceInfo
 * @property {string} name
 * @property {NamespacePolicy} policy
 * @property {Limits} limits
 * @property {NamespaceUsage} usage
 * @property {{ name: string, limits: Limits, usage: NamespaceUsage, namespaces: number }} [tenant]
 * @property {boolean} [retired]
 */

/**
 * An event of the audit trail, as the live stream carries it.
 * @typedef {object} ClaimEvent
 * @property {string} seq Its sequence number, exact: a JSON string (19 digits, past what a JavaScript number holds).
 * @property {string} id The stream's id of the event, exact: give it as lastEventId to resume after it.
 * @property {string} at
 * @property {string} kind created, confirmed, redeemed, first_redeemed, released, all_released, expired, expired_unread, deleted, reaped, …
 * @property {string} [ns]
 * @property {string} [tenant]
 * @property {string} [claim_id]
 * @property {string} [blob_id]
 * @property {string} [actor]
 * @property {string} [reason]
 * @property {string} [detail]
 */

/**
 * @typedef {object} FollowOptions
 * @property {string[]} [types] Event kinds (default every kind).
 * @property {string[]} [namespaces] Namespaces of the key's tenant (default every one).
 * @property {Record<string, string>} [labels] Labels a claim must all have.
 * @property {string} [lastEventId] Resume after this event (its seq), or 'oldest' for the oldest retained; default: from now.
 * @property {AbortSignal} [signal] Ends the stream.
 */

/**
 * @typedef {object} ClientOptions
 * @property {string} [apiKey] An API key (cck_…), sent as Authorization: Bearer on API calls, never to upload URLs.
 * @property {typeof fetch} [fetch] The fetch to use (default globalThis.fetch).
 * @property {import('./tracecontext.js').OpenTelemetryAPI | null} [opentelemetry] The application's
 *   `@opentelemetry/api`, whose propagator puts the active trace context (traceparent, tracestate,
 *   baggage) on every API request. Default: the package if a dynamic import finds it (Node, or an
 *   import map), else none; null: never.
 */

/**
 * @typedef {object} PutOptions
 * @property {string} [contentType] Stored with the claim and answered on redeem.
 * @property {string} [digest] "sha256:<hex>" of the payload, if known: the server refuses other bytes.
 * @property {number} [consumers] Releases that finish the claim (fan-out).
 * @property {string[]} [consumerNames] The consumers whose releases count.
 * @property {Record<string, string>} [labels]
 * @property {AbortSignal} [signal]
 */

/**
 * What put sends. A ReadableStream only in Node: browsers stream request
 * bodies only over HTTP/2.
 * @typedef {string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array>} PutBody
 */

/**
 * @typedef {object} ProgressEvent
 * @property {'hashing' | 'uploading'} phase "hashing" while the sha256 of the file is computed, then "uploading".
 * @property {number} loaded
 * @property {number} total
 */

/** @typedef {(e: ProgressEvent) => void} OnProgress */

/**
 * A place to keep upload URLs by fingerprint (tus-js-client's UrlStorage).
 * @typedef {object} ResumableUrlStorage
 * @property {() => Promise<object[]>} findAllUploads
 * @property {(fingerprint: string) => Promise<object[]>} findUploadsByFingerprint
 * @property {(urlStorageKey: string) => Promise<void>} removeUpload
 * @property {(fingerprint: string, upload: object) => Promise<string>} addUpload
 */

/**
 * @typedef {object} ResumableUploadOptions
 * @property {OnProgress} [onProgress]
 * @property {AbortSignal} [signal] Stops the upload without dropping it: it can be resumed until it expires.
 * @property {string} [contentType] Stored with the claim; default: the Blob's type.
 * @property {string} [digest] "sha256:<hex>" of the file, when known: skips the hashing.
 * @property {number} [chunkSize] Bytes per PATCH request; default 16 MiB.
 * @property {number[]} [retryDelays] Waits (ms) between attempts in a row without progress; default [500, 1000, 2000, 4000, 8000].
 * @property {string} [uploadUrl] Resume this upload (an URL given to onUploadUrl earlier) instead of creating one.
 * @property {(url: string) => void} [onUploadUrl] Called with the upload's URL once the server created it.
 * @property {ResumableUrlStorage | null} [urlStorage] Where upload URLs are kept by fingerprint (server, namespace, size, sha256) so that the same file continues its upload after a reload: default localStorage in browsers, nowhere in Node; null: never.
 * @property {unknown} [tus] The tus-js-client module, when it is not importable as 'tus-js-client' (a UMD global, say).
 * @property {unknown} [httpStack] A tus-js-client HTTP stack to send the requests with (default its DefaultHttpStack); each PATCH still gets its Upload-Checksum.
 */

/**
 * @typedef {object} UploadOptions
 * @property {OnProgress} [onProgress]
 * @property {string} [contentType] Default: the Blob's type.
 * @property {Record<string, string>} [labels]
 * @property {number} [consumers]
 * @property {string[]} [consumerNames]
 * @property {string} [idempotencyKey] Repeating an upload with the same key, size and sha256 continues it.
 * @property {string} [digest] "sha256:<hex>" when known: the file is then not hashed first.
 * @property {AbortSignal} [signal]
 */

/**
 * @typedef {Omit<PutOptions, 'contentType' | 'digest'> & { threshold?: number }} OffloadOptions
 * threshold: bytes; default the namespace's policy threshold.
 */

/**
 * @typedef {object} ListOptions
 * @property {Record<string, string>} [labels] All must match.
 * @property {ClaimState} [state]
 * @property {Date | string} [expiresAfter] Expiry in [expiresAfter, expiresBefore).
 * @property {Date | string} [expiresBefore]
 * @property {'newest' | 'expiring'} [order] newest (default) or expiring: live claims, soonest expiry first.
 * @property {string} [cursor]
 * @property {number} [limit] 1 to 1000 (default 100).
 * @property {AbortSignal} [signal]
 */

/**
 * @typedef {object} ClaimPage
 * @property {ClaimInfo[]} claims
 * @property {string} [next] The cursor of the next page; absent on the last one.
 */

/** @typedef {{ signal?: AbortSignal }} SignalOptions */

/**
 * What a subscription is made from (POST /v1/subscriptions).
 * @typedef {object} SubscriptionSpec
 * @property {string} url The receiver: http or https.
 * @property {string} [id] Letters, digits, '-', '_' and '.', at most 64; made up when absent.
 * @property {string[]} [types] Event kinds delivered; all when absent.
 * @property {string[]} [namespaces] Namespaces delivered; all of the tenant's when absent.
 * @property {Record<string, string>} [labels] Labels a claim must all have.
 * @property {string} [secret] The signing secret ("whsec_" and base64); made up when absent.
 * @property {number} [events_per_request] 1: one CloudEvent a request; above 1: batched; 0 or absent: the server's default.
 */

/**
 * A subscription and how its delivery stands. The secret is answered
 * once, by the create.
 * @typedef {object} Subscription
 * @property {string} id
 * @property {string} tenant
 * @property {string} url
 * @property {string[]} [types]
 * @property {string[]} [namespaces]
 * @property {Record<string, string>} [labels]
 * @property {string} [secret]
 * @property {boolean} enabled
 * @property {number} [events_per_request]
 * @property {'api' | 'config'} source
 * @property {'active' | 'lagging' | 'dead_lettered'} state
 * @property {string} cursor The seq delivery resumes after (a string: it has 19 digits).
 * @property {number} delivered
 * @property {number} [attempts]
 * @property {string} [last_error]
 * @property {string} [failing_since]
 * @property {string} created_at
 */

/**
 * @typedef {object} SubscriptionPage
 * @property {Subscription[]} subscriptions
 * @property {string} [next] The cursor of the next page; absent on the last one.
 */

/**
 * A parked or dead-lettered event of a subscription.
 * @typedef {object} SubscriptionAttempt
 * @property {ClaimEvent} event
 * @property {'parked' | 'dead_lettered'} state
 * @property {number} attempts
 * @property {string} [failing_since]
 * @property {string} [next_attempt]
 * @property {string} [last_error]
 */

/**
 * @typedef {object} SubscriptionAttemptPage
 * @property {SubscriptionAttempt[]} attempts
 * @property {string} [next] The cursor of the next page; absent on the last one.
 */

/** @typedef {{ cursor?: string, limit?: number, signal?: AbortSignal }} PageOptions */

export {};
