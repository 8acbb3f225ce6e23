/**
 * Fetch answers whose record batches are kept as bytes, read by ./record-batches.ts instead of
 * @platformatic/kafka's record parse (issue 8 and 14 profiles: that parse and the objects it makes
 * were the largest cost of a push subscription after garbage collection).
 *
 * How: the library's `consumer.fetch` takes the connection pool it sends on (`connectionPool`).
 * {@link RawFetchPool} is a pool of its own whose connections send a Fetch request of version 17
 * (the version the library negotiates with Kafka 3.7 and later) with {@link parseFetchV17} as the
 * answer's parser; every other request, and Fetch of other versions, goes through unchanged. The
 * library still does the rest: metadata, version negotiation, retries, leader epochs, errors.
 * Spec: Kafka protocol, Fetch Response v17 (KIP-516 topic ids; KIP-951 tagged fields).
 */
import { ConnectionPool, ResponseError } from '@platformatic/kafka';
import type { Broker, CallbackWithPromise, Connection, ConnectionOptions, Reader } from '@platformatic/kafka';
import type { AbortedTransaction } from './record-batches.js';

const FETCH_API_KEY = 1;
const RAW_FETCH_VERSION = 17;
/**
 * Kafka's OFFSET_OUT_OF_RANGE (protocol error code 1): the fetch offset is below the partition's
 * log start (retention, `kafka-delete-records`) or past its end (the topic deleted and created
 * again). Not thrown: it is one partition's answer, handed on in `errorCode` so the caller resets
 * that partition alone (./fetcher.ts); thrown, it failed the fetch of every other partition too.
 */
export const OFFSET_OUT_OF_RANGE = 1;
/**
 * Kafka's UNKNOWN_TOPIC_OR_PARTITION (3) and UNKNOWN_TOPIC_ID (100): the partition's topic was
 * deleted (a topic id names one topic for good, so one created again under the name is another).
 * Not thrown either: a group reading several topics, one of them deleted by an operator, stopped
 * fetching all of them (every fetch failed, then the metadata of the whole set did).
 */
export const UNKNOWN_TOPIC_CODES: ReadonlySet<number> = new Set([3, 100]);

/** One partition of a raw Fetch answer: as the library's, with its record batches as bytes in `raw`. */
export interface RawFetchPartition {
  readonly partitionIndex: number;
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly lastStableOffset: bigint;
  readonly logStartOffset: bigint;
  readonly abortedTransactions: AbortedTransaction[];
  readonly preferredReadReplica: number;
  /** Always empty here (the library's read_committed filter walks it and finds nothing to do). */
  records: unknown[];
  /** The partition's record batches as fetched, when it has any. */
  readonly raw?: Buffer;
}

export interface RawFetchResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly sessionId: number;
  readonly responses: { readonly topicId: string; readonly partitions: RawFetchPartition[] }[];
}

/**
 * Fetch Response v17, as the library reads it, except `records`: the partition's record batches
 * are handed on as one Buffer (`raw`; a view when the answer arrived in one piece).
 * Errors: the library's ResponseError (as its own parser) when the answer or a partition carries
 * an error code, except {@link OFFSET_OUT_OF_RANGE} and {@link UNKNOWN_TOPIC_CODES}, left in the
 * partition's `errorCode`.
 */
export function parseFetchV17(_correlationId: number, apiKey: number, apiVersion: number, reader: Reader): RawFetchResponse {
  const errors: [string, [number, null]][] = [];
  const throttleTimeMs = reader.readInt32();
  const errorCode = reader.readInt16();
  if (errorCode !== 0) errors.push(['', [errorCode, null]]);
  const sessionId = reader.readInt32();
  const responses = reader.readArray((r, i) => ({
    topicId: r.readUUID(),
    partitions: r.readArray((r2, j) => {
      const partitionIndex = r2.readInt32();
      const partitionError = r2.readInt16();
      const highWatermark = r2.readInt64();
      const lastStableOffset = r2.readInt64();
      const logStartOffset = r2.readInt64();
      const abortedTransactions = r2.readArray((r3) => ({ producerId: r3.readInt64(), firstOffset: r3.readInt64() })) ?? [];
      const preferredReadReplica = r2.readInt32();
      if (partitionError !== 0 && partitionError !== OFFSET_OUT_OF_RANGE && !UNKNOWN_TOPIC_CODES.has(partitionError)) errors.push([`/responses/${i}/partitions/${j}`, [partitionError, null]]);
      // COMPACT_RECORDS: the length plus one.
      const size = r2.readUnsignedVarInt() - 1;
      let raw: Buffer | undefined;
      if (size > 0) {
        raw = r2.buffer.slice(r2.position, r2.position + size);
        r2.skip(size);
      }
      const p: RawFetchPartition = { partitionIndex, errorCode: partitionError, highWatermark, lastStableOffset, logStartOffset, abortedTransactions, preferredReadReplica, records: [], ...(raw === undefined ? {} : { raw }) };
      return p;
    }),
  }));
  const response: RawFetchResponse = { throttleTimeMs, errorCode, sessionId, responses };
  if (errors.length > 0) throw new ResponseError(apiKey, apiVersion, Object.fromEntries(errors), response);
  return response;
}

type Send = Connection['send'];

/**
 * A connection pool whose connections read Fetch v17 answers with {@link parseFetchV17}. Only for
 * `consumer.fetch({ connectionPool })`: the connection it hands out is a stand-in that has `send`
 * alone (all the library's fetch uses). Close it with the consumer.
 */
export class RawFetchPool extends ConnectionPool {
  readonly #standIns = new WeakMap<Connection, Connection>();

  constructor(clientId: string, options: ConnectionOptions) {
    super(clientId, options);
  }

  override get(broker: Broker, callback: CallbackWithPromise<Connection>): void;
  override get(broker: Broker): Promise<Connection>;
  override get(broker: Broker, callback?: CallbackWithPromise<Connection>): void | Promise<Connection> {
    if (callback === undefined) return super.get(broker).then((c) => this.#standIn(c));
    super.get(broker, (error, connection) => (error || connection === undefined ? callback(error, undefined) : callback(null, this.#standIn(connection))));
  }

  #standIn(connection: Connection): Connection {
    let standIn = this.#standIns.get(connection);
    if (standIn === undefined) {
      const send: Send = (apiKey, apiVersion, createPayload, parser, requestTags, responseTags, callback) =>
        connection.send(apiKey, apiVersion, createPayload, apiKey === FETCH_API_KEY && apiVersion === RAW_FETCH_VERSION ? (parseFetchV17 as typeof parser) : parser, requestTags, responseTags, callback);
      standIn = { send } as unknown as Connection;
      this.#standIns.set(connection, standIn);
    }
    return standIn;
  }
}
