/**
 * Envelope ⇄ Kafka record for the catalog's event kinds: binary content mode headers
 * (codec/kafka) around data in Avro, framed in the Confluent wire format with the registry's
 * schema id (codec/data). Writer schemas are fetched by id once and cached (ids are immutable).
 */
import { GatewayError, errorMessage } from '../../core/errors.js';
import type { Catalog, EventKind } from '../../catalog/index.js';
import type { Attributes, Envelope, JsonValue } from '../../envelope/types.js';
import type { RegisteredSchema, SchemaRegistry } from '../../registry/port.js';
import type { OutboundRecord, TransportRecord } from '../../transport/port.js';
import { avroTypeFor, decodeAvro, encodeAvro, frame, unframe } from '../data/index.js';
import type { AvroType } from '../data/index.js';
import { fromRecord, toBinaryRecord } from '../kafka/index.js';
import type { RecordEvent } from '../kafka/index.js';
import { parseStructuredEvent } from '../json/index.js';

/** The data media type of records this project writes (Avro, Confluent-framed). */
export const AVRO_CONTENT_TYPE = 'application/avro';

/** One registered schema version of a kind, with its avsc type. */
export interface SchemaVersion {
  readonly schema: RegisteredSchema;
  readonly type: AvroType;
}

/** A kind with the schema version its events are written with by default (the latest). */
export interface KindBinding extends SchemaVersion {
  readonly kind: EventKind;
  /** Every registered version of the kind's subject known to this codec, by schema id. */
  readonly versions: ReadonlyMap<number, SchemaVersion>;
}

export class EventCodec {
  readonly #catalog: Catalog;
  readonly #registry: SchemaRegistry;
  readonly #bindings = new Map<string, KindBinding>();
  readonly #writerTypes = new Map<number, Promise<AvroType>>();

  /**
   * @param latest eventId → the schema registered for that kind at start-up (its latest version).
   */
  constructor(catalog: Catalog, registry: SchemaRegistry, latest: ReadonlyMap<string, RegisteredSchema>) {
    this.#catalog = catalog;
    this.#registry = registry;
    for (const kind of catalog.kinds) {
      const schema = latest.get(kind.eventId);
      if (schema === undefined) continue;
      const type = avroTypeFor(schema.schema);
      this.#bindings.set(kind.eventId, { kind, schema, type, versions: new Map([[schema.id, { schema, type }]]) });
      this.#writerTypes.set(schema.id, Promise.resolve(type));
    }
  }

  /**
   * Loads every registered version of each kind's subject, so a partner may name an earlier one
   * in `dataschema` (DESIGN "The envelope": data is validated against the version the partner
   * names when it is registered). Errors: CEG_REGISTRY_UNAVAILABLE (retriable).
   */
  async loadVersions(): Promise<void> {
    for (const binding of this.#bindings.values()) {
      const versions = binding.versions as Map<number, SchemaVersion>;
      for (const v of await this.#registry.versions(binding.kind.subject)) {
        const schema = await this.#registry.version(binding.kind.subject, v);
        if (versions.has(schema.id)) continue;
        const type = avroTypeFor(schema.schema);
        versions.set(schema.id, { schema, type });
        this.#writerTypes.set(schema.id, Promise.resolve(type));
      }
    }
  }

  get catalog(): Catalog {
    return this.#catalog;
  }

  /** The binding of a kind by eventId (CloudEvents `type`); undefined when the catalog has no such kind. */
  binding(eventId: string): KindBinding | undefined {
    return this.#bindings.get(eventId);
  }

