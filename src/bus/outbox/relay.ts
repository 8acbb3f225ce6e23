/**
 * The outbox relay: publishes committed outbox rows through the transport, in id order per
 * partition key, and marks them sent only after the broker acknowledged them (bus spec P3).
 *
 * One cycle is one short database transaction:
 *  1. lock keys — among the oldest unsent rows, take a transaction-scoped advisory lock per
 *     partition key (`pg_try_advisory_xact_lock`), skipping keys another relay holds: a key is
 *     relayed by one relay at a time;
 *  2. claim rows — in a new statement (a snapshot taken after the locks, so it sees every commit of
 *     the key's previous holder), the unsent rows of those keys, oldest first, `FOR UPDATE`;
 *  3. produce them, one call per topic (records of a key keep their order in the call);
 *  4. mark the acknowledged rows sent (or delete them), count a failed attempt on the others;
 *     COMMIT releases the locks.
 * Nothing reads "rows after the last id sent": every cycle looks at all rows still unsent, so a
 * transaction that commits a smaller id after a larger one was published is picked up by the
 * next cycle (DESIGN "Known traps"). A crash between 3 and 4 leaves the rows unsent: they are
 * published again (duplicates, at most one batch; consumers dedup by source+id). Rows are never
 * marked before the broker acknowledged them.
 * Wakes on LISTEN/NOTIFY (the writer notifies in its transaction, so only on commit) and polls.
 */
import pg from 'pg';
import { GatewayError, errorMessage, isGatewayError } from '../../core/errors.js';
import { linkedSignal } from '../../core/abort-fanout.js';
import { raceAbort } from '../../core/race-abort.js';
import { retryPolicy } from '../../core/retry.js';
import { retrying } from '../../core/retrying.js';
import type { RetryPolicy } from '../../core/retry.js';
import type { Logger } from '../../observability/index.js';
import { silentLogger } from '../../observability/index.js';
import type { OutboundRecord, Position, Transport } from '../../transport/port.js';
// A missing topic as the transports say it (`details.topicMissing`), not any CEG_INVALID_NAME: a
// row's topic name the topic-name rule refuses is reported as the invalid name it is.
import { topicMissing } from '../../transport/topics.js';
import { BATCH_HEADER_BYTES, recordBatchBytes } from '../publisher/record-size.js';
import { recordOfRow } from './rows.js';
import type { ClaimedRow } from './rows.js';
import { databaseUnusable, outboxStoreError, outboxTableMissing } from './store-error.js';
import { claimRowsSql, deleteSentSql, lockKeysSql, markFailedSql, markSentSql, outboxTable, purgeSql } from './table.js';
import type { OutboxTable } from './table.js';
import { neverRejects } from '../../core/never-rejects.js';

/** Options of {@link startOutboxRelay}. Units: ms, rows. */
export interface OutboxRelayOptions {
  /** The producer's database, as a pool the caller owns (not ended by the relay)… */
  readonly pool?: pg.Pool;
  /** …or a connection string (the relay owns a small pool of its own). Exactly one of the two. */
  readonly connectionString?: string;
  /** Where records go (Kafka for real use; resolves only after acks=all). */
  readonly transport: Transport;
  /** `table` or `schema.table`, as given to the writer (it is the NOTIFY channel). Default `ce_outbox`. */
  readonly table?: string;
  /** Rows per cycle at most (also the bound on duplicates after a crash). Default 100. */
  readonly batchSize?: number;
  /**
   * Bytes per cycle, about (the rows' values, keys and headers as stored): a cycle claims rows in
   * id order until their sizes add up to this, at most `batchSize` of them, and at least one row
   * however large. It bounds the relay's memory: a cycle holds its rows while it produces them.
   * Default 16 MiB ({@link DEFAULT_OUTBOX_BATCH_BYTES}).
   */
  readonly maxBatchBytes?: number;
  /** Poll interval when no notification arrives, ms. Default 1000. */
  readonly pollIntervalMs?: number;
  /**
   * Backoff (only `delayMs` is used: the relay never gives up on a row) of a partition key whose
   * row could not be produced (the key is held back, the other keys go on), and of the whole relay
   * after a cycle in which nothing could be produced or the database failed. Default 200 ms ×2 up to 10 s, 20 % jitter.
   */
  readonly retry?: RetryPolicy;
  /**
   * Longest wait for one produce call, ms, then the attempt counts as failed (indeterminate); also
   * for one read of a topic's max.message.bytes. Default 30000. It also bounds a cycle: its produce
   * phase ends after 2 × publishTimeoutMs (rows not produced by then count as failed and are
   * retried), and its transaction sets `idle_in_transaction_session_timeout` to 3 ×
   * publishTimeoutMs + 1000 ms (at most 2^31−1), so the server ends the transaction of a relay that
   * froze mid-cycle (SIGSTOP, a network partition) and releases its keys to the other relays.
   */
  readonly publishTimeoutMs?: number;
  /** Sent rows are kept this long, ms, then purged; 0 = delete rows at acknowledgement; −1 = keep forever. Default 86400000 (1 day). */
  readonly keepSentMs?: number;
  /**
   * How long stop() lets a cycle in flight finish, ms; then it aborts the cycle's produce and closes
   * its database connection (the transaction rolls back: its rows stay unsent). Default 10000.
   */
  readonly stopGraceMs?: number;
  /**
   * Longest wait of a cycle for a row lock another session holds (an operator's `SELECT … FOR
   * UPDATE`, an UPDATE on the outbox), ms (`SET LOCAL lock_timeout`); then the cycle fails (counted
   * in `dbErrors`) and is retried after backoff. Default 5000.
   */
  readonly lockTimeoutMs?: number;
  /**
   * Longest wait for the database on any one step, ms: a pooled connection (pg's
   * `connectionTimeoutMillis`, also while every connection is in use), one statement of a cycle,
   * of the LISTEN connection, of a purge and of {@link OutboxRelay.backlog} (pg's client-side
   * `query_timeout`, which also holds when the server does not answer at all — a hung or
   * SIGSTOPped PostgreSQL, a network partition — and, on a pool the relay creates and in each cycle's
   * transaction, PostgreSQL's `statement_timeout`, which cancels a slow statement on the server).
   * A step that runs out fails like an outage: counted in `dbErrors`, `databaseUp` false, the
   * connection discarded, retried after backoff. Keep it above `lockTimeoutMs`. Default 10000.
   * Spec: node-postgres "Client" / "Pool" options; PostgreSQL "Client Connection Defaults".
   */
  readonly queryTimeoutMs?: number;
  /** LISTEN for the writer's NOTIFY (else poll only). Default true. */
  readonly listen?: boolean;
  readonly log?: Logger;
  /** Name in logs. Default `outbox-relay`. */
  readonly name?: string;
  /**
   * The only topics a row may name (e.g. the catalog's kinds' topics). A row naming any other
   * topic — the gateway's definitions topic, a dead-letter topic, another system's — is never
   * produced: its key is held and retried with backoff like a missing topic's, the row's
   * `attempts`/`last_error` say why (CEG_FORBIDDEN), until an operator fixes or deletes it. Why: the
   * relay publishes with its own Kafka credentials whatever topic a row names, so anyone who can
   * insert into the table could otherwise write to topics the writer (which takes the topic from
   * the catalog) never names. Default: every topic (Debezium's outbox router likewise; restrict
   * the relay's principal with Kafka ACLs). docs/outbox.md "Failures".
   */
  readonly topics?: readonly string[];
}

