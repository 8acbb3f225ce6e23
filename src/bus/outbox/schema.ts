/**
 * The outbox migration: creates the outbox table and its indexes in the producer's own database,
 * idempotently and safely when several processes start at once.
 */
import type pg from 'pg';
import { outboxDdl, outboxTable } from './table.js';
import type { OutboxTable } from './table.js';

export interface EnsureOutboxSchemaOptions {
  /** `table` or `schema.table` (see {@link outboxTable}); default `ce_outbox`. A given schema is created when missing. */
  readonly table?: string;
}

/**
 * Creates the outbox table and its indexes when missing (`IF NOT EXISTS`); existing ones are left
 * as they are. Runs its own transaction (pass a client that is not inside one); concurrent callers
 * are serialised by a transaction advisory lock on the table name, so two processes starting
 * together do not race on the system catalog.
 * Returns the checked table.
 * Errors: CEG_INVALID_NAME (retriable: false) for an illegal table name, before any SQL runs;
 *   `pg` errors as thrown by the driver (missing privileges, connection lost), after a ROLLBACK.
 * Spec: bus spec P3 (the outbox lives in the producer's database); DESIGN "Delivery".
 */
export async function ensureOutboxSchema(client: pg.ClientBase, opts: EnsureOutboxSchemaOptions = {}): Promise<OutboxTable> {
  const t = outboxTable(opts.table);
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1), 0)', [t.name]);
    for (const sql of outboxDdl(t)) await client.query(sql);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  return t;
}
