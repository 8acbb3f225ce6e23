/**
 * avsc Types as ce-gateway builds them: lossless longs (number when safe, bigint beyond 2^53),
 * logical types kept visible on the type tree (their mapping lives in ./compile.ts), wrapped unions
 * (`{ branchName: value }`, one unambiguous Avro-ready form). Types are cached per schema text.
 * Spec: Avro 1.11 §"Primitive Types" (long = signed 64-bit), §"Logical Types" (an invalid logical
 * type falls back to its underlying type), §"Schema Resolution".
 */
import avsc from 'avsc';
import type { Schema, Type } from 'avsc';
import { GatewayError } from '../../core/errors.js';

/** An avsc Type built by {@link avroType}. */
export type AvroType = Type;

/** Logical types this codec maps; others fall back to their underlying type. */
export type LogicalKind =
  | { readonly name: 'timestamp-millis' | 'timestamp-micros' | 'time-micros' | 'time-millis' | 'date' | 'uuid' }
  | { readonly name: 'decimal'; readonly precision: number; readonly scale: number; readonly fixedSize?: number };

const UNDERLYING: Readonly<Record<string, string>> = {
  'timestamp-millis': 'long',
  'timestamp-micros': 'long',
  'time-micros': 'long',
  'time-millis': 'int',
  date: 'int',
  uuid: 'string',
};

const TWO32 = 4294967296;
const MIN_LONG = -(2n ** 63n);
const MAX_LONG = 2n ** 63n - 1n;

/** A long as JS holds it: a safe-integer number, or a bigint beyond ±(2^53 − 1). */
export type LongValue = number | bigint;

/** Normalises a bigint: number when it is a safe integer. */
export function normalizeLong(n: bigint): LongValue {
  return n >= -9007199254740991n && n <= 9007199254740991n ? Number(n) : n;
}

/** true for a value the long type accepts. */
export function isLongValue(v: unknown): v is LongValue {
  return typeof v === 'number' ? Number.isSafeInteger(v) : typeof v === 'bigint' && v >= MIN_LONG && v <= MAX_LONG;
}

/** The long type: numbers when safe, bigint otherwise; 8-byte little-endian two's complement buffers (avsc contract). */
const hybridLong: Type = avsc.types.LongType.__with({
  fromBuffer(buf: Buffer): LongValue {
    const hi = buf.readInt32LE(4);
    if (hi > -2097152 && hi < 2097152) return hi * TWO32 + buf.readUInt32LE(0);
    return normalizeLong(buf.readBigInt64LE(0));
  },
  toBuffer(v: LongValue): Buffer {
    const buf = Buffer.allocUnsafe(8);
    if (typeof v === 'number') {
      const hi = Math.floor(v / TWO32);
      buf.writeUInt32LE(v - hi * TWO32, 0);
      buf.writeInt32LE(hi, 4);
    } else {
      buf.writeBigInt64LE(v, 0);
    }
    return buf;
  },
  fromJSON(v: unknown): LongValue {
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint') return normalizeLong(v);
    return normalizeLong(BigInt(String(v)));
  },
  toJSON(v: LongValue): number | string {
    return typeof v === 'number' ? v : v.toString();
  },
  isValid: isLongValue,
  compare(a: LongValue, b: LongValue): number {
    return a < b ? -1 : a > b ? 1 : 0;
  },
});

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function maxDecimalDigits(size: number): number {
  return Math.floor(Math.log10(2) * (8 * size - 1));
}

/** Validates logical-type attributes; throws (→ fallback to the underlying type) when invalid. */
function logicalKindOf(schema: Record<string, unknown>): LogicalKind {
  const name = String(schema['logicalType']);
  const underlying = schema['type'];
  if (name === 'decimal') {
    const precision = schema['precision'];
    const scale = schema['scale'] ?? 0;
    if (typeof precision !== 'number' || !Number.isInteger(precision) || precision < 1) throw new Error('invalid decimal precision');
    if (typeof scale !== 'number' || !Number.isInteger(scale) || scale < 0 || scale > precision) throw new Error('invalid decimal scale');
    if (underlying === 'bytes') return { name, precision, scale };
    const size = schema['size'];
    if (underlying === 'fixed' && typeof size === 'number' && precision <= maxDecimalDigits(size)) {
      return { name, precision, scale, fixedSize: size };
    }
    throw new Error('decimal must annotate bytes or a large enough fixed');
  }
  if (UNDERLYING[name] !== underlying) throw new Error(`${name} cannot annotate ${String(underlying)}`);
  return { name } as LogicalKind;
}

