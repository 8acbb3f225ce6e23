/**
 * `idempotentPg(pool, handler, options)`: the handler's PostgreSQL side effect and the record
 * "this event is done" commit in ONE transaction, so the effect happens exactly once per
 * `source`+`id` within the window, whatever crashes or redeliveries happen around it.
 */
import type { Pool, PoolClient } from 'pg';
import type { Envelope } from '../../../envelope/types.js';
import type { DeliveryContext, Outcome } from '../../subscriber/index.js';
import { duplicate } from '../../subscriber/index.js';
import type { IdempotentOptions, IdempotentStats, IdempotentHandler } from '../handler.js';
import { deliveryKey, isHandled } from '../handler.js';
import { assertWindowMs } from '../port.js';
import { DEFAULT_IDEMPOTENCY_TABLE, assertTableName, ensureIdempotencyTable, insertSql, rowParams, storeError } from './table.js';

/**
 * A handler that writes through `client`, inside the transaction that also records the event.
 * `E`: the event the subscription hands over (`EventOf<K>` for generated kinds).
 */
export type TransactionalHandler<E extends Envelope = Envelope> = (event: E, ctx: DeliveryContext, client: PoolClient) => Promise<Outcome | void>;

export interface IdempotentPgOptions extends Omit<IdempotentOptions, 'onMarkError'> {
  /** Idempotency table (strict identifier rule); default `ceg_idempotency`. Created when missing. */
  readonly table?: string;
}

/** The statement that claims a key inside the transaction: inserts it, or takes over an expired row. */
function claimSql(table: string): string {
  return `${insertSql(table)}
    ON CONFLICT (key_sha256) DO UPDATE SET outcome = EXCLUDED.outcome, done_at = EXCLUDED.done_at, expires_at = EXCLUDED.expires_at
    WHERE t.expires_at <= now()
    RETURNING 1 AS claimed`;
}

/**
 * Wraps a transactional handler. Per delivery: BEGIN; claim the event's key (INSERT … ON CONFLICT
 * DO UPDATE only over an expired row); if a live row exists the event is a duplicate: ROLLBACK,
 * count a skip, acknowledge. Otherwise run the handler with the transaction's client: handled
 * (nothing or `ack`) → COMMIT, so the effect and the record land together; `retry`,
 * `deadLetter` or a throw → ROLLBACK (no effect, no record) and the result/error is passed on
 * unchanged. A second delivery racing the first blocks on the key's row until the first commits
 * (then it skips) or rolls back (then it runs): the effect happens once.
 *
 * A crash after COMMIT but before the offset commit redelivers the record; it is then skipped
 * (bus spec T6). A COMMIT whose outcome is unknown (connection lost) is safe the same way.
 * The handler must not COMMIT or ROLLBACK the client itself.
 *
 * Errors: CEG_INVALID_OPTIONS (retriable: false) at wrap time for a bad windowMs or table name.
 * A failing BEGIN/claim/COMMIT rejects with a store error (GatewayError CEG_STORE_UNAVAILABLE,
 * retriable when the database was unreachable), so the runner retries the delivery.
 * Spec: bus spec S4 (idempotent consumers by source+id), S3 (at-least-once), T6.
 */
export function idempotentPg<E extends Envelope = Envelope>(
  pool: Pool,
  handler: TransactionalHandler<E>,
  options: IdempotentPgOptions,
): IdempotentHandler<(event: E, ctx: DeliveryContext) => Promise<Outcome | void>> {
  assertWindowMs(options.windowMs);
  const table = options.table ?? DEFAULT_IDEMPOTENCY_TABLE;
  assertTableName(table);
  const claim = claimSql(table);
  const stats = { handled: 0, skipped: 0, markFailed: 0 };

  const wrapped = async (event: E, ctx: DeliveryContext): Promise<Outcome | void> => {
    const key = deliveryKey(event, ctx, options.scope);
    let client: PoolClient;
    try {
      await ensureIdempotencyTable(pool, table);
      client = await pool.connect();
    } catch (err) {
      throw storeError(err, table, 'connecting');
    }
    let broken = false;
    const store = async <T>(what: string, step: () => Promise<T>): Promise<T> => {
      try {
        return await step();
      } catch (err) {
        broken = true;
        throw storeError(err, table, what);
      }
    };
    let open = false;
    try {
      await store('BEGIN', () => client.query('BEGIN'));
      open = true;
      const claimed = await store('claiming the event', () => client.query(claim, rowParams(key, 'handled', options.windowMs)));
      if (claimed.rowCount !== 1) {
        open = false;
        await store('ROLLBACK', () => client.query('ROLLBACK'));
        stats.skipped++;
        options.onSkip?.(event, ctx);
        return duplicate;
      }
      const out = await handler(event, ctx, client);
      if (!isHandled(out)) {
        open = false;
        await store('ROLLBACK', () => client.query('ROLLBACK'));
        return out;
      }
      open = false;
      await store('COMMIT', () => client.query('COMMIT'));
      stats.handled++;
      return out;
    } catch (err) {
      if (open) {
        // The handler threw (or its SQL failed): nothing of this delivery may stay.
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
      }
      throw err;
    } finally {
      client.release(broken ? true : undefined);
    }
  };
  return Object.assign(wrapped, { stats: (): IdempotentStats => ({ ...stats }) });
}
