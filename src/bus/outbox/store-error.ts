/**
 * How a failure of the outbox's own database is said, by the relay and by `ce-gateway outbox stuck`
 * alike (one classification: until 2026-12-07 the CLI called a missing table not retriable while
 * the relay retried it, and let any other pg error through with its own code).
 * Spec: PostgreSQL "Appendix A. PostgreSQL Error Codes"; docs/outbox.md, docs/errors.md.
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { OutboxTable } from './table.js';

/**
 * SQLSTATEs that say the outbox itself is missing from the database that answered: 42P01
 * undefined_table, 3F000 invalid_schema_name (`outbox migrate` was not run, or OUTBOX_TABLE names
 * another table). A later attempt may find it (once it is created): retriable.
 */
const MISSING_TABLE = new Set(['42P01', '3F000']);

/**
 * SQLSTATEs of a statement that a later attempt may not meet again: serialization failure and
 * deadlock (40001, 40P01), a lock not available (55P03, the relay's lock_timeout), an object in use (55006).
 */
const TRANSIENT = new Set(['40001', '40P01', '55P03', '55006']);

/** The SQLSTATE of a database error (five characters), or undefined for a failure without the server's answer (a socket error, a timeout). Pure. */
export function sqlstateOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  // A Node errno of five capitals (EPIPE) is no SQLSTATE: no class begins with E and a letter.
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^E[A-Z]/.test(code) ? code : undefined;
}

/** Whether a database error says the outbox table or its schema does not exist (42P01, 3F000). Pure. */
export function outboxTableMissing(err: unknown): boolean {
  const code = sqlstateOf(err);
  return code !== undefined && MISSING_TABLE.has(code);
}

/**
 * Whether a database error means the database could not be reached or used at all: no answer (a
 * connection error, a timeout: no SQLSTATE; also a CEG_* error such as {@link outboxStoreError}'s
 * or the relay's own), or SQLSTATE classes 08 connection exception, 53 insufficient resources, 57
 * operator intervention — rather than an answer to a statement (e.g. 55P03, a row lock held). Pure.
 */
export function databaseUnreachable(err: unknown): boolean {
  const code = sqlstateOf(err);
  return code === undefined || /^(08|53|57)/.test(code);
}

/**
 * SQLSTATEs with which the database refuses the relay itself rather than one of its statements:
 * class 28 invalid authorization (28P01 a wrong password, 28000 no pg_hba entry: after a credential
 * rotation), 3D000 the database does not exist, 42501 no privilege on the outbox table. Every
 * cycle and every scrape fails alike until an operator acts.
 */
const RELAY_REFUSED = /^(28|3D000$|42501$)/;

/**
 * Whether the relay cannot use its outbox database at all ({@link databaseUnreachable}, or the
 * database refusing the relay itself: a login refused, the database missing, no privilege on the
 * table), as its `databaseUp`, `/healthz` and `ce_gateway_outbox_database_up` say: until
 * 2026-12-07 a wrong password left `/healthz` at `database: "up"`, `degraded: false` while
 * nothing was published (break report hE). A statement-level answer (a row lock held, 55P03; a
 * serialization failure) is not: the next cycle may pass. Pure.
 */
export function databaseUnusable(err: unknown): boolean {
  if (databaseUnreachable(err)) return true;
  const code = sqlstateOf(err);
  return code !== undefined && RELAY_REFUSED.test(code);
}

/**
 * The one error for a failure of the outbox's statements or connection: a GatewayError as it
 * came; anything else CEG_STORE_UNAVAILABLE, with `details.table` and, when the server answered,
 * `details.sqlstate` (else `details.errno`: ECONNREFUSED…), the original as `cause`:
 * - the table or its schema missing (42P01, 3F000): retriable (it may be created later), naming
 *   the table, OUTBOX_TABLE and `ce-gateway outbox migrate`;
 * - the database not reached or not usable ({@link databaseUnreachable}; also 58 system error),
 *   a serialization failure, a deadlock or a lock not available: retriable;
 * - any other answer (a login refused, 28…; no permission, 42501; a table of another layout,
 *   42703): not retriable, a later attempt gets the same answer.
 * `t`: the outbox table. Pure.
 */
export function outboxStoreError(err: unknown, t: OutboxTable): GatewayError {
  if (err instanceof GatewayError) return err;
  const sqlstate = sqlstateOf(err);
  if (outboxTableMissing(err)) {
    return new GatewayError('CEG_STORE_UNAVAILABLE', `outbox table ${t.name} does not exist in the outbox database (SQLSTATE ${sqlstate}: ${errorMessage(err)}): check OUTBOX_TABLE, or create it with \`ce-gateway outbox migrate\` (same OUTBOX_DATABASE_URL and OUTBOX_TABLE) or ensureOutboxSchema(); retriable once it exists`, {
      retriable: true,
      cause: err,
      details: { table: t.name, sqlstate },
    });
  }
  const retriable = databaseUnreachable(err) || (sqlstate !== undefined && (sqlstate.startsWith('58') || TRANSIENT.has(sqlstate)));
  const errno = (err as { code?: unknown } | null | undefined)?.code;
  const where = sqlstate !== undefined ? { sqlstate } : typeof errno === 'string' ? { errno } : {};
  const said = sqlstate !== undefined ? `SQLSTATE ${sqlstate}` : typeof errno === 'string' ? errno : undefined;
  return new GatewayError('CEG_STORE_UNAVAILABLE', `outbox database (table ${t.name}): ${errorMessage(err)}${said === undefined ? '' : ` (${said})`}`, {
    retriable,
    cause: err,
    details: { table: t.name, ...where },
  });
}