function underlyingName(t: Type): string {
  const u = t instanceof MappedLogicalType ? t.underlyingType : t;
  return u.typeName === 'abstract:long' ? 'long' : u.typeName;
}

/**
 * A logical type whose values pass through unchanged (the Avro-ready value is the underlying
 * value); it keeps the logical name and attributes on the type tree for the compiled converters.
 */
export class MappedLogicalType extends avsc.types.LogicalType {
  readonly logical: LogicalKind;

  constructor(schema: Record<string, unknown>, opts: unknown) {
    const logical = logicalKindOf(schema);
    super(schema as Schema, opts);
    this.logical = logical;
  }

  protected override _fromValue(val: unknown): unknown {
    return val;
  }

  protected override _toValue(val: unknown): unknown {
    return val;
  }

  /**
   * Writer → reader: the same underlying type (int → long promotion allowed; names and fixed sizes
   * as Avro resolves them); a decimal writer needs the same scale and at most the reader's precision.
   */
  protected override _resolve(writer: Type): ((v: unknown) => unknown) | undefined {
    const mine = underlyingName(this);
    const theirs = underlyingName(writer);
    if (mine !== theirs && !(mine === 'long' && theirs === 'int')) return undefined;
    if (this.logical.name === 'decimal' && writer instanceof MappedLogicalType) {
      const w = writer.logical;
      if (w.name !== 'decimal' || w.scale !== this.logical.scale || w.precision > this.logical.precision) return undefined;
    }
    try {
      this.underlyingType.createResolver(writer instanceof MappedLogicalType ? writer.underlyingType : writer);
    } catch {
      return undefined;
    }
    return identity;
  }
}

function identity(v: unknown): unknown {
  return v;
}

function typeHook(building: Set<object>) {
  return (schema: Schema, opts: unknown): Type | undefined => {
    if (schema === 'long') return hybridLong;
    if (!isObject(schema)) return undefined;
    const logicalName = schema['logicalType'];
    if (typeof logicalName === 'string' && logicalName in UNDERLYING_OR_DECIMAL && !building.has(schema)) {
      building.add(schema);
      try {
        return new MappedLogicalType(schema, opts);
      } catch {
        // Invalid logical type: Avro §"Logical Types" says use the underlying type.
      } finally {
        building.delete(schema);
      }
    }
    return schema['type'] === 'long' ? hybridLong : undefined;
  };
}

const UNDERLYING_OR_DECIMAL: Readonly<Record<string, true>> = Object.freeze(
  Object.fromEntries([...Object.keys(UNDERLYING), 'decimal'].map((k) => [k, true as const])),
);

const cache = new Map<string, Type>();

/**
 * The avsc Type of an Avro schema (JSON text or parsed JSON), built once per distinct text and cached.
 * Errors: GatewayError CEG_SCHEMA_INVALID (retriable: false) when the text is not a valid Avro schema.
 * Spec: Avro 1.11 §"Schema Declaration".
 */
export function avroType(schema: string | object): AvroType {
  const text = typeof schema === 'string' ? schema : JSON.stringify(schema);
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  let type: Type;
  try {
    const json: unknown = typeof schema === 'string' ? JSON.parse(schema) : schema;
    type = avsc.Type.forSchema(json as Schema, { wrapUnions: true, typeHook: typeHook(new Set()) });
  } catch (err) {
    throw new GatewayError('CEG_SCHEMA_INVALID', `not a valid Avro schema: ${(err as Error).message}`, {
      retriable: false,
      cause: err,
    });
  }
  cache.set(text, type);
  return type;
}

/** Alias of {@link avroType} (the name other modules use for "the type of this schema text"). */
export const avroTypeFor: (schema: string | object) => AvroType = avroType;
