/**
 * A claim's reference, as the server answers it.
 */
export type Ref = {
    type: "claim_check_ref";
    v: 1;
    id: string;
    ns: string;
    size: number;
    stored_size: number;
    compression: "zstd" | "gzip" | "none";
    /**
     * "sha256:" + 64 lowercase hex digits of the original bytes.
     */
    digest: string;
    created_at: number;
    expires_at: number;
};
/**
 * A reference, its JSON, or a bare claim id ("cc_…").
 */
export type RefLike = Ref | string;
export type ClaimState = "pending" | "active" | "deleted";
/**
 * Why a claim was finished.
 */
export type GoneReason = "expired" | "released" | "read_retention_over" | "deleted" | "never_confirmed" | "aborted" | "key_destroyed";
export type Hold = {
    scope: "claim" | "namespace";
    reason?: string | undefined;
    since: string;
};
/**
 * A claim's state, deadlines and counters.
 */
export type ClaimInfo = {
    ref: Ref;
    state: ClaimState;
    content_type?: string | undefined;
    labels?: Record<string, string> | undefined;
    reads: number;
    first_read_at?: string | undefined;
    releases: number;
    consumers: number;
    released_by?: string[] | undefined;
    delete_at?: string | undefined;
    deleted_at?: string | undefined;
    delete_reason?: GoneReason | undefined;
    holds?: Hold[] | undefined;
    /**
     * the key of the claim's object in the store's blob storage when it is the payload as it is (uncompressed, unencrypted)
     */
    object?: string | undefined;
};
export type NamespaceUsage = {
    used_bytes: number;
    reserved_bytes: number;
    active_claims: number;
    pending_claims: number;
    /**
     * claims finished for any reason (history, not quota)
     */
    finished_claims: number;
};
export type Limits = {
    bytes: number;
    claims: number;
};
/**
 * The effective policy: sizes in bytes, durations in Go syntax.
 */
export type NamespacePolicy = {
    threshold: number;
    max_size: number;
    [key: string]: unknown;
};
/**
 * A namespace's effective policy, limits and usage.
 */
export type NamespaceInfo = {
    name: string;
    policy: NamespacePolicy;
    limits: Limits;
    usage: NamespaceUsage;
    tenant?: {
        name: string;
        limits: Limits;
        usage: NamespaceUsage;
        namespaces: number;
    } | undefined;
    retired?: boolean | undefined;
};
/**
 * An event of the audit trail, as the live stream carries it.
 */
export type ClaimEvent = {
    /**
     * Its sequence number, exact: a JSON string (19 digits, past what a JavaScript number holds).
     */
    seq: string;
    /**
     * The stream's id of the event, exact: give it as lastEventId to resume after it.
     */
    id: string;
    at: string;
    /**
     * created, confirmed, redeemed, first_redeemed, released, all_released, expired, expired_unread, deleted, reaped, …
     */
    kind: string;
    ns?: string | undefined;
    tenant?: string | undefined;
    claim_id?: string | undefined;
    blob_id?: string | undefined;
    actor?: string | undefined;
    reason?: string | undefined;
    detail?: string | undefined;
};
export type FollowOptions = {
    /**
     * Event kinds (default every kind).
     */
    types?: string[] | undefined;
    /**
     * Namespaces of the key's tenant (default every one).
     */
    namespaces?: string[] | undefined;
    /**
     * Labels a claim must all have.
     */
    labels?: Record<string, string> | undefined;
    /**
     * Resume after this event (its seq), or 'oldest' for the oldest retained; default: from now.
     */
    lastEventId?: string | undefined;
    /**
     * Ends the stream.
     */
    signal?: AbortSignal | undefined;
};
export type ClientOptions = {
    /**
     * An API key (cck_…), sent as Authorization: Bearer on API calls, never to upload URLs.
     */
    apiKey?: string | undefined;
    /**
     * The fetch to use (default globalThis.fetch).
     */
    fetch?: typeof fetch | undefined;
    /**
     * The application's
     * `@opentelemetry/api`, whose propagator puts the active trace context (traceparent, tracestate,
     * baggage) on every API request. Default: the package if a dynamic import finds it (Node, or an
     * import map), else none; null: never.
     */
    opentelemetry?: import("./tracecontext.js").OpenTelemetryAPI | null | undefined;
};
export type PutOptions = {
    /**
     * Stored with the claim and answered on redeem.
     */
    contentType?: string | undefined;
    /**
     * "sha256:<hex>" of the payload, if known: the server refuses other bytes.
     */
    digest?: string | undefined;
    /**
     * Releases that finish the claim (fan-out).
     */
    consumers?: number | undefined;
    /**
     * The consumers whose releases count.
     */
    consumerNames?: string[] | undefined;
    labels?: Record<string, string> | undefined;
    signal?: AbortSignal | undefined;
};
/**
 * What put sends. A ReadableStream only in Node: browsers stream request
 * bodies only over HTTP/2.
 */
export type PutBody = string | Uint8Array | ArrayBuffer | ArrayBufferView | Blob | ReadableStream<Uint8Array>;
export type ProgressEvent = {
    /**
     * "hashing" while the sha256 of the file is computed, then "uploading".
     */
    phase: "hashing" | "uploading";
    loaded: number;
    total: number;
};
export type OnProgress = (e: ProgressEvent) => void;
/**
 * A place to keep upload URLs by fingerprint (tus-js-client's UrlStorage).
 */
