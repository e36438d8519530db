/**
 * @param {string | Uint8Array | ArrayBuffer | ArrayBufferView} data
 * @returns {Uint8Array}
 */
export function toBytes(data: string | Uint8Array | ArrayBuffer | ArrayBufferView): Uint8Array;
/**
 * @param {Iterable<number>} bytes
 * @returns {string}
 */
export function toHex(bytes: Iterable<number>): string;
export const encoder: TextEncoder;
