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
import { FRAME_HEADER_BYTES, avroTypeFor, decodeAvro, encodeAvro, encodeAvroFramed, unframe } from '../data/index.js';
import type { AvroType } from '../data/index.js';
import { fromRecord, toBinaryRecord } from '../kafka/index.js';
import type { RecordEvent } from '../kafka/index.js';
import { isJsonMediaType as isJsonMediaTypeOf, parseJsonText, parseMediaType, parseStructuredEvent } from '../json/index.js';

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
  /** The writer types already resolved (a subset of #writerTypes): decoding with them needs no await. */
  readonly #knownWriters = new Map<number, AvroType>();
  /** eventId → the kind's schema in this process's catalog: the reader schema of decoding (M4). */
  readonly #readers = new Map<string, AvroType>();

  /**
   * @param latest eventId → the schema registered for that kind at start-up (its latest version).
   *   Empty for a read-only codec (decoding only: `tail`, `trace`, read-only subscribers), which
   *   registers nothing and resolves every record into the catalog's schemas.
   */
  constructor(catalog: Catalog, registry: SchemaRegistry, latest: ReadonlyMap<string, RegisteredSchema>) {
    this.#catalog = catalog;
    this.#registry = registry;
    for (const kind of catalog.kinds) this.#readers.set(kind.eventId, avroTypeFor(kind.schema));
    for (const kind of catalog.kinds) {
      const schema = latest.get(kind.eventId);
      if (schema === undefined) continue;
      const type = avroTypeFor(schema.schema);
      this.#bindings.set(kind.eventId, { kind, schema, type, versions: new Map([[schema.id, { schema, type }]]) });
      this.#writerTypes.set(schema.id, Promise.resolve(type));
      this.#knownWriters.set(schema.id, type);
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
        this.#knownWriters.set(schema.id, type);
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
      t = this.#registry.schemaById(id).then((schema) => {
        const type = avroTypeFor(schema);
        this.#knownWriters.set(id, type);
        return type;
      });
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
    return encodeAvroFramed(version.type, json, version.schema.id);
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
   * A structured-mode record (CloudEvents JSON format) goes through the same schema: JSON `data`
   * is validated against the kind's catalog schema and normalised exactly as its binary-mode twin
   * would be decoded; `data_base64` holding Confluent-framed Avro is decoded with its writer schema;
   * `data_base64` holding JSON (a JSON `datacontenttype`) is read as JSON `data`.
   * `headers`: the record as codec/kafka `fromRecord` read it, for a caller that peeked at its type
   *   first; taken over (its attributes object becomes the returned envelope's, frozen): do not
   *   use it afterwards.
   * Errors: CEG_INVALID_EVENT / CEG_NOT_REGISTRY_FRAMED / CEG_DECODE_FAILED / CEG_SCHEMA_NOT_FOUND /
   *   CEG_INVALID_DATA naming the field (retriable: false: poison); CEG_REGISTRY_UNAVAILABLE
   *   (retriable: true).
   * Spec: CloudEvents Kafka binding §3.2/§3.3 (binary, structured); JSON event format §3;
   *   Confluent wire format; Avro 1.11 "Schema Resolution"; issue 7 (structured records skip no schema).
   */
  async fromRecord(record: TransportRecord, reader?: AvroType | 'catalog', headers?: RecordEvent): Promise<Envelope> {
    const read = headers ?? fromRecord(record);
    if (read.mode === 'structured') return this.#structured(parseStructuredEvent(read.json), record, reader);
    const { attributes, value } = read;
    if (value === null) return withoutDataOwning(attributes);
    const data = await this.#decodeFramed(value, attributes.type, record, reader);
    return asJsonEventOwning(attributes, data);
  }

  /**
   * {@link fromRecord} without waiting, for the common case: the envelope of a binary-mode record
   * whose writer schema this codec already holds (every record after the first of its schema), or
   * undefined when decoding needs the registry or is a structured-mode record (then call
   * fromRecord). Saves the consumer pipeline three promises per record.
   * Errors (thrown): as fromRecord's, except CEG_REGISTRY_UNAVAILABLE, which cannot happen here.
   */
  fromRecordNow(record: TransportRecord, reader?: AvroType | 'catalog', headers?: RecordEvent): Envelope | undefined {
    const read = headers ?? fromRecord(record);
    if (read.mode === 'structured') return undefined;
    const { attributes, value } = read;
    if (value === null) return withoutDataOwning(attributes);
    const { schemaId, body } = unframe(value);
    const writer = this.#knownWriters.get(schemaId);
    if (writer === undefined) return undefined;
    return asJsonEventOwning(attributes, this.#decodeWith(writer, schemaId, body, attributes.type, record, reader));
  }

  /** Avro in the Confluent frame → natural JSON, resolved into the reader. */
  async #decodeFramed(value: Uint8Array, type: string, record: TransportRecord, reader: AvroType | 'catalog' | undefined): Promise<JsonValue> {
    const { schemaId, body } = unframe(value);
    const writer = this.#knownWriters.get(schemaId) ?? (await this.writerType(schemaId));
    return this.#decodeWith(writer, schemaId, body, type, record, reader);
  }

  #decodeWith(writer: AvroType, schemaId: number, body: Uint8Array, type: string, record: TransportRecord, reader: AvroType | 'catalog' | undefined): JsonValue {
    // 'catalog': resolve into the schema this process was built against (bus spec M4, T13), when it knows the kind.
    const readerType = reader === 'catalog' ? this.#readers.get(type) : reader;
    try {
      return decodeAvro(writer, body, readerType === writer ? undefined : readerType);
    } catch (err) {
      throw located(err, { schemaId, ...where(record) });
    }
  }

  async #structured(event: Envelope, record: TransportRecord, reader: AvroType | 'catalog' | undefined): Promise<Envelope> {
    const { attributes, data } = event;
    const readerType = reader === 'catalog' ? this.#readers.get(attributes.type) : reader;
    // A kind this process does not know has no schema here: handed on as it came (the kind filter skips it).
    if (data === undefined || (readerType === undefined && reader === 'catalog')) return event;
    if (data.kind === 'binary') {
      const bytes = data.bytes;
      if (bytes.length >= FRAME_HEADER_BYTES && bytes[0] === 0) return asJsonEvent(attributes, await this.#decodeFramed(bytes, attributes.type, record, reader));
      if (!isJsonMediaType(attributes.datacontenttype)) {
        throw new GatewayError('CEG_INVALID_DATA', `data_base64 holds neither Confluent-framed Avro nor JSON (datacontenttype ${String(attributes.datacontenttype ?? 'absent')})`, {
          retriable: false,
          details: { field: 'data_base64', ...where(record) },
        });
      }
      return asJsonEvent(attributes, this.#normalizeJson(parseJsonBytes(bytes, record), readerType, record));
    }
    return asJsonEvent(attributes, this.#normalizeJson(data.value, readerType, record));
  }

  /** JSON data → the kind's schema and back: validated (fields named) and normalised like a binary-mode record. */
  #normalizeJson(json: JsonValue, type: AvroType | undefined, record: TransportRecord): JsonValue {
    if (type === undefined) return json;
    try {
      return decodeAvro(type, encodeAvro(type, json));
    } catch (err) {
      throw located(err, where(record));
    }
  }
}

