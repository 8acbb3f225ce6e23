/**
 * The outbox table's name and the SQL that touches it. The name is configurable, so it is checked
 * against a strict identifier rule before it is ever spliced into SQL (and quoted as well).
 * Pure: no I/O.
 */
import { GatewayError } from '../../core/errors.js';

/** The default table name (in the connection's `search_path`). */
export const DEFAULT_OUTBOX_TABLE = 'ce_outbox';

/** A schema name: lowercase letter or `_`, then lowercase letters, digits, `_`; ≤ 63 bytes (PostgreSQL NAMEDATALEN − 1). */
const SCHEMA_PART = /^[a-z_][a-z0-9_]{0,62}$/;
/** A table name: as a schema name but ≤ 48 bytes, so `<table>_unsent_idx` style index names stay ≤ 63. */
const TABLE_PART = /^[a-z_][a-z0-9_]{0,47}$/;

/** A checked outbox table name and everything derived from it. */
export interface OutboxTable {
  /** As given: `table` or `schema.table`. Also the LISTEN/NOTIFY channel. */
  readonly name: string;
  readonly schema: string | undefined;
  readonly table: string;
  /** Quoted, ready for SQL: `"schema"."table"` or `"table"`. */
  readonly sql: string;
  /** LISTEN/NOTIFY channel (≤ 63 bytes): the name as given. */
  readonly channel: string;
}

const quote = (ident: string): string => `"${ident}"`;

/**
 * Checks and parses an outbox table name: `table` or `schema.table`, each part matching
 * `[a-z_][a-z0-9_]*` (table ≤ 48, schema ≤ 63 characters), the whole ≤ 63 characters (it is the
 * LISTEN/NOTIFY channel too). Nothing else is accepted: no quotes, no uppercase, no spaces.
 * Errors: CEG_INVALID_NAME (retriable: false) with `details.field = 'table'`.
 * Spec: bus spec P3 (outbox in the producer's database); DESIGN "Kafka mapping" (strict charset
 *   for names from configuration).
 */
export function outboxTable(name: string = DEFAULT_OUTBOX_TABLE): OutboxTable {
  const parts = typeof name === 'string' ? name.split('.') : [];
  const [a, b] = parts;
  const ok =
    typeof name === 'string' &&
    name.length <= 63 &&
    ((parts.length === 1 && TABLE_PART.test(a!)) || (parts.length === 2 && SCHEMA_PART.test(a!) && TABLE_PART.test(b!)));
  if (!ok) {
    throw new GatewayError('CEG_INVALID_NAME', `illegal outbox table name ${JSON.stringify(name)}: use table or schema.table of [a-z0-9_], each starting with a letter or _, the table at most 48 characters, the whole at most 63`, {
      retriable: false,
      details: { field: 'table', table: String(name) },
    });
  }
  const schema = parts.length === 2 ? a : undefined;
  const table = parts.length === 2 ? b! : a!;
  return Object.freeze({
    name,
    schema,
    table,
    sql: schema === undefined ? quote(table) : `${quote(schema)}.${quote(table)}`,
    channel: name,
  });
}

/** Index name in the table's schema (CREATE INDEX names it in the table's schema). */
const indexName = (t: OutboxTable, suffix: string): string => quote(`${t.table}_${suffix}`);

/**
 * DDL of the outbox, idempotent (`IF NOT EXISTS`). One row = one Kafka record to produce.
 * - `id`: ordering within a partition key (commit order is what the relay observes, see docs/outbox.md).
 * - `topic`, `record_key` (Kafka key bytes), `header_names`/`header_values` (ordered `ce_` headers
 *   and `content-type`), `value` (Confluent-framed Avro), `timestamp_ms` (record timestamp, epoch ms:
 *   the event `time`): the record exactly as the codec built it.
 * - `partition_key`: the ordering group (the `partitionkey` attribute; '' when there is none).
 * - `event_id`/`event_source`/`event_type`: CloudEvents `id`/`source`/`type`, for operators and dedup.
 * - `attempts`, `last_error`: failed publish attempts of the row; `sent_at`, `sent_partition`,
 *   `sent_offset`: set only after the broker acknowledged the record.
 * Checks: as many header values as names, and no NULL among them (a table created before a check
 * was added keeps its old checks: `IF NOT EXISTS` alters nothing; the relay checks every row
 * anyway, see recordOfRow).
 */