/** Counters of the relay (bus spec P2: every failure is counted). */
export interface OutboxRelayStats {
  /** Rows acknowledged by the broker and marked sent (or deleted). */
  readonly published: number;
  /** Produce calls that failed (each covers one topic's rows of a cycle). */
  readonly failedAttempts: number;
  /** Rows in those failed calls (they stay in the outbox; their keys are held back and retried after backoff). */
  readonly failedRows: number;
  /** Cycles, LISTEN connections, purges and idle pooled connections (the pool's 'error') that failed on the database. */
  readonly dbErrors: number;
  readonly cycles: number;
  /** Failed cycles in a row (0 after a clean cycle): cycles on which the database failed or nothing could be produced. */
  readonly consecutiveFailures: number;
  /**
   * Times a row was found larger than its topic's `max.message.bytes` even alone (the topic's
   * limit is lower than the catalog's, or it was lowered after the row was written), counted at
   * every attempt (a row held back and met again counts again): it is not produced and its key is
   * held back on that topic (see `heldKeys`). Before a row is judged too large the topic's limit
   * is read again from the broker, at most once per backoff of the topic, so a limit an operator
   * raised (kafka-configs, admin alterConfigs) releases the row at its next attempt, without a
   * restart. Logged as an error once per row and relay (later attempts at debug level).
   */
  readonly tooLargeRows: number;
  /**
   * Times a row was found that cannot be made a Kafka record at all (a NULL element in
   * `header_names` / `header_values`, arrays of different lengths, a bad `timestamp_ms`: see
   * `recordOfRow`), counted at every attempt: it is not produced, gets an attempt and a
   * `CEG_INVALID_EVENT` `last_error` naming the problem, and its key is held back on its topic
   * (see `heldKeys`) until an operator fixes or deletes the row. Logged as an error once per row
   * and relay (later attempts at debug level).
   */
  readonly invalidRows: number;
  /**
   * (topic, partition key) pairs held back now (their oldest unsent row could not be produced, or
   * is too large); retried after backoff. The same key on another topic is not held.
   */
  readonly heldKeys: number;
  /** Sent rows purged after `keepSentMs`. */
  readonly purged: number;
  /** A LISTEN connection is up. */
  readonly listening: boolean;
  /**
   * The last cycle or backlog() read reached the database (true before the first): false while
   * the outbox database is unreachable or refuses the relay (a login refused, the database or the
   * table missing, no privilege on it: store-error.ts databaseUnusable), true again after the
   * next one that succeeds.
   */
  readonly databaseUp: boolean;
  /**
   * How long publishing has been failing or stuck, ms: since the start of the oldest produce call
   * that has not been followed by a successful one (a call still in flight counts from its start,
   * so a broker that does not answer at all shows here at once, not only after publishTimeoutMs);
   * 0 once a produce call succeeds, or when there is nothing to publish and no key is held back.
   * A topic whose look-up fails (a missing topic) does not count: other topics may go on.
   */
  readonly publishStalledMs: number;
  readonly lastError: { readonly message: string; readonly code: string | undefined; readonly atMs: number } | undefined;
}

/** A running relay. */
export interface OutboxRelay {
  readonly table: OutboxTable;
  stats(): OutboxRelayStats;
  /**
   * The rows still to publish, read from the table now (issue 15 `ce_gateway_outbox_backlog_rows`,
   * `ce_gateway_outbox_oldest_row_age_seconds`): their count and the age of the oldest, seconds
   * (0 when none). Settles within about 2 × `queryTimeoutMs` (a connection, then the statement),
   * also when the database hangs, so a scrape that reads it always answers.
   * Errors: the database's (pg errors), as they come; CEG_STORE_UNAVAILABLE (retriable) when no
   * connection came within `queryTimeoutMs`; pg's "Query read timeout" when the statement did not answer.
   */
  backlog(): Promise<{ readonly rows: number; readonly oldestAgeSeconds: number }>;
  /** Runs a cycle soon (as a NOTIFY would). */
  wake(): void;
  /** Stops polling and listening, lets the cycle in flight finish (≤ stopGraceMs, then abandons it: its transaction rolls back), closes its own connections. Idempotent. */
  stop(): Promise<void>;
}

interface Resolved {
  readonly transport: Transport;
  readonly table: OutboxTable;
  readonly batchSize: number;
  readonly maxBatchBytes: number;
  readonly pollIntervalMs: number;
  readonly retry: RetryPolicy;
  readonly publishTimeoutMs: number;
  readonly keepSentMs: number;
  readonly stopGraceMs: number;
  readonly lockTimeoutMs: number;
  readonly queryTimeoutMs: number;
  readonly listen: boolean;
  readonly log: Logger;
  readonly name: string;
  readonly topics: ReadonlySet<string> | undefined;
}

/** How long stop() waits for its connections to close, ms (a hung server never answers the goodbye). */
const CLOSE_WAIT_MS = 500;

const defaultRetry = retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 200, factor: 2, maxDelayMs: 10_000, jitter: 0.2 });

/**
 * The largest `batchSize` a relay takes, rows per cycle (its claim scans 4 × that many rows). The
 * `outbox relay` command checks `OUTBOX_BATCH_SIZE` against it before it connects to anything.
 */
export const MAX_OUTBOX_BATCH_SIZE = 10_000;

/**
 * The default bytes a relay cycle claims at most (`maxBatchBytes`), 16 MiB: with `batchSize` 10000
 * and rows of 100 KB a cycle read 1 GB into the relay's memory at once (of 1 MB: 10 GB, beyond any
 * heap). 16 MiB is still many produce calls' worth (a topic's `max.message.bytes` defaults to 1 MB).
 */
export const DEFAULT_OUTBOX_BATCH_BYTES = 16 * 1024 * 1024;

/**
 * Validates the options once (every problem at once).
 * Errors: CEG_INVALID_OPTIONS (retriable: false); CEG_INVALID_NAME (retriable: false) for the table.
 */