export type ResumableUrlStorage = {
    findAllUploads: () => Promise<object[]>;
    findUploadsByFingerprint: (fingerprint: string) => Promise<object[]>;
    removeUpload: (urlStorageKey: string) => Promise<void>;
    addUpload: (fingerprint: string, upload: object) => Promise<string>;
};
export type ResumableUploadOptions = {
    onProgress?: OnProgress | undefined;
    /**
     * Stops the upload without dropping it: it can be resumed until it expires.
     */
    signal?: AbortSignal | undefined;
    /**
     * Stored with the claim; default: the Blob's type.
     */
    contentType?: string | undefined;
    /**
     * "sha256:<hex>" of the file, when known: skips the hashing.
     */
    digest?: string | undefined;
    /**
     * Bytes per PATCH request; default 16 MiB.
     */
    chunkSize?: number | undefined;
    /**
     * Waits (ms) between attempts in a row without progress; default [500, 1000, 2000, 4000, 8000].
     */
    retryDelays?: number[] | undefined;
    /**
     * Resume this upload (an URL given to onUploadUrl earlier) instead of creating one.
     */
    uploadUrl?: string | undefined;
    /**
     * Called with the upload's URL once the server created it.
     */
    onUploadUrl?: ((url: string) => void) | undefined;
    /**
     * Where upload URLs are kept by fingerprint (server, namespace, size, sha256) so that the same file continues its upload after a reload: default localStorage in browsers, nowhere in Node; null: never.
     */
    urlStorage?: ResumableUrlStorage | null | undefined;
    /**
     * The tus-js-client module, when it is not importable as 'tus-js-client' (a UMD global, say).
     */
    tus?: unknown;
    /**
     * A tus-js-client HTTP stack to send the requests with (default its DefaultHttpStack); each PATCH still gets its Upload-Checksum.
     */
    httpStack?: unknown;
};
export type UploadOptions = {
    onProgress?: OnProgress | undefined;
    /**
     * Default: the Blob's type.
     */
    contentType?: string | undefined;
    labels?: Record<string, string> | undefined;
    consumers?: number | undefined;
    consumerNames?: string[] | undefined;
    /**
     * Repeating an upload with the same key, size and sha256 continues it.
     */
    idempotencyKey?: string | undefined;
    /**
     * "sha256:<hex>" when known: the file is then not hashed first.
     */
    digest?: string | undefined;
    signal?: AbortSignal | undefined;
};
/**
 * threshold: bytes; default the namespace's policy threshold.
 */
export type OffloadOptions = Omit<PutOptions, "contentType" | "digest"> & {
    threshold?: number;
};
export type ListOptions = {
    /**
     * All must match.
     */
    labels?: Record<string, string> | undefined;
    state?: ClaimState | undefined;
    /**
     * Expiry in [expiresAfter, expiresBefore).
     */
    expiresAfter?: string | Date | undefined;
    expiresBefore?: string | Date | undefined;
    /**
     * newest (default) or expiring: live claims, soonest expiry first.
     */
    order?: "newest" | "expiring" | undefined;
    cursor?: string | undefined;
    /**
     * 1 to 1000 (default 100).
     */
    limit?: number | undefined;
    signal?: AbortSignal | undefined;
};
export type ClaimPage = {
    claims: ClaimInfo[];
    /**
     * The cursor of the next page; absent on the last one.
     */
    next?: string | undefined;
};
export type SignalOptions = {
    signal?: AbortSignal;
};
/**
 * What a subscription is made from (POST /v1/subscriptions).
 */
export type SubscriptionSpec = {
    /**
     * The receiver: http or https.
     */
    url: string;
    /**
     * Letters, digits, '-', '_' and '.', at most 64; made up when absent.
     */
    id?: string | undefined;
    /**
     * Event kinds delivered; all when absent.
     */
    types?: string[] | undefined;
    /**
     * Namespaces delivered; all of the tenant's when absent.
     */
    namespaces?: string[] | undefined;
    /**
     * Labels a claim must all have.
     */
    labels?: Record<string, string> | undefined;
    /**
     * The signing secret ("whsec_" and base64); made up when absent.
     */
    secret?: string | undefined;
    /**
     * 1: one CloudEvent a request; above 1: batched; 0 or absent: the server's default.
     */
    events_per_request?: number | undefined;
};
/**
 * A subscription and how its delivery stands. The secret is answered
 * once, by the create.
 */
export type Subscription = {
    id: string;
    tenant: string;
    url: string;
    types?: string[] | undefined;
    namespaces?: string[] | undefined;
    labels?: Record<string, string> | undefined;
    secret?: string | undefined;
    enabled: boolean;
    events_per_request?: number | undefined;
    source: "api" | "config";
    state: "active" | "lagging" | "dead_lettered";
    /**
     * The seq delivery resumes after (a string: it has 19 digits).
     */
    cursor: string;
    delivered: number;
    attempts?: number | undefined;
    last_error?: string | undefined;
    failing_since?: string | undefined;
    created_at: string;
};
export type SubscriptionPage = {
    subscriptions: Subscription[];
    /**
     * The cursor of the next page; absent on the last one.
     */
    next?: string | undefined;
};
/**
 * A parked or dead-lettered event of a subscription.
 */
export type SubscriptionAttempt = {
    event: ClaimEvent;
    state: "parked" | "dead_lettered";
    attempts: number;
    failing_since?: string | undefined;
    next_attempt?: string | undefined;
    last_error?: string | undefined;
};
export type SubscriptionAttemptPage = {
    attempts: SubscriptionAttempt[];
    /**
     * The cursor of the next page; absent on the last one.
     */
    next?: string | undefined;
};
export type PageOptions = {
    cursor?: string;
    limit?: number;
    signal?: AbortSignal;
};
