/**
 * The PostgreSQL idempotency table: name rule, idempotent creation, key hashing, error mapping.
 *
 * Layout (one row per finished event and consumer scope):
 *   key_sha256 bytea PRIMARY KEY      -- sha256 of JSON [scope, source, id]: any length of source/id fits the index
 *   scope      text NOT NULL          -- consumer scope (default: subscription name)
 *   source     text NOT NULL          -- CloudEvents `source`
 *   id         text NOT NULL          -- CloudEvents `id`
 *   outcome    text NOT NULL          -- 'handled' | 'dead-lettered'
 *   done_at    timestamptz NOT NULL   -- when it was recorded (database clock)
 *   expires_at timestamptz NOT NULL   -- done_at + window; expired rows count as absent, purge deletes them
 *   index <table>_expires_at_idx on (expires_at)
 */
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { GatewayError } from '../../../core/errors.js';
import type { ErrorCode } from '../../../core/errors.js';
import type { IdempotencyKey } from '../port.js';
import { keyString } from '../port.js';

/** Default table name. */
export const DEFAULT_IDEMPOTENCY_TABLE = 'ceg_idempotency';

/** Lowercase letter or `_`, then lowercase letters, digits, `_`; at most 48 characters (room for index suffixes within 63). */
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/;

/** Error code of a failing store statement; `retriable` follows the SQLSTATE class. */
const STORE_ERROR_CODE: ErrorCode = 'CEG_STORE_UNAVAILABLE';

/**
 * Checks a table name against the strict identifier rule (it is interpolated into SQL, quoted).
 * Errors: CEG_INVALID_OPTIONS (retriable: false), details `{ field: 'table' }`.
 */
export function assertTableName(table: string): void {
  if (!IDENTIFIER.test(table)) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `table: "${table}" must match ${IDENTIFIER.source}`, { retriable: false, details: { field: 'table' } });
  }
}

/** The primary-key value of a key: sha256 of its collision-free string form (32 bytes). */
export function keyHash(key: IdempotencyKey): Buffer {
  return createHash('sha256').update(keyString(key)).digest();
}

/** SQLSTATE classes and codes that a later attempt may not meet again. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true; // network error (ECONNREFUSED…) or a closed connection
  return ['08', '53', '57', '58'].includes(code.slice(0, 2)) || ['40001', '40P01', '55P03', '55006'].includes(code);
}

/**
 * Maps a failure of the store's own SQL to a GatewayError: retriable when the database was
 * unreachable, overloaded, shutting down or hit a serialization conflict; not retriable otherwise
 * (permissions, a foreign table of the same name…). Details: store, table, sqlstate.
 */
export function storeError(err: unknown, table: string, what: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const sqlstate = (err as { code?: unknown } | null)?.code;
  return new GatewayError(STORE_ERROR_CODE, `idempotency store (PostgreSQL, table ${table}): ${what} failed: ${err instanceof Error ? err.message : String(err)}`, {
    retriable: isTransient(err),
    cause: err,
    details: { store: 'pg', table, ...(typeof sqlstate === 'string' ? { sqlstate } : {}) },
  });
}

/** Quoted identifier of a checked name. */
export function quoted(table: string): string {
  assertTableName(table);
  return `"${table}"`;
}

const created = new WeakMap<Pool, Map<string, Promise<void>>>();

/**
 * Creates the table and its index when missing, once per pool and name (concurrent callers share
 * one attempt; a failed attempt is forgotten so the next call tries again). Safe when several
 * processes start at once: the DDL runs under a transaction-scoped advisory lock.
 * Errors: CEG_INVALID_OPTIONS for a bad name; a store error (see {@link storeError}).
 */
export function ensureIdempotencyTable(pool: Pool, table: string): Promise<void> {
  const t = quoted(table);
  let byName = created.get(pool);
  if (byName === undefined) {
    byName = new Map();
    created.set(pool, byName);
  }
  const known = byName.get(table);
  if (known !== undefined) return known;
  const attempt = (async () => {
    let client: PoolClient | undefined;
    try {
      client = await pool.connect();
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('ce-gateway:idempotency:' || $1::text))`, [table]);
      await client.query(`CREATE TABLE IF NOT EXISTS ${t} (
        key_sha256 bytea PRIMARY KEY,
        scope text NOT NULL,
        source text NOT NULL,
        id text NOT NULL,
        outcome text NOT NULL CHECK (outcome IN ('handled', 'dead-lettered')),
        done_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      )`);
      await client.query(`CREATE INDEX IF NOT EXISTS "${table}_expires_at_idx" ON ${t} (expires_at)`);
      await client.query('COMMIT');
      client.release();
    } catch (err) {
      if (client !== undefined) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release(true);
      }
      throw storeError(err, table, 'creating the table');
    }
  })();
  byName.set(table, attempt);
  attempt.catch(() => byName.delete(table));
  return attempt;
}

/** `$n` parameters of one row write: key hash, scope, source, id, outcome, window ms. */
export function rowParams(key: IdempotencyKey, outcome: string, windowMs: number): unknown[] {
  return [keyHash(key), key.scope, key.source, key.id, outcome, windowMs];
}

/** INSERT of a done row expiring `$6` ms from the transaction's now(). */
export function insertSql(table: string): string {
  return `INSERT INTO ${quoted(table)} AS t (key_sha256, scope, source, id, outcome, done_at, expires_at)
    VALUES ($1, $2, $3, $4, $5, now(), now() + $6::double precision * interval '1 millisecond')`;
}
