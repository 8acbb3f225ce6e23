/**
 * codec/data: natural JSON ⇄ Avro (strict validation, logical types) and the Confluent wire frame.
 * The only avsc user outside catalog validation.
 */
export { avroType, avroTypeFor, isLongValue, MappedLogicalType, normalizeLong } from './avro-types.js';
export type { AvroType, LogicalKind, LongValue } from './avro-types.js';
export type { Violation } from './compile.js';
export { avroToJson, decodeAvro, encodeAvro, encodeAvroFramed, jsonToAvro, MAX_LISTED_VIOLATIONS } from './convert.js';
export { frame, FRAME_HEADER_BYTES, unframe, writeFrameHeader } from './frame.js';
export type { Unframed } from './frame.js';
