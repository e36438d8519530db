/**
 * Whether v is a claimcheck reference object.
 * @param {unknown} v
 * @returns {v is Ref}
 */
export function isRef(v: unknown): v is Ref;
/**
 * The claim id and namespace of a ref object, its JSON, or a bare claim
 * id; ref is set when a ref object was given.
 * @param {RefLike} ref
 * @returns {{ id: string, ns?: string, ref?: Ref }}
 */
export function refParts(ref: RefLike): {
    id: string;
    ns?: string;
    ref?: Ref;
};
/**
 * Parses a reference from its JSON, checking what a client relies on.
 * @param {string} json
 * @returns {Ref}
 */
export function parseRef(json: string): Ref;
export const digestPattern: RegExp;
import type { Ref } from './types.js';
import type { RefLike } from './types.js';
