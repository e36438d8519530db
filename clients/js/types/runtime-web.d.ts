/** @import { Runtime } from './runtime.js' */
/** @type {Runtime} */
export const web: Runtime;
import type { Runtime } from './runtime.js';
