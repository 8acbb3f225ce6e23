export { runHandling, currentHandling } from './context.js';
export type { HandlingContext } from './context.js';
