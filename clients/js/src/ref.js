// References: what a client passes along instead of the payload.

import { InvalidArgumentError } from './errors.js';

/** @import { Ref, RefLike } from './types.js' */

const REF_TYPE = 'claim_check_ref';

const claimIdPattern = /^cc_[A-Za-z0-9_-]{22}$/;
export const digestPattern = /^sha256:[0-9a-f]{64}$/;

/**
 * Whether v is a claimcheck reference object.
 * @param {unknown} v
 * @returns {v is Ref}
 */
export function isRef(v) {
  return !!v && typeof v === 'object' && /** @type {any} */ (v).type === REF_TYPE && typeof (/** @type {any} */ (v).id) === 'string';
}

/**
 * The claim id and namespace of a ref object, its JSON, or a bare claim
 * id; ref is set when a ref object was given.
 * @param {RefLike} ref
 * @returns {{ id: string, ns?: string, ref?: Ref }}
 */
export function refParts(ref) {
  if (typeof ref === 'string') {
    const s = ref.trim();
    if (s.startsWith('{')) ref = parseRef(s);
    else if (claimIdPattern.test(s)) return { id: s };
    else throw new InvalidArgumentError(`ref: want a reference or a claim id (cc_…), got ${JSON.stringify(s.slice(0, 40))}`);
  }
  if (!isRef(ref)) throw new InvalidArgumentError('ref: want a reference object ({"type":"claim_check_ref",…}), its JSON, or a claim id');
  if (!claimIdPattern.test(ref.id)) throw new InvalidArgumentError(`ref: claim id ${JSON.stringify(ref.id)} is malformed`);
  return { id: ref.id, ns: ref.ns, ref };
}

/**
 * Parses a reference from its JSON, checking what a client relies on.
 * @param {string} json
 * @returns {Ref}
 */
export function parseRef(json) {
  let r;
  try {
    r = JSON.parse(json);
  } catch (e) {
    throw new InvalidArgumentError(`ref: not JSON: ${/** @type {Error} */ (e).message}`);
  }
  if (!r || r.type !== REF_TYPE) throw new InvalidArgumentError(`ref: type is ${JSON.stringify(r?.type)}, want "${REF_TYPE}"`);
  if (r.v !== 1) throw new InvalidArgumentError(`ref: unsupported version ${r.v} (this client reads version 1)`);
  if (!claimIdPattern.test(r.id ?? '')) throw new InvalidArgumentError(`ref: claim id ${JSON.stringify(r.id)} is malformed`);
  if (!digestPattern.test(r.digest ?? '')) throw new InvalidArgumentError(`ref: digest ${JSON.stringify(r.digest)} is not sha256:<64 lowercase hex>`);
  if (!Number.isSafeInteger(r.size) || r.size < 0) throw new InvalidArgumentError(`ref: size ${r.size} is not a byte count`);
  return r;
}
