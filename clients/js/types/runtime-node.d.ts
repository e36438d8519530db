export function nodeFetch(url: string | URL, init: RequestInit & {
    duplex?: "half";
}): Promise<Response>;
/** @type {Runtime} */
export const node: Runtime;
import type { Runtime } from './runtime.js';
