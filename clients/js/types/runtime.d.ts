/**
 * An incremental sha256.
 */
export type Hash = {
    update: (bytes: Uint8Array) => void;
    /**
     * The digest in lowercase hex.
     */
    hex: () => string;
};
/**
 * The part of fetch the client uses.
 */
export type FetchLike = (url: string | URL, init: RequestInit & {
    duplex?: "half";
}) => Promise<Response>;
/**
 * An upload's target, as the server answers its init.
 */
export type UploadTarget = {
    id: string;
    state: string;
    url?: string | undefined;
    method?: string | undefined;
    headers?: Record<string, string> | undefined;
};
/**
 * Sends a direct upload's bytes to its URL, reporting progress.
 */
export type SendBlob = (fetchFn: FetchLike, up: UploadTarget, blob: Blob, options: {
    onProgress?: import("./types.js").OnProgress;
    signal?: AbortSignal;
}) => Promise<void>;
export type Runtime = {
    /**
     * A streaming sha256.
     */
    newHash: () => Promise<Hash>;
    /**
     * The sha256 of a tus chunk, base64.
     */
    sha256Base64: (body: Blob | Uint8Array) => Promise<string>;
    sendBlob: SendBlob;
    /**
     * Sends Blob and stream payloads when the client was given no fetch.
     */
    streamFetch?: FetchLike | undefined;
    /**
     * tus-js-client's file reader, when its own does not read Blobs.
     */
    tusFileReader?: object | undefined;
};
