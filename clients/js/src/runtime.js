// What differs between the places the client runs: the Node entry
// (node.js) and the Web one (index.js) each pass the client one Runtime.
// Nothing here runs.

/**
 * An incremental sha256.
 * @typedef {object} Hash
 * @property {(bytes: Uint8Array) => void} update
 * @property {() => string} hex The digest in lowercase hex.
 */

/**
 * The part of fetch the client uses.
 * @typedef {(url: string | URL, init: RequestInit & { duplex?: 'half' }) => Promise<Response>} FetchLike
 */

/**
 * An upload's target, as the server answers its init.
 * @typedef {object} UploadTarget
 * @property {string} id
 * @property {string} state
 * @property {string} [url]
 * @property {string} [method]
 * @property {Record<string, string>} [headers]
 */

/**
 * Sends a direct upload's bytes to its URL, reporting progress.
 * @typedef {(fetchFn: FetchLike, up: UploadTarget, blob: Blob, options: { onProgress?: import('./types.js').OnProgress, signal?: AbortSignal }) => Promise<void>} SendBlob
 */

/**
 * @typedef {object} Runtime
 * @property {() => Promise<Hash>} newHash A streaming sha256.
 * @property {(body: Blob | Uint8Array) => Promise<string>} sha256Base64 The sha256 of a tus chunk, base64.
 * @property {SendBlob} sendBlob
 * @property {FetchLike} [streamFetch] Sends Blob and stream payloads when the client was given no fetch.
 * @property {object} [tusFileReader] tus-js-client's file reader, when its own does not read Blobs.
 */

export {};
