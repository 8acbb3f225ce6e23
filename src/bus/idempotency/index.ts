/**
 * Idempotent consumers (bus spec S4): drop redeliveries by `source`+`id` within a bounded window,
 * with a pluggable store (memory, PostgreSQL) and a transactional PostgreSQL variant.
 */
export type { FinalOutcome, IdempotencyKey, IdempotencyStore } from './port.js';
export { MAX_WINDOW_MS, assertWindowMs } from './port.js';
export { createMemoryIdempotencyStore } from './memory.js';
export type { MemoryIdempotencyStore, MemoryIdempotencyStoreOptions } from './memory.js';
export { idempotent, deliveryKey } from './handler.js';
export type { IdempotentHandler, IdempotentOptions, IdempotentStats } from './handler.js';
export { DEFAULT_IDEMPOTENCY_TABLE, assertTableName, createPgIdempotencyStore, ensureIdempotencyTable, idempotentPg } from './pg/index.js';
export type { IdempotentPgOptions, PgIdempotencyStore, PgIdempotencyStoreOptions, TransactionalHandler } from './pg/index.js';
