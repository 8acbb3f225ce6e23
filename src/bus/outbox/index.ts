/**
 * The transactional outbox on PostgreSQL (bus spec P3): the event row is written in the
 * producer's own transaction, in the producer's own database; a relay publishes the rows through
 * the transport in order per partition key and marks them sent after the broker acknowledged them.
 * See docs/outbox.md.
 */
export { ensureOutboxSchema } from './schema.js';
export type { EnsureOutboxSchemaOptions } from './schema.js';
export { OutboxWriter, writeOutboxEvent } from './write.js';
export type { OutboxReceipt, OutboxWriteOptions, OutboxWriterOptions } from './write.js';
export { DEFAULT_OUTBOX_BATCH_BYTES, MAX_OUTBOX_BATCH_SIZE, resolveOutboxRelayOptions, startOutboxRelay } from './relay.js';
export type { OutboxRelay, OutboxRelayOptions, OutboxRelayStats } from './relay.js';
export { outboxStoreError } from './store-error.js';
export { DEFAULT_OUTBOX_TABLE, outboxTable } from './table.js';
export type { OutboxTable } from './table.js';
