/**
 * PostgreSQL idempotency store: rows expire by time (database clock), survive restarts and are
 * shared by every instance of a subscription. Layout: see table.ts.
 * Spec: bus spec S4 (pluggable store, PostgreSQL surviving restarts, bounded window).
 */
import type { Pool } from 'pg';
import { GatewayError } from '../../../core/errors.js';
import { MAX_TIMER_MS } from '../../../core/timer-limit.js';
import type { FinalOutcome, IdempotencyKey, IdempotencyStore } from '../port.js';
import { assertWindowMs } from '../port.js';
import { DEFAULT_IDEMPOTENCY_TABLE, assertTableName, ensureIdempotencyTable, insertSql, keyHash, quoted, rowParams, storeError } from './table.js';

export interface PgIdempotencyStoreOptions {
  /** The caller's pool; the store never ends it. */
  readonly pool: Pool;
  /** Table name, strict identifier rule (see assertTableName); default `ceg_idempotency`. Created when missing. */
  readonly table?: string;
  /** Deletes expired rows every this many ms; 0 = never (call purgeExpired yourself). Default 300 000. */
  readonly cleanupIntervalMs?: number;
  /** Rows deleted per statement while purging; default 10 000. */
  readonly purgeBatch?: number;
  /** A periodic cleanup that failed (it runs again at the next interval). Default: a process warning. */
  readonly onCleanupError?: (err: unknown) => void;
}

export interface PgIdempotencyStore extends IdempotencyStore {
  readonly kind: 'pg';
  readonly table: string;
  /** Creates the table when missing (also done lazily by the first call). */
  ready(): Promise<void>;
}

/**
 * Builds a PostgreSQL store on the caller's pool. Errors at build time: CEG_INVALID_OPTIONS
 * (retriable: false) for a bad table name or interval. Each call may reject with a store error:
 * GatewayError CEG_STORE_UNAVAILABLE, retriable when the database was unreachable (details: store, table, sqlstate).
 * Spec: bus spec S4.
 */
export function createPgIdempotencyStore(options: PgIdempotencyStoreOptions): PgIdempotencyStore {
  const table = options.table ?? DEFAULT_IDEMPOTENCY_TABLE;
  assertTableName(table);
  const cleanupIntervalMs = options.cleanupIntervalMs ?? 300_000;
  const purgeBatch = options.purgeBatch ?? 10_000;
  if (!(Number.isSafeInteger(cleanupIntervalMs) && cleanupIntervalMs >= 0 && cleanupIntervalMs <= MAX_TIMER_MS)) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `cleanupIntervalMs: integer milliseconds from 0 to ${MAX_TIMER_MS}`, { retriable: false, details: { field: 'cleanupIntervalMs' } });
  }
  if (!(Number.isSafeInteger(purgeBatch) && purgeBatch >= 1)) {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'purgeBatch: integer ≥ 1', { retriable: false, details: { field: 'purgeBatch' } });
  }
  const { pool } = options;
  const t = quoted(table);
  const upsert = `${insertSql(table)}
    ON CONFLICT (key_sha256) DO UPDATE SET outcome = EXCLUDED.outcome, done_at = EXCLUDED.done_at, expires_at = EXCLUDED.expires_at`;
  let closed = false;

  const ready = (): Promise<void> => ensureIdempotencyTable(pool, table);
  async function run<T>(what: string, step: () => Promise<T>): Promise<T> {
    if (closed) throw new GatewayError('CEG_CLOSED', 'idempotency store is closed', { retriable: true });
    try {
      await ready();
      return await step();
    } catch (err) {
      throw storeError(err, table, what);
    }
  }

  async function purgeExpired(): Promise<number> {
    return run('purging expired rows', async () => {
      let total = 0;
      for (;;) {
        const r = await pool.query(`DELETE FROM ${t} WHERE key_sha256 IN (SELECT key_sha256 FROM ${t} WHERE expires_at <= now() LIMIT $1)`, [purgeBatch]);
        const n = r.rowCount ?? 0;
        total += n;
        if (n < purgeBatch) return total;
      }
    });
  }

  const timer =
    cleanupIntervalMs > 0
      ? setInterval(() => {
          purgeExpired().catch((err: unknown) => {
            if (options.onCleanupError) options.onCleanupError(err);
            else process.emitWarning(`idempotency: cleanup of ${table} failed: ${err instanceof Error ? err.message : String(err)}`);
          });
        }, cleanupIntervalMs)
      : undefined;
  timer?.unref();

  return {
    kind: 'pg',
    table,
    ready,
    lookup: (key: IdempotencyKey) =>
      run('lookup', async () => {
        const r = await pool.query<{ outcome: FinalOutcome }>(`SELECT outcome FROM ${t} WHERE key_sha256 = $1 AND expires_at > now()`, [keyHash(key)]);
        return r.rows[0]?.outcome;
      }),
    markDone(key: IdempotencyKey, outcome: FinalOutcome, windowMs: number): Promise<void> {
      return new Promise<void>((resolve) => {
        assertWindowMs(windowMs); // a bad window is refused before touching the database
        resolve(
          run('recording', async () => {
            await pool.query(upsert, rowParams(key, outcome, windowMs));
          }),
        );
      });
    },
    purgeExpired,
    close(): Promise<void> {
      closed = true;
      if (timer !== undefined) clearInterval(timer);
      return Promise.resolve();
    },
  };
}
