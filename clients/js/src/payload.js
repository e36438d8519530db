// Redeemed payloads, verified as they arrive.
//
// A redeemed payload is hashed and counted as it arrives and checked
// against the size and sha256 of its Claimcheck-Ref header. A browser
// cannot read the server's Claimcheck-Error trailer, so this check is what
// stands between a broken stream and the caller: the stream errors at its
// end instead of closing, and bytes() rejects.

import { ClaimcheckError, ChecksumMismatchError } from './errors.js';

/** @import { Ref } from './types.js' */
/** @import { Hash } from './runtime.js' */

/**
 * A redeemed payload. Its bytes are verified against the ref's size and
 * sha256 as they arrive; read them once, through body, bytes(), text(),
 * json() or blob().
 */
export class Payload {
  /** @type {ReadableStream<Uint8Array>} */
  #body;
  #used = false;
  /**
   * @param {Ref} ref
   * @param {string} contentType
   * @param {ReadableStream<Uint8Array>} body
   */
  constructor(ref, contentType, body) {
    /** @readonly */
    this.ref = ref;
    /** @readonly */
    this.size = ref.size;
    /** @readonly */
    this.contentType = contentType;
    this.#body = body;
  }

  /**
   * The verified stream. Bytes arrive as the server sends them; the
   * stream errors (ChecksumMismatchError) instead of closing when the
   * whole is not the ref's bytes, so a consumer that waits for the end
   * never takes a broken payload for a whole one.
   * @returns {ReadableStream<Uint8Array>}
   */
  get body() {
    if (this.#used) throw new ClaimcheckError('used', 'payload: the body was already read');
    this.#used = true;
    return this.#body;
  }

  /**
   * The whole payload, once verified; rejects on any mismatch.
   * @returns {Promise<Uint8Array>}
   */
  async bytes() {
    const out = new Uint8Array(this.size);
    let n = 0;
    const reader = this.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out.set(value, n); // the verifier has already refused more than size bytes
      n += value.byteLength;
    }
    return out;
  }

  /** @returns {Promise<string>} */
  async text() {
    return new TextDecoder().decode(await this.bytes());
  }

  /**
   * @template [T=unknown]
   * @returns {Promise<T>}
   */
  async json() {
    return JSON.parse(await this.text());
  }

  /** @returns {Promise<Blob>} */
  async blob() {
    return new Blob([/** @type {BlobPart} */ (await this.bytes())], { type: this.contentType });
  }
}

/**
 * Wraps body in a stream that passes bytes on as they come and checks the
 * count at every chunk and the sha256 at the end.
 * @param {ReadableStream<Uint8Array>} body
 * @param {Ref} ref
 * @param {Hash} hash
 * @param {string} op
 * @returns {ReadableStream<Uint8Array>}
 */
export function verifying(body, ref, hash, op) {
  let n = 0;
  /** @param {string} what */
  const mismatch = (what) =>
    new ChecksumMismatchError(`${op}: ${what}; the payload is not the claim's bytes (want ${ref.size} bytes, ${ref.digest})`);
  return body.pipeThrough(
    /** @type {TransformStream<Uint8Array, Uint8Array>} */ (new TransformStream({
      transform(chunk, controller) {
        n += chunk.byteLength;
        if (n > ref.size) {
          controller.error(mismatch(`more than ${ref.size} bytes arrived`));
          return;
        }
        hash.update(chunk);
        controller.enqueue(chunk);
      },
      flush(controller) {
        if (n !== ref.size) {
          controller.error(mismatch(`the stream ended after ${n} of ${ref.size} bytes`));
          return;
        }
        const got = 'sha256:' + hash.hex();
        if (got !== ref.digest) controller.error(mismatch(`the bytes hash to ${got}`));
      },
    })),
  );
}
