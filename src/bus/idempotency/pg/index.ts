export { createPgIdempotencyStore } from './store.js';
export type { PgIdempotencyStore, PgIdempotencyStoreOptions } from './store.js';
export { idempotentPg } from './transactional.js';
export type { IdempotentPgOptions, TransactionalHandler } from './transactional.js';
export { DEFAULT_IDEMPOTENCY_TABLE, assertTableName, ensureIdempotencyTable } from './table.js';
