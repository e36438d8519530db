// Bytes: what the client accepts as a payload, and hex.

import { InvalidArgumentError } from './errors.js';

export const encoder = new TextEncoder();

/**
 * @param {string | Uint8Array | ArrayBuffer | ArrayBufferView} data
 * @returns {Uint8Array}
 */
export function toBytes(data) {
  if (typeof data === 'string') return encoder.encode(data);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new InvalidArgumentError(`want a string, Uint8Array, ArrayBuffer or Blob, got ${Object.prototype.toString.call(data)}`);
}

/**
 * @param {Iterable<number>} bytes
 * @returns {string}
 */
export function toHex(bytes) {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}
