/**
 * The library's one publish call (bus spec "Publisher Contract", S2: one envelope API for every
 * payload). The caller names the event kind and gives its data; the publisher fills the envelope
 * from the model and the process: `id`, `source` (service + instance, T1), `time` (UTC, M5),
 * `correlationid`/`causationid` (inherited while handling, M2), `runid` (this process run, M1),
 * `eventname`, `schemaversion`, `dataschema`, `eventclass`, `partitionkey`.
 */
import { GatewayError } from '../../core/errors.js';
import { MAX_TIMER_MS } from '../../core/timer-limit.js';
import type { EventCodec } from '../../codec/event/index.js';
import type { JsonValue } from '../../envelope/types.js';
import type { DataOf, KindArg } from '../../catalog/kinds.js';
import type { Position } from '../../transport/port.js';
import { prepareEvent } from './attributes.js';
import type { PublishOptions, PublisherIdentity } from './attributes.js';
import type { RecordPublisher } from './record-publisher.js';

export { processRunId } from './attributes.js';
export type { PublishOptions, PublisherIdentity } from './attributes.js';

/** A position as JSON: `offset` as decimal text, since JSON numbers cannot hold a 64-bit offset exactly. */
export interface PositionJson {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/**
 * Where the broker stored a published record. `offset` is a bigint (Kafka offsets are 64-bit);
 * `JSON.stringify` gives {@link PositionJson} (a bigint alone makes it throw).
 */
export class DeliveredPosition implements Position {
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly offset: bigint,
  ) {}

  toJSON(): PositionJson {
    return { topic: this.topic, partition: this.partition, offset: this.offset.toString() };
  }
}

/** A publish receipt as JSON: the event's `id` and `correlationid` (the delivery is a promise). */
export interface PublishReceiptJson {
  readonly id: string;
  readonly correlationid: string;
}

export interface PublishReceipt {
  readonly id: string;
  readonly correlationid: string;
  /** Settles when the broker acknowledged the record (serializable, see {@link DeliveredPosition}), or when its retry budget ran out. */
  readonly delivered: Promise<DeliveredPosition>;
  /**
   * `delivered` with a deadline, for callers who must know (bus spec P2): rejects with
   * CEG_DELIVERY_TIMEOUT (retriable: true) after `timeoutMs` — the record may still be stored
   * later (indeterminate; consumers drop duplicates by source+id). `timeoutMs`: 0 to 2^31 − 1
   * (a Node timer's longest), or Infinity for no bound; anything else rejects with
   * CEG_INVALID_OPTIONS (retriable: false).
   */
  deliveredWithin(timeoutMs: number): Promise<DeliveredPosition>;
  /** `JSON.stringify(receipt)`: the ids only. */
  toJSON(): PublishReceiptJson;
}

function within<T>(p: Promise<T>, timeoutMs: number, id: string): Promise<T> {
  if (timeoutMs === Infinity) return p;
  // A timer longer than Node holds would fire after 1 ms: a false timeout of a record still in flight.
  if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0 && timeoutMs <= MAX_TIMER_MS)) {
    return Promise.reject(new GatewayError('CEG_INVALID_OPTIONS', `deliveredWithin: timeoutMs is ms from 0 to ${MAX_TIMER_MS}, or Infinity (no bound), not ${String(timeoutMs)}`, { retriable: false, details: { field: 'timeoutMs' } }));
  }
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new GatewayError('CEG_DELIVERY_TIMEOUT', `event ${id} not acknowledged within ${timeoutMs} ms; it may still be stored`, { retriable: true, details: { id, timeoutMs, indeterminate: true } })), timeoutMs);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

export class Publisher {
  readonly #codec: EventCodec;
  readonly #records: RecordPublisher;
  readonly #identity: PublisherIdentity;

  constructor(codec: EventCodec, records: RecordPublisher, identity: PublisherIdentity) {
    this.#codec = codec;
    this.#records = records;
    this.#identity = identity;
  }

  /**
   * Publishes one event of the kind named by eventId or business name. Never blocks: the record is
   * queued and `delivered` tells the outcome (bus spec P2).
   * Returns undefined — and publishes nothing — when the catalog says `publish: false` and no
   * override was asked for (bus spec P1).
   * Errors (thrown at once, nothing queued): CEG_UNKNOWN_TYPE, CEG_INVALID_ATTRIBUTE (an empty
   *   `subject` or `correlationid`, an invalid `time` in `opts`), CEG_INVALID_DATA, CEG_PAYLOAD_TOO_LARGE
   *   (Avro data over the kind's `maxDataBytes`, bus spec M6) (retriable: false);
   *   CEG_QUEUE_FULL (retriable: true).
   * Typing: a kind of the generated `EventKinds` (name or eventId) takes its generated payload
   *   type (bus spec X1); an unknown kind literal does not compile; a name only known at run time
   *   (`string`) takes plain JSON, checked at run time.
   */
  publish<K extends string>(kind: KindArg<K>, data: DataOf<K>, opts?: PublishOptions): PublishReceipt | undefined;
  publish(kind: string, data: JsonValue, opts: PublishOptions = {}): PublishReceipt | undefined {
    const event = prepareEvent(this.#codec, this.#identity, kind, data, opts);
    if (event === undefined) return undefined;
    const { attributes, record, topic } = event;
    const id = attributes.id;
    const correlationid = attributes.correlationid as string;
    const [delivered] = this.#records.send([{ topic, record }]);
    const d = delivered!.then((p) => new DeliveredPosition(p.topic, p.partition, p.offset));
    // Fire and forget is allowed (bus spec P2: publishing never fails the producer): a failure
    // nobody awaits is already logged and counted by the record publisher, so it must not also
    // surface as an unhandled rejection (which ends the process). Awaiting `delivered` still sees it.
    d.catch(() => undefined);
    return { id, correlationid, delivered: d, deliveredWithin: (timeoutMs) => within(d, timeoutMs, id), toJSON: () => ({ id, correlationid }) };
  }
}