function where(record: TransportRecord): Record<string, unknown> {
  return { topic: record.topic, partition: record.partition, offset: record.offset.toString() };
}

/** Every decode failure names the record (codec/data errors do not know it). */
function located(err: unknown, details: Record<string, unknown>): GatewayError {
  if (err instanceof GatewayError) return new GatewayError(err.code, err.message, { retriable: err.retriable, cause: err, details: { ...err.details, ...details } });
  return new GatewayError('CEG_DECODE_FAILED', `Avro decoding failed: ${errorMessage(err)}`, { retriable: false, cause: err, details });
}

/**
 * The data handed on is natural JSON, no longer Avro: the envelope says so (connectors and
 * webhooks serialise it as application/json).
 */
function asJsonEvent(attributes: Attributes, data: JsonValue): Envelope {
  return Object.freeze({ attributes: Object.freeze({ ...attributes, datacontenttype: 'application/json' }), data: Object.freeze({ kind: 'json' as const, value: data }) });
}

/**
 * {@link asJsonEvent} for attributes this decode owns (read from the record's headers for it): they
 * become the envelope's, set and frozen in place, instead of a second copy per event (issue 14's
 * "no second copy of attributes", on the consume side). The property order is the copy's.
 */
function asJsonEventOwning(attributes: Attributes, data: JsonValue): Envelope {
  (attributes as { datacontenttype?: string }).datacontenttype = 'application/json';
  return Object.freeze({ attributes: Object.freeze(attributes), data: Object.freeze({ kind: 'json' as const, value: data }) });
}

/** An envelope without data, owning the attributes read for it (see {@link asJsonEventOwning}). */
function withoutDataOwning(attributes: Attributes): Envelope {
  return Object.freeze({ attributes: Object.freeze(attributes) });
}

/**
 * True when `mediaType` is one JSON media type, read by the envelope's one parser (a parameter
 * given twice, a list or a malformed text is not; nor `application/+json`, RFC 6838 §4.2.8).
 */
function isJsonMediaType(mediaType: string | undefined): boolean {
  const mt = mediaType === undefined ? undefined : parseMediaType(mediaType);
  return mt !== undefined && isJsonMediaTypeOf(mt);
}

/**
 * `data_base64` declared JSON → its value, read as every JSON from outside is (`parseJsonText`:
 * UTF-8, no member name twice in one object — JSON.parse kept the last one, so a consumer of the
 * record elsewhere could see other data than a subscriber here). Errors: CEG_INVALID_DATA (not
 * retriable) naming `data_base64` and the record. Spec: RFC 8259 §4, §8.1.
 */
function parseJsonBytes(bytes: Uint8Array, record: TransportRecord): JsonValue {
  const parsed = parseJsonText(bytes);
  if (parsed.ok) return parsed.value as JsonValue;
  throw new GatewayError('CEG_INVALID_DATA', `data_base64 is not valid UTF-8 JSON: ${parsed.reason}`, { retriable: false, details: { field: parsed.pointer === undefined ? 'data_base64' : `data_base64${parsed.pointer}`, ...where(record) } });
}