  /** The writer schema's avsc type for a registry id, fetched once. Errors: CEG_SCHEMA_NOT_FOUND, CEG_REGISTRY_UNAVAILABLE. */
  writerType(id: number): Promise<AvroType> {
    let t = this.#writerTypes.get(id);
    if (t === undefined) {
      t = this.#registry.schemaById(id).then(avroTypeFor);
      // A failed lookup is not cached: the registry may be back next time.
      t.catch(() => this.#writerTypes.delete(id));
      this.#writerTypes.set(id, t);
    }
    return t;
  }

  /**
   * Encodes natural-JSON data with a schema version (by default the kind's latest): the Confluent
   * frame (magic byte 0, 4-byte big-endian schema id) around the Avro body.
   * Errors: CEG_INVALID_DATA (retriable: false) with details.violations naming each field.
   */
  encodeData(version: SchemaVersion, json: JsonValue): Uint8Array {
    return frame(version.schema.id, encodeAvro(version.type, json));
  }

  /**
   * The record of a complete, validated envelope (binary content mode); `value` from
   * {@link encodeData}, or null for an event without data (a tombstone).
   */
  toRecord(attributes: Attributes, value: Uint8Array | null): OutboundRecord {
    const contentType = value === null ? undefined : AVRO_CONTENT_TYPE;
    // No copy when the caller already set it (ingress does, to spare one object per event).
    return toBinaryRecord(attributes.datacontenttype === contentType ? attributes : { ...attributes, datacontenttype: contentType }, value);
  }

  /** {@link encodeData} + {@link toRecord} for an envelope whose data is natural JSON. */
  envelopeToRecord(env: Envelope, binding: KindBinding): OutboundRecord {
    if (env.data === undefined) return this.toRecord(env.attributes, null);
    if (env.data.kind !== 'json') {
      throw new GatewayError('CEG_INVALID_DATA', 'data must be JSON to be encoded with the kind schema', { retriable: false, details: { field: 'data' } });
    }
    return this.toRecord(env.attributes, this.encodeData(binding, env.data.value));
  }

  /**
   * Decodes a consumed record into an envelope with natural-JSON data, using the writer schema named
   * by the frame's schema id, resolved into `reader` when given (`'catalog'`: the kind's schema in
   * this process's catalog — what a subscriber built against it expects; Avro schema resolution).
   * Errors: CEG_INVALID_EVENT / CEG_NOT_REGISTRY_FRAMED / CEG_DECODE_FAILED / CEG_SCHEMA_NOT_FOUND
   *   (retriable: false: poison); CEG_REGISTRY_UNAVAILABLE (retriable: true).
   * Spec: CloudEvents Kafka binding §3.2/§3.3; Confluent wire format; Avro 1.11 "Schema Resolution".
   */
  async fromRecord(record: TransportRecord, reader?: AvroType | 'catalog', headers?: RecordEvent): Promise<Envelope> {
    // `headers`: the record already read by codec/kafka fromRecord (a caller that peeked at the type).
    const read = headers ?? fromRecord(record);
    if (read.mode === 'structured') return parseStructuredEvent(read.json);
    const { attributes, value } = read;
    if (value === null) return Object.freeze({ attributes: Object.freeze({ ...attributes }) });
    const { schemaId, body } = unframe(value);
    const writer = await this.writerType(schemaId);
    // 'catalog': resolve into the schema this process was built against (bus spec M4, T13), when it knows the kind.
    const readerType = reader === 'catalog' ? this.#bindings.get(attributes.type)?.type : reader;
    let data: JsonValue;
    try {
      data = decodeAvro(writer, body, readerType === writer ? undefined : readerType);
    } catch (err) {
      // Every decode failure names the schema and the record (codec/data errors do not know them).
      const where = { schemaId, topic: record.topic, partition: record.partition, offset: record.offset.toString() };
      if (err instanceof GatewayError) throw new GatewayError(err.code, err.message, { retriable: err.retriable, cause: err, details: { ...err.details, ...where } });
      throw new GatewayError('CEG_DECODE_FAILED', `Avro decoding failed: ${errorMessage(err)}`, { retriable: false, cause: err, details: where });
    }
    // The data handed on is natural JSON, no longer Avro: the envelope says so (connectors and
    // webhooks serialise it as application/json).
    return Object.freeze({ attributes: Object.freeze({ ...attributes, datacontenttype: 'application/json' }), data: Object.freeze({ kind: 'json' as const, value: data }) });
  }
}
