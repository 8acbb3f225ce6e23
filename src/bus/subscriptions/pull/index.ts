/**
 * Pull delivery (issue 9): long-poll and SSE reads of a pull subscription from signed cursors or
 * its committed positions, and cursor commits — stateless across gateway instances.
 */
export { MAX_CURSOR_CHARS, cursorSigner, deriveCursorKey } from './cursor.js';
export type { CursorOwner, CursorSigner } from './cursor.js';
export { POLL_INTERVAL_MS } from './batch.js';
export { MAX_PULL_BYTES, MAX_PULL_EVENTS, MAX_PULL_WAIT_MS, PULL_BROKER_GRACE_MS, PullService } from './service.js';
export type { PullAnswer, PullOptions, PullServiceDeps, PullSession, PullStats } from './service.js';
