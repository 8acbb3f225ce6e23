/**
 * The Confluent wire format: magic byte 0, the schema id as a 4-byte big-endian unsigned integer,
 * then the Avro binary body.
 * Spec: Confluent Schema Registry docs, "Wire format"; DESIGN "Kafka mapping".
 */
import { GatewayError } from '../../core/errors.js';

/** Bytes before the Avro body. */
export const FRAME_HEADER_BYTES = 5;
const MAGIC = 0;

/**
 * Prefixes `avroBody` with the frame header for `schemaId` (integer 0 … 2^32 − 1).
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false) for an id out of range.
 */
export function frame(schemaId: number, avroBody: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + avroBody.length);
  writeFrameHeader(out, schemaId);
  out.set(avroBody, FRAME_HEADER_BYTES);
  return out;
}

/**
 * Writes the 5-byte frame header for `schemaId` at the start of `buf` (the body follows at
 * {@link FRAME_HEADER_BYTES}), so an encoder can write the body in place without a second copy.
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false) for an id out of range.
 */
export function writeFrameHeader(buf: Buffer, schemaId: number): void {
  if (!Number.isInteger(schemaId) || schemaId < 0 || schemaId > 0xffffffff) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `schema id ${schemaId} is not an unsigned 32-bit integer`, { retriable: false });
  }
  buf[0] = MAGIC;
  buf.writeUInt32BE(schemaId, 1);
}

/** A framed value split in two; `body` shares memory with the input. */
export interface Unframed {
  readonly schemaId: number;
  readonly body: Buffer;
}

/**
 * Splits a framed value.
 * Errors: GatewayError CEG_NOT_REGISTRY_FRAMED (retriable: false) for null, fewer than 5 bytes, or a
 *   first byte other than 0 (`details.reason` says which).
 */
export function unframe(buf: Uint8Array | null | undefined): Unframed {
  if (buf === null || buf === undefined) throw notFramed('value is null');
  if (buf.length < FRAME_HEADER_BYTES) throw notFramed(`value has ${buf.length} bytes, fewer than the 5-byte header`);
  if (buf[0] !== MAGIC) throw notFramed(`magic byte is ${buf[0]}, not 0`);
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return { schemaId: b.readUInt32BE(1), body: b.subarray(FRAME_HEADER_BYTES) };
}

function notFramed(reason: string): GatewayError {
  return new GatewayError('CEG_NOT_REGISTRY_FRAMED', `not a schema-registry framed value: ${reason}`, {
    retriable: false,
    details: { reason },
  });
}
