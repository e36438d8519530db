export function sendBlobFetch(fetchFn: import("./runtime.js").FetchLike, up: import("./runtime.js").UploadTarget, blob: Blob, options: {
    onProgress?: import("./types.js").OnProgress;
    signal?: AbortSignal;
}): Promise<void>;
export function sendBlobXHR(fetchFn: import("./runtime.js").FetchLike, up: import("./runtime.js").UploadTarget, blob: Blob, options: {
    onProgress?: import("./types.js").OnProgress;
    signal?: AbortSignal;
}): Promise<void>;
