/**
 * The public data mapping: natural JSON ⇄ Avro values ⇄ Avro binary.
 * Spec: Avro 1.11 §"Binary Encoding", §"Schema Resolution"; DESIGN "HTTP front door" (data
 * validated against the registered schema; errors name the field).
 */
import { GatewayError } from '../../core/errors.js';
import type { JsonValue } from '../../envelope/types.js';
import type { AvroType } from './avro-types.js';
import { compileType, JsonMappingError } from './compile.js';
import { FRAME_HEADER_BYTES, writeFrameHeader } from './frame.js';
import type { Compiled, Violation } from './compile.js';

/** At most this many violations are listed in an error; `details.violationCount` has the total. */
export const MAX_LISTED_VIOLATIONS = 100;

const compiled = new WeakMap<AvroType, Compiled>();
const resolvers = new WeakMap<AvroType, WeakMap<AvroType, unknown>>();

function convertersOf(type: AvroType): Compiled {
  let c = compiled.get(type);
  if (c === undefined) {
    c = compileType(type, new Map());
    compiled.set(type, c);
  }
  return c;
}

function invalidData(violations: readonly Violation[], schemaName: string | undefined): GatewayError {
  const listed = violations.slice(0, MAX_LISTED_VIOLATIONS);
  const summary = listed
    .slice(0, 5)
    .map((v) => `${v.field === '' ? '(data)' : v.field}: ${v.reason}`)
    .join('; ');
  const more = violations.length > 5 ? ` (+${violations.length - 5} more)` : '';
  return new GatewayError('CEG_INVALID_DATA', `data does not match schema ${schemaName ?? ''}: ${summary}${more}`, {
    retriable: false,
    details: { field: listed[0]?.field ?? '', violations: listed, violationCount: violations.length },
  });
}

/**
 * Natural JSON → the Avro-ready value of `type` (records as plain objects, unions wrapped,
 * longs as number | bigint, decimals/bytes as Buffer, timestamps as epoch ms/µs).
 * Errors: GatewayError CEG_INVALID_DATA (retriable: false), `details.violations` = every
 *   `{ field: JSON pointer, reason }` (unknown or missing fields, wrong types, enum symbols, ranges,
 *   logical-type formats), `details.field` = the first one.
 */
export function jsonToAvro(type: AvroType, json: unknown): unknown {
  const out: Violation[] = [];
  const value = convertersOf(type).toAvro(json, '', out);
  if (out.length > 0) throw invalidData(out, type.name);
  return value;
}

/**
 * An Avro value of `type` (decoded, or from {@link jsonToAvro}) → natural JSON.
 * Errors: GatewayError CEG_INVALID_DATA (retriable: false) naming the field when the value does not
 *   fit the type or cannot be written (e.g. a timestamp outside years 0000–9999).
 */
export function avroToJson(type: AvroType, value: unknown): JsonValue {
  try {
    return convertersOf(type).toJson(value, '');
  } catch (err) {
    if (err instanceof JsonMappingError) throw invalidData([{ field: err.field, reason: err.reason }], type.name);
    throw err;
  }
}

/**
 * Natural JSON → Avro binary (no wire frame).
 * Errors: as {@link jsonToAvro}.
 */
export function encodeAvro(type: AvroType, json: unknown): Buffer {
  const value = jsonToAvro(type, json);
  try {
    return type.toBuffer(value);
  } catch (err) {
    throw cannotEncode(err);
  }
}

/** Where framed values are encoded before their one copy out; grown when a value does not fit (so it keeps the largest value seen, bounded by the kinds' maxDataBytes). */
let scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * Natural JSON → the Confluent-framed Avro value (magic byte, 4-byte big-endian `schemaId`, body).
 * The body is written after the header in a scratch buffer and copied out once (into Node's
 * Buffer pool for small values): `frame(id, encodeAvro(…))` allocates and copies twice (issue 14).
 * Errors: as {@link jsonToAvro}; CEG_INVALID_OPTIONS for a schema id out of range.
 * Spec: Confluent Schema Registry docs, "Wire format".
 */
export function encodeAvroFramed(type: AvroType, json: unknown, schemaId: number): Buffer {
  const value = jsonToAvro(type, json);
  writeFrameHeader(scratch, schemaId);
  let end: number;
  try {
    end = type.encode(value, scratch, FRAME_HEADER_BYTES);
    if (end < 0) {
      // avsc returns −(missing bytes) when the buffer is too small: grow it and write again.
      const grown = Buffer.allocUnsafe(Math.max(2 * scratch.length, scratch.length - end));
      writeFrameHeader(grown, schemaId);
      scratch = grown;
      end = type.encode(value, scratch, FRAME_HEADER_BYTES);
    }
  } catch (err) {
    throw cannotEncode(err);
  }
  return Buffer.from(scratch.subarray(0, end));
}

function cannotEncode(err: unknown): GatewayError {
  return new GatewayError('CEG_INVALID_DATA', `data cannot be encoded: ${(err as Error).message}`, {
    retriable: false,
    cause: err,
    details: { field: '', violations: [{ field: '', reason: (err as Error).message }], violationCount: 1 },
  });
}

function resolverFor(reader: AvroType, writer: AvroType): unknown {
  let byWriter = resolvers.get(reader);
  if (byWriter === undefined) {
    byWriter = new WeakMap();
    resolvers.set(reader, byWriter);
  }
  let r = byWriter.get(writer);
  if (r === undefined) {
    try {
      // Names compare unqualified, as Avro Java and the registries do (a namespace-only change is compatible).
      r = reader.createResolver(writer, { ignoreNamespaces: true });
    } catch (err) {
      throw new GatewayError('CEG_SCHEMA_INCOMPATIBLE', `data written with ${writer.name ?? 'the writer schema'} cannot be read with ${reader.name ?? 'the reader schema'}: ${(err as Error).message}`, {
        retriable: false,
        cause: err,
      });
    }
    byWriter.set(writer, r);
  }
  return r;
}

/**
 * Avro binary (no wire frame) written with `writerType` → natural JSON, read as `readerType` when
 * given (explicit writer → reader schema resolution; the resolver is cached per pair).
 * Errors: GatewayError CEG_DECODE_FAILED (retriable: false) for truncated, trailing or malformed
 *   bytes; CEG_SCHEMA_INCOMPATIBLE (retriable: false) when the reader cannot read the writer's data.
 * Spec: Avro 1.11 §"Schema Resolution".
 */
export function decodeAvro(writerType: AvroType, buf: Uint8Array, readerType?: AvroType): JsonValue {
  const target = readerType ?? writerType;
  const resolver = readerType === undefined || readerType === writerType ? undefined : resolverFor(readerType, writerType);
  const bytes = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let value: unknown;
  try {
    value = resolver === undefined ? target.fromBuffer(bytes) : target.fromBuffer(bytes, resolver as Parameters<AvroType['fromBuffer']>[1]);
  } catch (err) {
    throw new GatewayError('CEG_DECODE_FAILED', `Avro body cannot be decoded: ${(err as Error).message}`, {
      retriable: false,
      cause: err,
    });
  }
  return avroToJson(target, value);
}
