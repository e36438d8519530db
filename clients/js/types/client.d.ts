/**
 * A client of one claimcheck server, on the given Runtime; the entry
 * points export it with theirs.
 */
export class BaseClient {
    /**
     * @param {string | URL} url
     * @param {ClientOptions} options
     * @param {Runtime} runtime
     */
    constructor(url: string | URL, { apiKey, fetch: f, opentelemetry }: ClientOptions | undefined, runtime: Runtime);
    /**
     * Stores body as a new claim in namespace ns and returns its reference.
     * body: string, Uint8Array, ArrayBuffer, Blob, or (Node only: browsers
     * stream request bodies only over HTTP/2) a ReadableStream.
     * @param {string} ns
     * @param {PutBody} body
     * @param {PutOptions} [opts]
     * @returns {Promise<Ref>}
     */
    put(ns: string, body: PutBody, opts?: PutOptions): Promise<Ref>;
    /**
     * Redeems a claim (a read) and returns its verified Payload. ref: a
     * reference, its JSON, or a claim id.
     * @param {RefLike} ref
     * @param {SignalOptions} [options]
     * @returns {Promise<Payload>}
     */
    redeem(ref: RefLike, { signal }?: SignalOptions): Promise<Payload>;
    /**
     * The claim's state, deadlines and counters.
     * @param {RefLike} ref
     * @param {SignalOptions} [options]
     * @returns {Promise<ClaimInfo>}
     */
    stat(ref: RefLike, { signal }?: SignalOptions): Promise<ClaimInfo>;
    /**
     * A consumer is done with the claim (an ack); idempotent per consumer.
     * @param {RefLike} ref
     * @param {{ consumer?: string, signal?: AbortSignal }} [options]
     * @returns {Promise<void>}
     */
    release(ref: RefLike, { consumer, signal }?: {
        consumer?: string;
        signal?: AbortSignal;
    }): Promise<void>;
    /**
     * Finishes the claim now (reason "deleted").
     * @param {RefLike} ref
     * @param {SignalOptions} [options]
     * @returns {Promise<void>}
     */
    delete(ref: RefLike, { signal }?: SignalOptions): Promise<void>;
    /**
     * Moves the claim's expiry later, up to the namespace's
     * ttl.max_lifetime, and answers its ClaimInfo. Give either expiresAt (a
     * Date or an RFC 3339 string; repeating it changes nothing) or by (a
     * duration such as "24h", added to the current expiry).
     * @param {RefLike} ref
     * @param {{ expiresAt?: Date | string, by?: string, signal?: AbortSignal }} options
     * @returns {Promise<ClaimInfo>}
     */
    extend(ref: RefLike, { expiresAt, by, signal }?: {
        expiresAt?: Date | string;
        by?: string;
        signal?: AbortSignal;
    }): Promise<ClaimInfo>;
    /**
     * One page of a namespace's claims, newest first (or soonest expiry
     * first with order "expiring"): {claims, next}. labels: {key: value},
     * all must match; pass next as cursor for the following page.
     * @param {string} ns
     * @param {ListOptions} [options]
     * @returns {Promise<ClaimPage>}
     */
    list(ns: string, { labels, state, expiresAfter, expiresBefore, order, cursor, limit, signal }?: ListOptions): Promise<ClaimPage>;
    /**
     * Makes a subscription of the key's tenant; the answer carries its
     * secret, which is never shown again.
     * @param {SubscriptionSpec} spec
     * @param {SignalOptions} [options]
     * @returns {Promise<Subscription>}
     */
    createSubscription(spec: SubscriptionSpec, { signal }?: SignalOptions): Promise<Subscription>;
    /**
     * One page of the key's tenant's subscriptions, by id: {subscriptions,
     * next}; pass next as cursor for the following page.
     * @param {PageOptions} [options]
     * @returns {Promise<SubscriptionPage>}
     */
    subscriptions({ cursor, limit, signal }?: PageOptions): Promise<SubscriptionPage>;
    /**
     * Deletes a subscription made over the API.
     * @param {string} id
     * @param {SignalOptions} [options]
     */
    deleteSubscription(id: string, { signal }?: SignalOptions): Promise<void>;
    /**
     * Delivers again to a dead-lettered subscription.
     * @param {string} id
     * @param {SignalOptions} [options]
     */
    resumeSubscription(id: string, { signal }?: SignalOptions): Promise<void>;
    /**
     * One page of a subscription's parked and dead-lettered events, by seq:
     * {attempts, next}.
     * @param {string} id
     * @param {PageOptions} [options]
     * @returns {Promise<SubscriptionAttemptPage>}
     */
    subscriptionAttempts(id: string, { cursor, limit, signal }?: PageOptions): Promise<SubscriptionAttemptPage>;
    /**
     * Has a subscription's parked and dead-lettered events delivered now:
     * {retried}, how many.
     * @param {string} id
     * @param {SignalOptions} [options]
     * @returns {Promise<{ retried: number }>}
     */
    retrySubscription(id: string, { signal }?: SignalOptions): Promise<{
        retried: number;
    }>;
    /**
     * Has a subscription's events after since delivered again: since is a
     * time (a Date or RFC 3339) or an event seq. Answers {cursor}, the
     * cursor the server set (a string).
     * @param {string} id
     * @param {Date | string} since
     * @param {SignalOptions} [options]
     * @returns {Promise<{ cursor: string }>}
     */
    replaySubscription(id: string, since: Date | string, { signal }?: SignalOptions): Promise<{
        cursor: string;
    }>;
    /**
     * The namespace's effective policy, limits and usage.
     * @param {string} ns
     * @param {SignalOptions} [options]
     * @returns {Promise<NamespaceInfo>}
     */
    namespace(ns: string, { signal }?: SignalOptions): Promise<NamespaceInfo>;
    /**
     * Direct upload of a Blob or File: hash it, init, send the bytes to the
     * URL the server answers (the server itself, or an S3 bucket), confirm.
     * onProgress gets {phase: "hashing"|"uploading", loaded, total}.
     * @param {string} ns
     * @param {Blob} blob
     * @param {UploadOptions} [opts]
     * @returns {Promise<Ref>}
     */
    upload(ns: string, blob: Blob, opts?: UploadOptions): Promise<Ref>;
    /**
     * Resumable upload of a Blob or File (in Node: fs.openAsBlob(path))
     * over tus: hash it, create the upload with its sha256, send it in
     * chunks (each with its own checksum), and after a cut connection ask
     * the server for its offset and go on from there. Resolves to the
     * claim's ref, read from the Claimcheck-Ref header of the last answer.
     * onProgress gets {phase: "hashing"|"uploading", loaded, total}. Needs
     * the tus-js-client package, loaded on first use.
     * @param {string} ns
     * @param {Blob} blob
     * @param {ResumableUploadOptions} [opts]
     * @returns {Promise<Ref>}
     */
    uploadResumable(ns: string, blob: Blob, opts?: ResumableUploadOptions): Promise<Ref>;
    /**
     * Confirms an upload whose bytes were sent; answers the claim's ref.
     * @param {string} id
     * @param {SignalOptions} [options]
     * @returns {Promise<Ref>}
     */
    confirmUpload(id: string, { signal }?: SignalOptions): Promise<Ref>;
    /**
     * The namespace's offload threshold in bytes, read once and remembered.
     * @param {string} ns
     * @returns {Promise<number>}
     */
    threshold(ns: string): Promise<number>;
    /**
     * Offloads a JSON value: its JSON encoding at or over the namespace's
     * threshold is stored as a claim and its ref returned; a smaller value
     * comes back as it is. resolve() undoes it.
     * @template T
     * @param {string} ns
     * @param {T} value
     * @param {OffloadOptions} [opts]
     * @returns {Promise<T | Ref>}
     */
    offload<T>(ns: string, value: T, opts?: OffloadOptions): Promise<T | Ref>;
    /**
     * The value offload() was given: a ref is redeemed (verified) and parsed.
     * @template [T=unknown]
     * @param {T | Ref} value
     * @param {SignalOptions} [options]
     * @returns {Promise<T>}
     */
    resolve<T = unknown>(value: T | Ref, { signal }?: SignalOptions): Promise<T>;
    /**
     * The live stream of the key's tenant's events (GET /v1/events/stream,
     * Server-Sent Events), as an async iterator: events as they happen,
     * from now or after options.lastEventId. A broken connection is opened
     * again after the last event yielded (Last-Event-ID), so none is missed
     * or repeated; an error answer of the server (a filter it refuses, a
     * key without the right) is thrown. Aborting options.signal ends it.
     * Unlike EventSource it sends the API key, and works in Node too.
     * @param {FollowOptions} [options]
     * @returns {AsyncGenerator<ClaimEvent, void, void>}
     */
    events({ types, namespaces, labels, lastEventId, signal }?: FollowOptions): AsyncGenerator<ClaimEvent, void, void>;
    #private;
}
import type { PutBody } from './types.js';
import type { PutOptions } from './types.js';
import type { Ref } from './types.js';
import type { RefLike } from './types.js';
import type { SignalOptions } from './types.js';
import { Payload } from './payload.js';
import type { ClaimInfo } from './types.js';
import type { ListOptions } from './types.js';
import type { ClaimPage } from './types.js';
import type { SubscriptionSpec } from './types.js';
import type { Subscription } from './types.js';
import type { PageOptions } from './types.js';
import type { SubscriptionPage } from './types.js';
import type { SubscriptionAttemptPage } from './types.js';
import type { NamespaceInfo } from './types.js';
import type { UploadOptions } from './types.js';
import type { ResumableUploadOptions } from './types.js';
import type { OffloadOptions } from './types.js';
import type { FollowOptions } from './types.js';
import type { ClaimEvent } from './types.js';
import type { ClientOptions } from './types.js';
import type { Runtime } from './runtime.js';