export function resolveOutboxRelayOptions(o: OutboxRelayOptions): Resolved & { readonly pool?: pg.Pool; readonly connectionString?: string } {
  const int = (v: unknown, min: number): boolean => typeof v === 'number' && Number.isInteger(v) && v >= min;
  const r = {
    batchSize: o.batchSize ?? 100,
    maxBatchBytes: o.maxBatchBytes ?? DEFAULT_OUTBOX_BATCH_BYTES,
    pollIntervalMs: o.pollIntervalMs ?? 1000,
    publishTimeoutMs: o.publishTimeoutMs ?? 30_000,
    keepSentMs: o.keepSentMs ?? 86_400_000,
    stopGraceMs: o.stopGraceMs ?? 10_000,
    lockTimeoutMs: o.lockTimeoutMs ?? 5000,
    queryTimeoutMs: o.queryTimeoutMs ?? 10_000,
  };
  const problems = [
    (o.pool === undefined) === (o.connectionString === undefined) && 'pool or connectionString: exactly one',
    o.connectionString !== undefined && (typeof o.connectionString !== 'string' || o.connectionString.length === 0) && 'connectionString: non-empty string',
    (typeof o.transport !== 'object' || o.transport === null || typeof o.transport.produce !== 'function') && 'transport: a Transport',
    !(int(r.batchSize, 1) && r.batchSize <= MAX_OUTBOX_BATCH_SIZE) && `batchSize: integer 1–${MAX_OUTBOX_BATCH_SIZE}`,
    !(int(r.maxBatchBytes, 1) && r.maxBatchBytes <= Number.MAX_SAFE_INTEGER) && 'maxBatchBytes: integer bytes ≥ 1',
    !int(r.pollIntervalMs, 10) && 'pollIntervalMs: integer ms ≥ 10',
    !int(r.publishTimeoutMs, 1) && 'publishTimeoutMs: integer ms ≥ 1',
    !int(r.keepSentMs, -1) && 'keepSentMs: integer ms ≥ −1',
    !int(r.stopGraceMs, 0) && 'stopGraceMs: integer ms ≥ 0',
    !(int(r.lockTimeoutMs, 1) && r.lockTimeoutMs <= 2_147_483_647) && 'lockTimeoutMs: integer ms ≥ 1',
    !(int(r.queryTimeoutMs, 1) && r.queryTimeoutMs <= 2_147_483_647) && 'queryTimeoutMs: integer ms 1–2147483647',
    o.retry !== undefined && typeof o.retry.delayMs !== 'function' && 'retry: a RetryPolicy',
    o.topics !== undefined && !(Array.isArray(o.topics) && o.topics.every((t) => typeof t === 'string' && t.length > 0)) && 'topics: an array of topic names',
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length > 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `outbox relay options: ${problems.join('; ')}`, { retriable: false, details: { problems } });
  }
  return Object.freeze({
    ...r,
    ...(o.pool === undefined ? {} : { pool: o.pool }),
    ...(o.connectionString === undefined ? {} : { connectionString: o.connectionString }),
    transport: o.transport,
    table: outboxTable(o.table),
    retry: o.retry ?? defaultRetry,
    listen: o.listen ?? true,
    log: o.log ?? silentLogger(),
    name: o.name ?? 'outbox-relay',
    topics: o.topics === undefined ? undefined : new Set(o.topics),
  });
}

/**
 * Starts a relay on the outbox table of the producer's database. Resolves once the first LISTEN
 * attempt is done (when it fails, the relay polls and keeps trying to listen) and the first cycle
 * is scheduled. Several relays may run on one table: a partition key is relayed by one of them at
 * a time, in id order.
 * Errors: CEG_INVALID_OPTIONS / CEG_INVALID_NAME (retriable: false) for bad options. Database and
 *   broker failures never reject: they are logged, counted in stats() and retried with backoff.
 * Spec: bus spec P3 (publish from the outbox), P2 (failures counted, retried with backoff), S3;
 *   DESIGN "Delivery", "Known traps" (no "id > last sent"; mark only after the acknowledgement).
 */
export async function startOutboxRelay(opts: OutboxRelayOptions): Promise<OutboxRelay> {
  const o = resolveOutboxRelayOptions(opts);
  const relay = new Relay(o, o.pool, o.connectionString);
  await relay.start();
  return relay;
}

type CycleResult = { readonly claimed: number; readonly failed: boolean };
type Failed = { readonly rows: readonly ClaimedRow[]; readonly error: unknown };
/** What a cycle's produce phase did with its rows. */
type Published = { sent: { row: ClaimedRow; position: Position }[]; failed: Failed[]; tooLarge: Failed[]; invalid: Failed[] };

/** How long a cycle's produce phase may take, ms: 2 × publishTimeoutMs. */
function publishPhaseMs(publishTimeoutMs: number): number {
  return 2 * publishTimeoutMs;
}

/**
 * The relay transaction's `idle_in_transaction_session_timeout`, ms: the produce phase plus one
 * more publishTimeoutMs and a second of margin (3 × publishTimeoutMs + 1000), at most 2^31−1 (the
 * setting's maximum). Spec: PostgreSQL "Client Connection Defaults".
 */
function idleInTransactionMs(publishTimeoutMs: number): number {
  return Math.min(2_147_483_647, publishPhaseMs(publishTimeoutMs) + publishTimeoutMs + 1000);
}

/**
 * Whether a cycle's failure came as the server's answer to a statement (a SQLSTATE): the
 * connection is then still usable for a ROLLBACK. Otherwise (a timeout without answer, a closed
 * socket) a ROLLBACK would only wait on the same dead connection: it is discarded instead, and
 * the server rolls the transaction back when the connection goes.
 */
function serverAnswered(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^08/.test(code);
}

/**
 * The error to report for a failure of the outbox's statements: a missing table or schema as
 * {@link outboxStoreError} says it (CEG_STORE_UNAVAILABLE, retriable, naming the table and
 * `ce-gateway outbox migrate`: what `outbox stuck` says too); anything else as it is (its SQLSTATE
 * is what the relay's lastError and log lines show, e.g. 55P03 for a lock wait given up).
 */
function explained(err: unknown, t: OutboxTable): unknown {
  return outboxTableMissing(err) ? outboxStoreError(err, t) : err;
}

/** A statement with pg's client-side `query_timeout` (ms; supported by pg's Client, not in its QueryConfig type). */
type TimedQuery = pg.QueryConfig & { readonly query_timeout: number };

/** Resolves when `p` settles or after `ms`, whichever comes first; never rejects. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * A topic's look-up of its `max.message.bytes` off the cycle path: in flight, or when it may run
 * again (Date.now() ms) after `times` failures in a row; the rows that waited for it (by id).
 */
interface TopicLookup {
  inflight: boolean;
  notBeforeMs: number;
  times: number;
  readonly rows: Map<string, ClaimedRow>;
}

/**
 * What the relay reports for a topic the broker does not have: CEG_UNKNOWN_TOPIC, retriable (its
 * rows wait and are retried with backoff until the topic is created or the rows are deleted), with
 * `details.topic` and `details.topicMissing: true`; the transport's error is the cause. The
 * transports say CEG_INVALID_NAME (not retriable), right for a request that names the topic, wrong
 * for the relay's rows, which were checked when written (the walkthrough found the relay's log,
 * `lastError` and `/healthz` saying "invalid name").
 */
function missingTopic(topic: string, cause: unknown): GatewayError {
  return new GatewayError('CEG_UNKNOWN_TOPIC', `topic ${topic} does not exist (Kafka UNKNOWN_TOPIC_OR_PARTITION; topics are never auto-created): the rows wait, retried with backoff until the topic is created (\`ce-gateway serve\` creates the catalog's topics) or the rows are deleted — ${errorMessage(cause)}`, { retriable: true, cause, details: { topic, topicMissing: true } });
}

/** The held-back map's key of a (topic, partition key) pair (a topic name holds no newline). */
function heldKey(topic: string, key: string): string {
  return `${topic}\n${key}`;
}