export function outboxDdl(t: OutboxTable): readonly string[] {
  return [
    ...(t.schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS ${quote(t.schema)}`]),
    `CREATE TABLE IF NOT EXISTS ${t.sql} (
      id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      topic          text        NOT NULL,
      partition_key  text        NOT NULL,
      record_key     bytea,
      header_names   text[]      NOT NULL,
      header_values  bytea[]     NOT NULL,
      value          bytea,
      timestamp_ms   bigint,
      event_id       text        NOT NULL,
      event_source   text        NOT NULL,
      event_type     text        NOT NULL,
      created_at     timestamptz NOT NULL DEFAULT now(),
      attempts       integer     NOT NULL DEFAULT 0,
      last_error     text,
      sent_at        timestamptz,
      sent_partition integer,
      sent_offset    bigint,
      CHECK (cardinality(header_names) = cardinality(header_values)),
      CHECK (array_position(header_names, NULL::text) IS NULL AND array_position(header_values, NULL::bytea) IS NULL)
    )`,
    `CREATE INDEX IF NOT EXISTS ${indexName(t, 'unsent_idx')} ON ${t.sql} (id) WHERE sent_at IS NULL`,
    `CREATE INDEX IF NOT EXISTS ${indexName(t, 'key_unsent_idx')} ON ${t.sql} (partition_key, id) WHERE sent_at IS NULL`,
    `CREATE INDEX IF NOT EXISTS ${indexName(t, 'sent_at_idx')} ON ${t.sql} (sent_at) WHERE sent_at IS NOT NULL`,
  ];
}

/** One row insert plus the NOTIFY (fires at commit only). Params: $1 topic … $10 event_type, $11 channel. */
export function insertSql(t: OutboxTable): string {
  return `WITH ins AS (
    INSERT INTO ${t.sql} (topic, partition_key, record_key, header_names, header_values, value, timestamp_ms, event_id, event_source, event_type)
    VALUES ($1, $2, $3, $4::text[], $5::bytea[], $6, $7, $8, $9, $10)
    RETURNING id
  ) SELECT ins.id::text AS id, pg_notify($11, '') FROM ins`;
}

/**
 * The condition "the row `o` is not of a held (topic, partition key) pair": the pairs are two text
 * arrays side by side, topics `$<topics>`, keys `$<keys>` (Kafka keeps order per topic and key only,
 * so a key held on one topic still goes on the others; keyless rows have key '', held per topic
 * like any key). An anti-join (NOT EXISTS), not `(topic, partition_key) <> ALL (…)`: a NULL in the
 * arrays makes `<> ALL` NULL for every row (nothing at all would be relayed), while here it matches
 * no row. Plain `=` on both columns (NOT NULL in the table, so IS NOT DISTINCT FROM would be the
 * same) leaves the planner free to hash the pairs when there are many; the rows still come from the
 * unsent indexes (checked with EXPLAIN: index scan in id order, nested-loop anti-join on the pairs).
 */
function notHeld(topics: number, keys: number): string {
  return `NOT EXISTS (SELECT 1 FROM unnest($${topics}::text[], $${keys}::text[]) AS held(t, k) WHERE held.t = o.topic AND held.k = o.partition_key)`;
}

/**
 * Picks up to $2 partition keys whose oldest visible unsent row is among the $1 oldest unsent rows
 * that are not held back ((topic, partition key) pairs the relay holds: topics $4, keys $5, side
 * by side, see notHeld), oldest first, taking a transaction-scoped
 * advisory lock per key (namespace: the table, $3) and skipping keys another relay holds. The
 * volatile lock call stays outside the ordered subquery, and the LIMIT stops after $2 locked keys,
 * so no further keys are locked.
 */
export function lockKeysSql(t: OutboxTable): string {
  return `SELECT h.partition_key FROM (
      SELECT s.partition_key, min(s.id) AS first_id
      FROM (SELECT o.partition_key, o.id FROM ${t.sql} AS o WHERE o.sent_at IS NULL AND ${notHeld(4, 5)} ORDER BY o.id LIMIT $1) s
      GROUP BY s.partition_key
      ORDER BY first_id
      OFFSET 0
    ) h
    WHERE pg_try_advisory_xact_lock(hashtext($3), hashtext(h.partition_key))
    LIMIT $2`;
}

/**
 * The unsent rows of the locked keys ($1), oldest first, at most $2 rows and about $5 bytes, but none
 * of a held (topic, key) pair (topics $3, keys $4, side by side, see notHeld): for every topic and
 * key a prefix of its unsent rows in id order. Runs in a statement after the locks were taken, so
 * its snapshot sees every commit of the relay that held a key before. FOR UPDATE (not SKIP LOCKED:
 * skipping a row would publish its successors first).
 * Bytes: the rows are cut where the running sum of their sizes (value, record key and header
 * arrays, as stored: `octet_length` of a bytea reads its TOAST header, not the value) reaches $5;
 * the first row always goes, however large. The cut is a prefix of the rows in id order, so for
 * every key again a prefix of its unsent rows. Without it a cycle read batchSize whole rows at
 * once (10,000 rows of 100 KB: 1 GB in the relay's memory).
 */
export function claimRowsSql(t: OutboxTable): string {
  const size = 'coalesce(octet_length(o.value), 0) + coalesce(octet_length(o.record_key), 0) + pg_column_size(o.header_names) + pg_column_size(o.header_values)';
  // Qualified columns: a bare `ORDER BY id` would sort by the output column `id`, which is text.
  // FOR UPDATE does not go with a window function in the same query level: the cut is a subquery.
  return `SELECT o.id::text AS id, o.topic, o.partition_key, o.record_key, o.header_names, o.header_values, o.value, o.timestamp_ms::text AS timestamp_ms, o.event_id
    FROM ${t.sql} AS o
    WHERE o.sent_at IS NULL AND o.id IN (
      SELECT w.id FROM (
        SELECT c.id, sum(c.bytes) OVER (ORDER BY c.id) - c.bytes AS before
        FROM (
          SELECT o.id, ${size} AS bytes
          FROM ${t.sql} AS o
          WHERE o.sent_at IS NULL AND o.partition_key = ANY($1::text[]) AND ${notHeld(3, 4)}
          ORDER BY o.id
          LIMIT $2
        ) c
      ) w
      WHERE w.before < $5::bigint
    )
    ORDER BY o.id
    FOR UPDATE`;
}

/** Marks rows sent with where they landed. Params: $1 ids, $2 partitions, $3 offsets. */
export function markSentSql(t: OutboxTable): string {
  return `UPDATE ${t.sql} AS o SET sent_at = now(), attempts = o.attempts + 1, last_error = NULL, sent_partition = u.p, sent_offset = u.o
    FROM unnest($1::bigint[], $2::integer[], $3::bigint[]) AS u(id, p, o)
    WHERE o.id = u.id`;
}

/** Deletes acknowledged rows instead of marking them (keepSentMs = 0). Params: $1 ids. */
export function deleteSentSql(t: OutboxTable): string {
  return `DELETE FROM ${t.sql} WHERE id = ANY($1::bigint[])`;
}

/**
 * Counts a failed attempt on rows still unsent. Params: $1 ids, $2 error text. A failed topic
 * look-up writes it outside the cycle's transaction and key locks, after the rows may have been
 * published by another relay: a sent row keeps its `attempts` and its `last_error` of NULL.
 */
export function markFailedSql(t: OutboxTable): string {
  return `UPDATE ${t.sql} SET attempts = attempts + 1, last_error = $2 WHERE id = ANY($1::bigint[]) AND sent_at IS NULL`;
}

/** Deletes up to $2 rows sent more than $1 ms ago. */
export function purgeSql(t: OutboxTable): string {
  return `DELETE FROM ${t.sql} WHERE id IN (
    SELECT id FROM ${t.sql} WHERE sent_at IS NOT NULL AND sent_at < now() - ($1::bigint * interval '1 millisecond') LIMIT $2
  )`;
}
