/**
 * The library's one publish call (bus spec "Publisher Contract", S2: one envelope API for every
 * payload). The caller names the event kind and gives its data; the publisher fills the envelope
 * from the model and the process: `id`, `source` (service + instance, T1), `time` (UTC, M5),
 * `correlationid`/`causationid` (inherited while handling, M2), `runid` (this process run, M1),
 * `eventname`, `schemaversion`, `dataschema`, `eventclass`, `partitionkey`.
 */
import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../core/errors.js';
import { partitionKey } from '../../catalog/index.js';
import type { EventCodec } from '../../codec/event/index.js';
import type { Attributes, JsonValue } from '../../envelope/types.js';
import type { Position } from '../../transport/port.js';
import { currentHandling } from '../correlation/index.js';
import type { RecordPublisher } from './record-publisher.js';

/** One value per process run (bus spec M1 `correlationAssemblyId` → extension `runid`). */
export const processRunId: string = randomUUID();

export interface PublishOptions {
  /** CloudEvents `subject`. */
  readonly subject?: string;
  /** Overrides the inherited or new correlation id. */
  readonly correlationid?: string;
  /** Publish even when the catalog declares `publish: false` (bus spec P1: explicit run-time override). */
  readonly overridePublishPolicy?: boolean;
  /** Event time; default now (UTC). */
  readonly time?: Date;
}

export interface PublishReceipt {
  readonly id: string;
  readonly correlationid: string;
  /** Settles when the broker acknowledged the record, or when its retry budget ran out. */
  readonly delivered: Promise<Position>;
}

export interface PublisherIdentity {
  readonly service: string;
  readonly instance: string;
  readonly dataschemaBase: string;
}

export class Publisher {
  readonly #codec: EventCodec;
  readonly #records: RecordPublisher;
  readonly #identity: PublisherIdentity;
  readonly #source: string;

  constructor(codec: EventCodec, records: RecordPublisher, identity: PublisherIdentity) {
    this.#codec = codec;
    this.#records = records;
    this.#identity = identity;
    this.#source = `urn:${identity.service}:${identity.instance}`;
  }

  /**
   * Publishes one event of the kind named by eventId or business name. Never blocks: the record is
   * queued and `delivered` tells the outcome (bus spec P2).
   * Returns undefined — and publishes nothing — when the catalog says `publish: false` and no
   * override was asked for (bus spec P1).
   * Errors (thrown at once, nothing queued): CEG_UNKNOWN_TYPE, CEG_INVALID_DATA, CEG_PAYLOAD_TOO_LARGE
   *   (Avro data over the kind's `maxDataBytes`, bus spec M6) (retriable: false);
   *   CEG_QUEUE_FULL (retriable: true).
   */
  publish(kind: string, data: JsonValue, opts: PublishOptions = {}): PublishReceipt | undefined {
    const found = this.#codec.catalog.byEventId(kind) ?? this.#codec.catalog.byName(kind);
    const binding = found && this.#codec.binding(found.eventId);
    if (binding === undefined) throw new GatewayError('CEG_UNKNOWN_TYPE', `unknown event kind "${kind}"`, { retriable: false, details: { attribute: 'type' } });
    if (!binding.kind.publish && opts.overridePublishPolicy !== true) return undefined;
    const value = this.#codec.encodeData(binding, data);
    // The kind's size bound (M6) holds for library publishers as it does at HTTP ingress; 5 = frame header.
    const bytes = value.length - 5;
    if (bytes > binding.kind.maxDataBytes) {
      throw new GatewayError('CEG_PAYLOAD_TOO_LARGE', `data is larger than the ${binding.kind.eventClass} bound of ${binding.kind.name}: ${bytes} > ${binding.kind.maxDataBytes} bytes (Avro)`, {
        retriable: false,
        details: { field: '/data', bytes, maxDataBytes: binding.kind.maxDataBytes },
      });
    }
    const handling = currentHandling();
    const id = randomUUID();
    const correlationid = opts.correlationid ?? handling?.correlationid ?? randomUUID();
    const attributes: Attributes = {
      specversion: '1.0',
      id,
      source: this.#source,
      type: binding.kind.eventId,
      time: (opts.time ?? new Date()).toISOString(),
      ...(opts.subject === undefined ? {} : { subject: opts.subject }),
      dataschema: `${this.#identity.dataschemaBase}${binding.schema.id}`,
      correlationid,
      ...(handling === undefined ? {} : { causationid: handling.eventId }),
      ...(handling?.traceparent === undefined ? {} : { traceparent: handling.traceparent }),
      runid: processRunId,
      eventname: binding.kind.name,
      eventclass: binding.kind.eventClass,
      schemaversion: binding.schema.version,
      partitionkey: partitionKey(binding.kind, data),
    };
    const [delivered] = this.#records.send([{ topic: binding.kind.topic.name, record: this.#codec.toRecord(attributes, value) }]);
    return { id, correlationid, delivered: delivered! };
  }
}