class Relay implements OutboxRelay {
  readonly table: OutboxTable;
  readonly #o: Resolved;
  readonly #pool: pg.Pool;
  readonly #ownsPool: boolean;
  readonly #listenConfig: pg.ClientConfig;
  readonly #sql: { readonly lockKeys: string; readonly claim: string; readonly markSent: string; readonly deleteSent: string; readonly markFailed: string; readonly purge: string };
  readonly #stopping = new AbortController();
  #loop: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;
  #pending = true;
  #wake: (() => void) | undefined;
  #inflight: AbortController | undefined;
  /** The connection of the cycle in flight (closed by stop() after stopGraceMs). */
  #cycleClient: pg.PoolClient | undefined;
  /** stopGraceMs has passed: a cycle still starting (waiting for a connection) gives up. */
  readonly #abandon = new AbortController();
  #listener: pg.Client | undefined;
  #relistenTimer: NodeJS.Timeout | undefined;
  #listenFailures = 0;
  #lastPurgeMs = 0;
  #stats = { published: 0, failedAttempts: 0, failedRows: 0, dbErrors: 0, cycles: 0, consecutiveFailures: 0, tooLargeRows: 0, invalidRows: 0, purged: 0 };
  /**
   * Topic → its `max.message.bytes`, bytes, as last read from the broker: read the first time the
   * topic has rows, and again when a row is found too large for it or the broker refused a call as
   * too large (see #recheckLimit).
   */
  readonly #maxBytes = new Map<string, number>();
  /**
   * Topic → when (Date.now() ms) its limit may be read again (#recheckLimit) and how many re-reads
   * in a row found it unchanged (the retry policy's attempt number of the next backoff).
   */
  readonly #limitRecheck = new Map<string, { notBeforeMs: number; times: number }>();
  /** Topic → its look-up while its `max.message.bytes` is not known (#deferTopic, #lookUp). */
  readonly #lookups = new Map<string, TopicLookup>();
  /**
   * (topic, partition key) (see `heldKey`) → when (Date.now() ms) it may be relayed again and how
   * often it was held in a row. Kafka keeps order per topic and partition key only, so a key is held
   * on the topic where its row failed: the same key on another topic, and keyless rows (key '') of
   * other topics, go on.
   */
  readonly #held = new Map<string, { topic: string; key: string; untilMs: number; times: number }>();
  /** Ids of rows logged as too large or invalid (once per row; the oldest forgotten past 10,000). */
  readonly #loggedRows = new Set<string>();
  #lastError: OutboxRelayStats['lastError'];
  /** See OutboxRelayStats.databaseUp. */
  #databaseUp = true;
  /** See OutboxRelayStats.publishStalledMs: Date.now() ms of the start of the oldest produce call not followed by a success. */
  #stallSinceMs: number | undefined;
  /** A database failure was logged and no cycle has worked since (#dbFailure logs once per incident). */
  #dbIncident = false;
  /**
   * On the pool, whether the relay owns it or not: a pool emits 'error' when an idle client's
   * connection dies (pg_terminate_backend, a restart), and an EventEmitter without a listener
   * throws that error, which ends the process. The next checkout reconnects.
   */
  readonly #onPoolError = (err: Error): void => this.#dbFailure(err, 'outbox relay: idle database connection lost');

  constructor(o: Resolved, pool: pg.Pool | undefined, connectionString: string | undefined) {
    this.#o = o;
    this.table = o.table;
    if (pool !== undefined) {
      this.#pool = pool;
      this.#ownsPool = false;
      this.#listenConfig = pool.options;
    } else {
      // pg's own bounds (ms): waiting for a connection, a statement without answer (client side),
      // a slow statement (server side). Without them a hung server holds every call for ever.
      const q = o.queryTimeoutMs;
      this.#pool = new pg.Pool({ connectionString, max: 2, connectionTimeoutMillis: q, query_timeout: q, statement_timeout: q });
      this.#ownsPool = true;
      this.#listenConfig = { connectionString };
    }
    // The LISTEN connection is a Client of its own: the same bounds on connecting and on LISTEN.
    this.#listenConfig = { ...this.#listenConfig, connectionTimeoutMillis: o.queryTimeoutMs, query_timeout: o.queryTimeoutMs };
    this.#pool.on('error', this.#onPoolError);
    const t = o.table;
    this.#sql = { lockKeys: lockKeysSql(t), claim: claimRowsSql(t), markSent: markSentSql(t), deleteSent: deleteSentSql(t), markFailed: markFailedSql(t), purge: purgeSql(t) };
  }

  async start(): Promise<void> {
    await this.#connectListener();
    this.#loop = this.#run().catch((err: unknown) => this.#o.log.error({ relay: this.#o.name, err: errorMessage(err) }, 'outbox relay loop failed'));
  }

