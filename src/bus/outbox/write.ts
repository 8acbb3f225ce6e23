/**
 * The write side of the transactional outbox: one event becomes one row, written with the
 * caller's own client inside the caller's own transaction (bus spec P3).
 */
import type pg from 'pg';
import type { EventCodec } from '../../codec/event/index.js';
import type { JsonValue } from '../../envelope/types.js';
import type { DataOf, KindArg } from '../../catalog/kinds.js';
import { prepareEvent } from '../publisher/attributes.js';
import type { PublishOptions, PublisherIdentity } from '../publisher/attributes.js';
import { rowParams, rowValues } from './rows.js';
import { insertSql, outboxTable } from './table.js';
import type { OutboxTable } from './table.js';

/** What the writer needs besides the event: the codec (catalog + registry schemas), the identity, the table. */
export interface OutboxWriterOptions {
  readonly codec: EventCodec;
  /** Service + instance (→ `source`) and the public `dataschema` base, as for {@link Publisher}. */
  readonly identity: PublisherIdentity;
  /** `table` or `schema.table`; default `ce_outbox`. Must be the relay's table name as written (it is the NOTIFY channel). */
  readonly table?: string;
}

export type OutboxWriteOptions = OutboxWriterOptions & PublishOptions;

/** What was written. */
export interface OutboxReceipt {
  /** The row's id (bigint as decimal text). */
  readonly rowId: string;
  /** CloudEvents `id` (with `source`, the consumers' dedup key). */
  readonly id: string;
  readonly source: string;
  readonly correlationid: string;
  readonly topic: string;
  /** The partition key ('' when the kind has none). */
  readonly partitionkey: string;
}

/**
 * Writes events to the outbox with a fixed codec, identity and table (checked once, here).
 * Errors (constructor): CEG_INVALID_NAME (retriable: false) for an illegal table name.
 */
export class OutboxWriter {
  readonly #codec: EventCodec;
  readonly #identity: PublisherIdentity;
  readonly #table: OutboxTable;
  readonly #insert: string;

  constructor(opts: OutboxWriterOptions) {
    this.#codec = opts.codec;
    this.#identity = opts.identity;
    this.#table = outboxTable(opts.table);
    this.#insert = insertSql(this.#table);
  }

  get table(): OutboxTable {
    return this.#table;
  }

  /**
   * Builds and validates the event like {@link Publisher.publish} (same envelope: id, source, time,
   * correlation, schema version, partition key), encodes it (Confluent-framed Avro value, `ce_`
   * headers, key) and inserts one row plus `pg_notify(<table>)` with `client`. BEGIN/COMMIT are
   * the caller's: the row exists exactly when the caller's transaction commits, and the NOTIFY
   * fires only on commit. Outside a transaction the row commits at once (autocommit).
   * Returns undefined — and writes nothing — when the catalog says `publish: false` and no
   * override was asked for (bus spec P1).
   * Errors: CEG_UNKNOWN_TYPE, CEG_INVALID_DATA (details name the field), CEG_PAYLOAD_TOO_LARGE
   *   (retriable: false) before anything is written — throw them through your transaction to roll
   *   it back; `pg` errors as the driver throws them (the caller's transaction is then aborted).
   * Typing: a kind of the generated `EventKinds` takes its generated payload type; an unknown
   *   kind literal does not compile; a name only known at run time (`string`) takes plain JSON.
   * Spec: bus spec P3 (the outbound message is written in the same transaction as the data
   *   change), P1, M1–M6; DESIGN "Delivery".
   */
  write<K extends string>(client: pg.ClientBase, kind: KindArg<K>, data: DataOf<K>, opts?: PublishOptions): Promise<OutboxReceipt | undefined>;
  async write(client: pg.ClientBase, kind: string, data: JsonValue, opts: PublishOptions = {}): Promise<OutboxReceipt | undefined> {
    const event = prepareEvent(this.#codec, this.#identity, kind, data, opts);
    if (event === undefined) return undefined;
    const { attributes, record, topic } = event;
    const values = rowValues(topic, attributes, record);
    const res = await client.query<{ id: string }>(this.#insert, [...rowParams(values), this.#table.channel]);
    return {
      rowId: res.rows[0]!.id,
      id: attributes.id,
      source: attributes.source,
      correlationid: attributes.correlationid as string,
      topic,
      partitionkey: values.partitionKey,
    };
  }
}

const writers = new WeakMap<EventCodec, Map<string, OutboxWriter>>();

/**
 * Writes one event to the outbox with the caller's client, inside the caller's transaction: see
 * {@link OutboxWriter.write} (same result and errors; CEG_INVALID_NAME for an illegal `opts.table`).
 * Writers are cached per codec, identity and table, so the table name is checked once.
 * Spec: bus spec P3.
 */
export function writeOutboxEvent<K extends string>(client: pg.ClientBase, kind: KindArg<K>, data: DataOf<K>, opts: OutboxWriteOptions): Promise<OutboxReceipt | undefined>;
export function writeOutboxEvent(client: pg.ClientBase, kind: string, data: JsonValue, opts: OutboxWriteOptions): Promise<OutboxReceipt | undefined> {
  const { codec, identity, table, ...publishOpts } = opts;
  let byKey = writers.get(codec);
  if (byKey === undefined) writers.set(codec, (byKey = new Map<string, OutboxWriter>()));
  const key = JSON.stringify([identity.service, identity.instance, identity.dataschemaBase, table ?? null]);
  let writer = byKey.get(key);
  if (writer === undefined) byKey.set(key, (writer = new OutboxWriter({ codec, identity, ...(table === undefined ? {} : { table }) })));
  return writer.write(client, kind, data, publishOpts);
}