  stats(): OutboxRelayStats {
    return { ...this.#stats, heldKeys: this.#heldPairs().keys.length, listening: this.#listener !== undefined, databaseUp: this.#databaseUp, publishStalledMs: this.#stallSinceMs === undefined ? 0 : Math.max(0, Date.now() - this.#stallSinceMs), lastError: this.#lastError };
  }

  async backlog(): Promise<{ readonly rows: number; readonly oldestAgeSeconds: number }> {
    // Uses the partial index on unsent rows; cheap at scrape intervals. Bounded (#poolQuery): a
    // scrape must answer while the database hangs (then without a backlog sample).
    let r: pg.QueryResult<{ n: string; age: string | null }>;
    try {
      r = await this.#poolQuery<{ n: string; age: string | null }>(`SELECT count(*)::bigint AS n, EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS age FROM ${this.table.sql} WHERE sent_at IS NULL`, []);
    } catch (err) {
      const e = explained(err, this.table);
      if (databaseUnusable(e)) this.#databaseUp = false;
      throw e;
    }
    this.#databaseUp = true;
    const row = r.rows[0];
    return { rows: Number(row?.n ?? 0), oldestAgeSeconds: Math.max(0, Number(row?.age ?? 0)) };
  }

  wake(): void {
    this.#pending = true;
    this.#wake?.();
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#shutdown();
    return this.#stopped;
  }

  async #shutdown(): Promise<void> {
    this.#stopping.abort(new GatewayError('CEG_CLOSED', 'outbox relay stopping', { retriable: true }));
    this.#wake?.();
    clearTimeout(this.#relistenTimer);
    const grace = setTimeout(() => {
      this.#abandon.abort(new GatewayError('CEG_CLOSED', 'outbox relay stopped', { retriable: true }));
      this.#inflight?.abort(new GatewayError('CEG_CLOSED', 'outbox relay stopped', { retriable: true }));
      // A cycle still waiting on the database (e.g. a row lock) is abandoned: closing its connection
      // fails the query at once and the server rolls the transaction back (rows stay unsent).
      this.#cycleClient?.end().catch(() => undefined);
    }, this.#o.stopGraceMs);
    await this.#loop;
    clearTimeout(grace);
    const listener = this.#listener;
    this.#listener = undefined;
    // pg's end() waits for the server to close an idle connection, which a hung server never
    // does: stop() waits at most CLOSE_WAIT_MS for it (the socket goes with the process anyway).
    await settledWithin(Promise.all([listener?.end(), this.#ownsPool ? this.#pool.end() : undefined]), CLOSE_WAIT_MS);
    this.#pool.off('error', this.#onPoolError);
  }

  // ── the loop ─────────────────────────────────────────────────────────────

  async #run(): Promise<void> {
    const stop = this.#stopping.signal;
    while (!stop.aborted) {
      let claimed: number;
      try {
        // The relay never gives up on a row: failed cycles are retried until one is clean or stop().
        claimed = await retrying(() => this.#cleanCycle(), {
          policy: this.#o.retry,
          maxAttempts: Infinity,
          signal: stop,
          classify: () => true,
          onRetry: () => {
            this.#stats.consecutiveFailures++;
          },
        });
      } catch {
        return; // stop() ended the backoff
      }
      this.#stats.consecutiveFailures = 0;
      await this.#purgeIfDue();
      if (claimed > 0 || this.#pending) continue;
      await this.#idle(this.#o.pollIntervalMs);
    }
  }

  /**
   * One cycle that counts as clean: resolves with the rows claimed; rejects when the database
   * failed or a produce failed (already logged and counted), so the cycle is retried after backoff.
   */
  async #cleanCycle(): Promise<number> {
    this.#pending = false;
    let result: CycleResult;
    try {
      result = await this.#cycle();
    } catch (raw) {
      const err = explained(raw, this.table);
      // Not a stop() abandoning the cycle: the database failed it.
      if (!this.#abandon.signal.aborted && databaseUnusable(err)) this.#databaseUp = false;
      this.#dbFailure(err, 'outbox relay cycle failed on the database');
      throw err;
    }
    this.#databaseUp = true;
    this.#dbRecovered();
    if (result.failed) throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'outbox publish failed; rows stay in the outbox', { retriable: true });
    return result.claimed;
  }

  /** Resolves on wake(), a NOTIFY, stop() or after `ms`. */
  #idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
      if (this.#pending || this.#stopping.signal.aborted) done();
    });
  }

  async #cycle(): Promise<CycleResult> {
    this.#stats.cycles++;
    const client = await this.#connect();
    this.#cycleClient = client;
    // A checked-out client whose connection dies emits 'error' (between queries: during produce).
    // One incident with the cycle's failed query that follows: logged once (#dbFailure).
    const onError = (err: Error): void => this.#dbFailure(err, 'outbox relay: database connection lost');
    client.on('error', onError);
    let broken: Error | undefined;
    try {
      // One round trip; the lock timeout ends with the transaction.
      // The idle timeout bounds how long a frozen relay holds its keys' locks (the produce phase,
      // when the transaction is idle, ends after 2 × publishTimeoutMs on a live relay).
      // statement_timeout: the server cancels a statement that runs too long (57014); query_timeout
      // (#q) also ends the wait when the server does not answer at all.
      await this.#q(client, `BEGIN; SET LOCAL lock_timeout = ${this.#o.lockTimeoutMs}; SET LOCAL statement_timeout = ${this.#o.queryTimeoutMs}; SET LOCAL idle_in_transaction_session_timeout = ${idleInTransactionMs(this.#o.publishTimeoutMs)}`);
      const scan = this.#o.batchSize * 4;
      const held = this.#heldPairs();
      const keys = (await this.#q<{ partition_key: string }>(client, this.#sql.lockKeys, [scan, this.#o.batchSize, this.table.name, held.topics, held.keys])).rows.map((r) => r.partition_key);
      const rows = keys.length === 0 ? [] : (await this.#q<ClaimedRow>(client, this.#sql.claim, [keys, this.#o.batchSize, held.topics, held.keys, this.#o.maxBatchBytes])).rows;
      if (rows.length === 0) {
        // Nothing to publish and nothing held back: publishing is not stalled, only idle.
        if (held.keys.length === 0) this.#stallSinceMs = undefined;
        await this.#q(client, 'COMMIT');
        return { claimed: 0, failed: false };
      }
      const { sent, failed, tooLarge, invalid } = await this.#publish(rows);
      if (sent.length > 0) {
        if (this.#o.keepSentMs === 0) {
          await this.#q(client, this.#sql.deleteSent, [sent.map((s) => s.row.id)]);
        } else {
          await this.#q(client, this.#sql.markSent, [sent.map((s) => s.row.id), sent.map((s) => s.position.partition), sent.map((s) => s.position.offset.toString())]);
        }
      }
      for (const f of [...failed, ...tooLarge, ...invalid]) await this.#q(client, this.#sql.markFailed, [f.rows.map((r) => r.id), errorMessage(f.error).slice(0, 2000)]);
      await this.#q(client, 'COMMIT');
      this.#stats.published += sent.length;
      // A key that went out is no longer held, unless a later row of it failed in this same cycle
      // (its hold was just set and must stay).
      const heldNow = new Set([...failed, ...tooLarge, ...invalid].flatMap((f) => f.rows.map((r) => heldKey(r.topic, r.partition_key))));
      for (const s of sent) {
        const k = heldKey(s.row.topic, s.row.partition_key);
        if (!heldNow.has(k)) this.#held.delete(k);
      }
      // Failed keys are held back on their own (#produceFailed); the whole relay backs off only when
      // nothing went out (the broker is likely down), so one bad key or topic does not slow the rest.
      return { claimed: rows.length, failed: failed.length > 0 && sent.length === 0 };
    } catch (err) {
      broken = err instanceof Error ? err : new Error(String(err));
      if (serverAnswered(err)) await this.#q(client, 'ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      this.#cycleClient = undefined;
      client.off('error', onError);
      // A client that failed is destroyed rather than returned to the pool in an unknown state.
      client.release(broken);
    }
  }

  /**
   * A connection of the pool for one cycle, or CEG_CLOSED once stop()'s grace has passed — also
   * while waiting for one: a caller's pool whose connections are all in use would otherwise hold
   * stop() until one is free. A connection that arrives after that goes back to the pool.
   */
  #connect(): Promise<pg.PoolClient> {
    // Bounded here too (not only by the pool's connectionTimeoutMillis): a caller's pool may have none.
    const timeout = AbortSignal.timeout(this.#o.queryTimeoutMs);
    // Released after the wait: #abandon lives as long as the relay (core/abort-fanout linkedSignal).
    const linked = linkedSignal([this.#abandon.signal, timeout]);
    return raceAbort(this.#pool.connect(), linked.signal, () =>
      timeout.aborted && !this.#abandon.signal.aborted
        ? new GatewayError('CEG_STORE_UNAVAILABLE', `outbox relay: no database connection within ${this.#o.queryTimeoutMs} ms (queryTimeoutMs)`, { retriable: true })
        : new GatewayError('CEG_CLOSED', 'outbox relay stopped', { retriable: true }), (late) => late.release()).finally(() => linked.release());
  }

  /** One statement on a cycle's client, bounded by queryTimeoutMs (pg's query_timeout: also without any answer). */
  #q<R extends pg.QueryResultRow = pg.QueryResultRow>(client: pg.PoolClient, text: string, values?: readonly unknown[]): Promise<pg.QueryResult<R>> {
    const config: TimedQuery = { text, ...(values === undefined ? {} : { values: [...values] }), query_timeout: this.#o.queryTimeoutMs };
    return client.query<R>(config);
  }

  /**
   * One statement on a connection of its own from the pool, both bounded (#connect, #q); a
   * connection that failed is discarded (release(err)), not returned to the pool in an unknown state.
   */
  async #poolQuery<R extends pg.QueryResultRow>(text: string, values: readonly unknown[]): Promise<pg.QueryResult<R>> {
    const client = await this.#connect();
    let broken: Error | undefined;
    try {
      return await this.#q<R>(client, text, values);
    } catch (err) {
      broken = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.release(serverAnswered(broken) ? undefined : broken);
    }
  }


  /**
   * Produces the claimed rows, the topics at once; a topic's rows in produce calls that each fit its
   * `max.message.bytes` (cached; read again as #recheckLimit says), one call after the other. A key
   * whose call failed has no later row produced in the cycle (per-key order); a row too large even
   * alone (after the limit was read again, when due), or that cannot be made a record at all
   * (`invalid`, see recordOfRow), is not produced and its key is held back.
   * Never throws.
   */
  async #publish(rows: readonly ClaimedRow[]): Promise<Published> {
    const byTopic = new Map<string, ClaimedRow[]>();
    for (const row of rows) {
      const list = byTopic.get(row.topic);
      if (list) list.push(row);
      else byTopic.set(row.topic, [row]);
    }
    const ac = new AbortController();
    this.#inflight = ac;
    // The transaction is idle meanwhile: the phase ends well before the server's idle timeout.
    const phaseMs = publishPhaseMs(this.#o.publishTimeoutMs);
    const deadline = setTimeout(() => ac.abort(new GatewayError('CEG_DELIVERY_TIMEOUT', `outbox relay: a cycle's produce phase took longer than ${phaseMs} ms (2 × publishTimeoutMs); its rows not yet acknowledged are retried`, { retriable: true })), phaseMs);
    const out: Published = { sent: [], failed: [], tooLarge: [], invalid: [] };
    try {
      await Promise.all([...byTopic].map(([topic, group]) => this.#publishTopic(topic, group, ac.signal, out)));
      return out;
    } finally {
      clearTimeout(deadline);
      this.#inflight = undefined;
    }
  }

  /** One topic's rows, in produce calls cut by bytes, in id order. Never throws. */
  async #publishTopic(topic: string, group: readonly ClaimedRow[], signal: AbortSignal, out: Published): Promise<void> {
    const known = this.#maxBytes.get(topic);
    if (known === undefined) {
      // Not known yet: looked up off this cycle (a missing topic's look-up takes the client's
      // retries, hundreds of ms): only this topic's keys wait for it, no other row does.
      this.#deferTopic(topic, group);
      return;
    }
    let max = known;
    const stopped = new Set<string>();
    let chunk: { row: ClaimedRow; record: OutboundRecord }[] = [];
    let bytes = BATCH_HEADER_BYTES;
    const flush = async (): Promise<void> => {
      if (chunk.length === 0) return;
      const calls = chunk;
      chunk = [];
      bytes = BATCH_HEADER_BYTES;
      try {
        const positions = await this.#produceOnce(topic, calls.map((c) => c.record), signal);
        calls.forEach((c, i) => out.sent.push({ row: c.row, position: positions[i]! }));
      } catch (error) {
        for (const c of calls) stopped.add(c.row.partition_key);
        this.#produceFailed(topic, calls.map((c) => c.row), error, out.failed);
        // The topic is gone (deleted since its limit was read): its next rows wait for a look-up
        // off the cycle path again (#deferTopic), not for a produce call's metadata retries.
        if (topicMissing(error)) this.#maxBytes.delete(topic);
        // The broker took less than the cached limit (lowered since it was read): read it again so
        // the next calls, and the next attempt of these rows, are cut by the topic's limit of now.
        if (isGatewayError(error) && error.code === 'CEG_PAYLOAD_TOO_LARGE') max = await this.#recheckLimit(topic, max, signal);
      }
    };
    for (const row of group) {
      if (stopped.has(row.partition_key)) continue; // an earlier row of the key failed or is held: stays unsent, untouched
      let record: OutboundRecord;
      let size: number;
      try {
        record = recordOfRow(row);
        size = recordBatchBytes(record);
      } catch (error) {
        // A row that can never be produced as it is: only its key waits, the rest goes on.
        stopped.add(row.partition_key);
        this.#invalid(topic, row, error, out.invalid);
        continue;
      }
      // Too large for the cached limit: read the limit again first (an operator may have raised it).
      if (BATCH_HEADER_BYTES + size > max) max = await this.#recheckLimit(topic, max, signal);
      if (BATCH_HEADER_BYTES + size > max) {
        stopped.add(row.partition_key);
        this.#tooLarge(topic, row, BATCH_HEADER_BYTES + size, max, out.tooLarge);
        continue;
      }
      if (chunk.length > 0 && bytes + size > max) await flush();
      chunk.push({ row, record });
      bytes += size;
    }
    await flush();
  }

  /** One produce call, bounded by publishTimeoutMs and by stop(). */
  async #produceOnce(topic: string, records: readonly OutboundRecord[], stop: AbortSignal): Promise<readonly Position[]> {
    const ac = new AbortController();
    const onStop = (): void => ac.abort(stop.reason);
    stop.addEventListener('abort', onStop, { once: true });
    if (stop.aborted) onStop();
    const timer = setTimeout(() => ac.abort(new GatewayError('CEG_DELIVERY_TIMEOUT', `outbox publish took longer than ${this.#o.publishTimeoutMs} ms`, { retriable: true })), this.#o.publishTimeoutMs);
    this.#stallSinceMs ??= Date.now();
    try {
      const positions = await this.#o.transport.produce(topic, records, { signal: ac.signal });
      this.#stallSinceMs = undefined;
      return positions;
    } finally {
      clearTimeout(timer);
      stop.removeEventListener('abort', onStop);
    }
  }

  /**
   * The topic's `max.message.bytes` from the broker, bytes, waited for at most publishTimeoutMs and
   * not after `stop` aborts (stop()'s grace passed): an admin call to a broker that does not answer
   * would otherwise hold the cycle, its claimed rows and stop() for the client's own timeouts
   * (minutes with kafkajs). Errors: the transport's; CEG_DELIVERY_TIMEOUT; CEG_CLOSED.
   */
  #readLimit(topic: string, stop: AbortSignal): Promise<number> {
    // Checked where a topic is first looked up: a topic never looked up is never produced to, so
    // a row naming one the relay may not publish to waits (held, backoff, last_error) like a row
    // whose topic is missing, and nothing is lost.
    if (this.#o.topics !== undefined && !this.#o.topics.has(topic)) {
      return Promise.reject(new GatewayError('CEG_FORBIDDEN', `the outbox relay publishes only to its given topics (the catalog's), and ${JSON.stringify(topic.slice(0, 249))} is not one: the row is held (fix its topic or delete it; if the writer's catalog is newer than the relay's, give the relay the same catalog)`, { retriable: false, details: { topic: topic.slice(0, 249), reason: 'topic-not-in-catalog' } }));
    }
    const timeout = AbortSignal.timeout(this.#o.publishTimeoutMs);
    const linked = linkedSignal([stop, timeout]);
    return raceAbort(this.#o.transport.maxMessageBytes(topic), linked.signal, () =>
      timeout.aborted
        ? new GatewayError('CEG_DELIVERY_TIMEOUT', `reading the max.message.bytes of topic ${topic} took longer than ${this.#o.publishTimeoutMs} ms`, { retriable: true })
        : isGatewayError(stop.reason) ? stop.reason : new GatewayError('CEG_CLOSED', 'outbox relay stopped', { retriable: true })).finally(() => linked.release());
  }

  /**
   * Rows of a topic whose `max.message.bytes` is not known yet: not produced in this cycle; their
   * keys are held on the topic until the topic's look-up (#lookUp, started here unless one is in
   * flight or the topic's backoff after a failed one has not passed) has an answer — released and
   * the relay woken when it succeeds, held for the topic's backoff when it fails. The rows that
   * start a look-up get an attempt when it fails (#lookUp); rows that only wait for one get none.
   */
  #deferTopic(topic: string, group: readonly ClaimedRow[]): void {
    const now = Date.now();
    let state = this.#lookups.get(topic);
    if (state === undefined) {
      state = { inflight: false, notBeforeMs: 0, times: 0, rows: new Map() };
      this.#lookups.set(topic, state);
    }
    if (!state.inflight && now >= state.notBeforeMs) {
      // The rows that start a look-up are the ones that try the topic: a failure is an attempt on
      // them (at most a batch, like a failed produce call); rows that only wait get none.
      state.rows.clear();
      for (const row of group) state.rows.set(row.id, row);
      state.inflight = true;
      neverRejects(this.#lookUp(topic, state)); // catches and counts its failures
    }
    const until = state.inflight ? Number.MAX_SAFE_INTEGER : state.notBeforeMs;
    for (const key of new Set(group.map((r) => r.partition_key))) {
      this.#held.set(heldKey(topic, key), { topic, key, untilMs: until, times: state.times });
    }
  }

  /**
   * Reads a topic's `max.message.bytes` off the cycle path (bounded: #readLimit). On success it is
   * cached, the topic's held keys are released and a cycle runs at once. On failure (e.g. the topic
   * does not exist) the topic backs off by the `retry` policy (growing with each failure), its keys
   * stay held until then, the failure is counted (failedAttempts, failedRows, lastError), written
   * to the rows that started it (attempts, last_error; best effort: they may be another relay's by now)
   * and logged as a warning once per topic until a look-up succeeds. Never rejects.
   */
  async #lookUp(topic: string, state: TopicLookup): Promise<void> {
    try {
      const max = await this.#readLimit(topic, this.#stopping.signal);
      this.#maxBytes.set(topic, max);
      // Counts as a read for #recheckLimit's backoff: a row too large right after it is not read again at once.
      if (!this.#limitRecheck.has(topic)) this.#limitRecheck.set(topic, { notBeforeMs: Date.now() + this.#o.retry.delayMs(1), times: 0 });
      this.#lookups.delete(topic);
      for (const [k, h] of this.#held) if (h.topic === topic && h.untilMs === Number.MAX_SAFE_INTEGER) this.#held.delete(k);
      if (state.times > 0) this.#o.log.info({ relay: this.#o.name, topic, maxMessageBytes: max }, 'outbox relay: the topic can be published to again');
      this.wake();
    } catch (err) {
      state.inflight = false;
      if (this.#stopping.signal.aborted) return;
      state.times++;
      const delay = this.#o.retry.delayMs(state.times);
      state.notBeforeMs = Date.now() + delay;
      for (const h of this.#held.values()) {
        if (h.topic === topic && h.untilMs === Number.MAX_SAFE_INTEGER) {
          h.untilMs = state.notBeforeMs;
          h.times = state.times;
        }
      }
      const rows = [...state.rows.values()];
      state.rows.clear();
      this.#stats.failedAttempts++;
      this.#stats.failedRows += rows.length;
      // Said as it is: for the relay a missing topic is a condition that an operator (or the
      // gateway's start, which creates the catalog's topics) ends, retried with backoff (missingTopic).
      const missing = topicMissing(err);
      const reason = missing ? missingTopic(topic, err) : err;
      this.#note(reason);
      const fields = { relay: this.#o.name, topic, rows: rows.length, code: isGatewayError(reason) ? reason.code : undefined, topicMissing: missing, retriedInMs: delay, failures: state.times, err: errorMessage(reason) };
      if (state.times === 1) this.#o.log.warn(fields, missing ? 'outbox relay: the topic does not exist; its keys are held back and retried with backoff until it is created, the other topics go on (logged once until it works)' : 'outbox relay cannot look up the topic: its keys are held back and retried with backoff, the other topics go on (logged once until it works)');
      else this.#o.log.debug(fields, 'outbox relay still cannot look up the topic');
      if (rows.length > 0) {
        await this.#poolQuery(this.#sql.markFailed, [rows.map((r) => r.id), errorMessage(reason).slice(0, 2000)]).catch(() => undefined);
      }
    }
  }

  /**
   * The topic's `max.message.bytes`, bytes, read from the broker again when a row was found larger
   * than `cached` (or the broker refused a call as too large) — at most once per backoff of the
   * topic (the `retry` policy's delay, growing while re-reads find it unchanged, from the first
   * delay again once it changed); until then, and when the read fails (logged, counted in
   * lastError; the limit is only an optimisation of the cut, the broker has the last word), `cached`.
   * The too-large row's key is held at least until the next re-read is allowed (#tooLarge), so its
   * next attempt reads the limit again: an operator's raised limit releases it at that attempt.
   * Never throws.
   */
  async #recheckLimit(topic: string, cached: number, stop: AbortSignal): Promise<number> {
    const now = Date.now();
    const gate = this.#limitRecheck.get(topic);
    if (gate !== undefined && now < gate.notBeforeMs) return cached;
    let fresh = cached;
    try {
      fresh = await this.#readLimit(topic, stop);
      this.#maxBytes.set(topic, fresh);
    } catch (err) {
      if (stop.aborted) return cached; // stop() abandoned the cycle: nothing to report
      this.#note(err);
      this.#o.log.warn({ relay: this.#o.name, topic, err: errorMessage(err) }, 'outbox relay could not read the topic\'s max.message.bytes again; keeps the one it has');
    }
    const times = fresh === cached ? (gate?.times ?? 0) + 1 : 1;
    this.#limitRecheck.set(topic, { notBeforeMs: now + this.#o.retry.delayMs(times), times });
    if (fresh !== cached) this.#o.log.info({ relay: this.#o.name, topic, maxMessageBytes: fresh, was: cached }, 'outbox relay: the topic\'s max.message.bytes changed');
    return fresh;
  }

  /** Counts and logs a failed produce call; its keys are held back (retried after the `retry` delay, alone). */
  #produceFailed(topic: string, rows: readonly ClaimedRow[], cause: unknown, failed: Failed[]): void {
    // A topic deleted since its limit was read: said as the look-up says it (CEG_UNKNOWN_TOPIC).
    const error = topicMissing(cause) ? missingTopic(topic, cause) : cause;
    failed.push({ rows, error });
    for (const key of new Set(rows.map((r) => r.partition_key))) this.#hold(topic, key);
    this.#stats.failedAttempts++;
    this.#stats.failedRows += rows.length;
    this.#note(error);
    this.#o.log.warn(
      { relay: this.#o.name, topic, rows: rows.length, code: isGatewayError(error) ? error.code : undefined, retriable: isGatewayError(error) ? error.retriable : undefined, err: errorMessage(error), consecutive: this.#stats.consecutiveFailures + 1 },
      'outbox publish failed; the rows stay in the outbox and are retried',
    );
  }

  /** A row its topic cannot take even alone: not produced; its key is held back (a row never jams the other keys). */
  #tooLarge(topic: string, row: ClaimedRow, bytes: number, max: number, tooLarge: Failed[]): void {
    const error = new GatewayError('CEG_PAYLOAD_TOO_LARGE', `outbox row ${row.id} (event ${row.event_id}) takes about ${bytes} bytes; topic ${topic} takes at most ${max} (max.message.bytes): its key is held back until the topic takes it or the row is deleted`, {
      retriable: false,
      details: { topic, maxMessageBytes: max, bytes, rowId: row.id },
    });
    tooLarge.push({ rows: [row], error });
    this.#stats.tooLargeRows++;
    this.#note(error);
    // Held at least until the topic's limit may be read again, so the next attempt reads it.
    const held = this.#hold(topic, row.partition_key, this.#limitRecheck.get(topic)?.notBeforeMs ?? 0);
    const fields = { relay: this.#o.name, topic, rowId: row.id, eventId: row.event_id, partitionKey: row.partition_key, bytes, maxMessageBytes: max, heldMs: held };
    this.#logRowOnce(row.id, fields, 'outbox row still larger than the topic takes: its key stays held back', 'outbox row larger than the topic takes: its key is held back on this topic (logged once per row; counted in tooLargeRows at every attempt)');
  }

  /**
   * A row that cannot be made a record (recordOfRow threw: NULL or mismatched header arrays, a bad
   * timestamp): not produced; an attempt and the reason go to the row; its key is held back.
   */
  #invalid(topic: string, row: ClaimedRow, cause: unknown, invalid: Failed[]): void {
    const error = isGatewayError(cause)
      ? cause
      : new GatewayError('CEG_INVALID_EVENT', `outbox row ${String(row.id)} (event ${String(row.event_id)}) cannot be made a Kafka record: ${errorMessage(cause)}`, { retriable: false, details: { rowId: String(row.id) } });
    invalid.push({ rows: [row], error });
    this.#stats.invalidRows++;
    this.#note(error);
    const held = this.#hold(topic, row.partition_key);
    const fields = { relay: this.#o.name, topic, rowId: row.id, eventId: row.event_id, partitionKey: row.partition_key, err: errorMessage(error), heldMs: held };
    this.#logRowOnce(row.id, fields, 'outbox row still cannot be made a record: its key stays held back', 'outbox row cannot be made a Kafka record: its key is held back on this topic until the row is fixed or deleted (logged once per row; counted in invalidRows at every attempt)');
  }

  /** Logs a row's problem as an error the first time, at debug level after that. */
  #logRowOnce(rowId: string, fields: Record<string, unknown>, again: string, first: string): void {
    if (this.#loggedRows.has(rowId)) {
      this.#o.log.debug(fields, again);
      return;
    }
    this.#loggedRows.add(rowId);
    if (this.#loggedRows.size > 10_000) this.#loggedRows.delete(this.#loggedRows.values().next().value!);
    this.#o.log.error(fields, first);
  }

  /**
   * Holds a key back on a topic for the retry policy's next delay, and at least until `notBeforeMs`
   * (Date.now() ms; 0: no floor); returns the delay, ms.
   */
  #hold(topic: string, key: string, notBeforeMs = 0): number {
    const k = heldKey(topic, key);
    const prev = this.#held.get(k);
    const times = (prev?.times ?? 0) + 1;
    const now = Date.now();
    const delay = Math.max(this.#o.retry.delayMs(times), notBeforeMs - now);
    this.#held.set(k, { topic, key, untilMs: now + delay, times });
    return delay;
  }

  /**
   * The (topic, key) pairs held back now, as two arrays side by side (the SQL's unnest); expired
   * holds are dropped, and a pair is held again if it fails again.
   */
  #heldPairs(): { topics: string[]; keys: string[] } {
    const now = Date.now();
    const out = { topics: [] as string[], keys: [] as string[] };
    for (const [k, h] of this.#held) {
      if (h.untilMs > now) {
        out.topics.push(h.topic);
        out.keys.push(h.key);
      } else if (h.untilMs < now - 600_000) this.#held.delete(k); // long quiet: its backoff starts over
    }
    return out;
  }

  async #purgeIfDue(): Promise<void> {
    const keep = this.#o.keepSentMs;
    if (keep <= 0) return;
    const every = Math.min(60_000, Math.max(1000, keep));
    if (Date.now() - this.#lastPurgeMs < every) return;
    this.#lastPurgeMs = Date.now();
    try {
      const res = await this.#poolQuery(this.#sql.purge, [keep, 10_000]);
      this.#stats.purged += res.rowCount ?? 0;
    } catch (err) {
      this.#dbFailure(err, 'outbox purge failed');
    }
  }

  // ── LISTEN ───────────────────────────────────────────────────────────────

  async #connectListener(): Promise<void> {
    if (!this.#o.listen || this.#stopping.signal.aborted) return;
    const client = new pg.Client(this.#listenConfig);
    client.on('notification', (m) => {
      if (m.channel === this.table.channel) this.wake();
    });
    client.on('error', (err) => this.#listenerLost(client, err));
    client.on('end', () => this.#listenerLost(client, undefined));
    try {
      await client.connect();
      await client.query(`LISTEN "${this.table.channel}"`);
    } catch (err) {
      await client.end().catch(() => undefined);
      this.#listenFailures++;
      this.#dbFailure(err, 'outbox relay could not LISTEN; polling meanwhile');
      this.#scheduleRelisten();
      return;
    }
    if (this.#stopping.signal.aborted) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#listener = client;
    this.#listenFailures = 0;
    this.wake(); // rows committed while nobody listened
  }

  #listenerLost(client: pg.Client, err: Error | undefined): void {
    if (this.#listener !== client) return;
    this.#listener = undefined;
    if (this.#stopping.signal.aborted) return;
    this.#listenFailures++;
    this.#dbFailure(err ?? new Error('LISTEN connection ended'), 'outbox relay lost its LISTEN connection; polling meanwhile');
    client.end().catch(() => undefined);
    this.#scheduleRelisten();
  }

  #scheduleRelisten(): void {
    if (this.#stopping.signal.aborted) return;
    clearTimeout(this.#relistenTimer);
    this.#relistenTimer = setTimeout(() => neverRejects(this.#connectListener()), this.#o.retry.delayMs(this.#listenFailures));
    this.#relistenTimer.unref();
  }

  // ── counting ─────────────────────────────────────────────────────────────

  #note(err: unknown): void {
    this.#lastError = { message: errorMessage(err), code: isGatewayError(err) ? err.code : (err as { code?: string } | undefined)?.code, atMs: Date.now() };
  }

  /**
   * Counts a database failure; logs it as a warning once per incident (the first failure after the
   * database last worked), later ones at debug level: an outage retried every few seconds must not
   * flood the log, and must not be silent either.
   */
  #dbFailure(err: unknown, msg: string): void {
    this.#stats.dbErrors++;
    this.#note(err);
    const fields = { relay: this.#o.name, err: errorMessage(err), code: (err as { code?: unknown } | null | undefined)?.code, dbErrors: this.#stats.dbErrors };
    if (this.#dbIncident) {
      this.#o.log.debug(fields, msg);
      return;
    }
    this.#dbIncident = true;
    this.#o.log.warn(fields, `${msg} (logged once until the database works again; counted in dbErrors)`);
  }

  /** A cycle worked on the database: ends the incident (logged once). */
  #dbRecovered(): void {
    if (!this.#dbIncident) return;
    this.#dbIncident = false;
    this.#o.log.info({ relay: this.#o.name, dbErrors: this.#stats.dbErrors }, 'outbox relay: the database works again');
  }
}
