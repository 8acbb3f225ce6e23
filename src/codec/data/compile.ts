/**
 * Converters between natural JSON and Avro-ready values, compiled once per avsc Type (a tree of
 * closures, so the ingress hot path does no schema inspection per event).
 *
 * Natural JSON (what partners send over HTTP and handlers receive):
 * - records: JSON objects; unknown members are refused; a missing member takes the field default,
 *   a missing nullable member is null, any other missing member is refused;
 * - ["null", T] unions: the bare value or null (the Avro JSON wrappers `{"T": v}` and `{"null": null}`
 *   are accepted too, in any union with a null branch);
 *   other unions: the wrapper `{"<branch name>": v}` or a bare value that exactly one branch
 *   accepts first, in declaration order; output always uses the wrapper;
 * - long: JSON number when a safe integer, decimal string beyond ±(2^53 − 1);
 * - bytes/fixed: base64; decimal: a string with the scale's fraction digits; timestamps: RFC 3339
 *   (output in UTC `Z`); date: YYYY-MM-DD; time: HH:MM:SS.fff; uuid: string; float/double:
 *   any JSON number (the safe-integer rule is int/long's), NaN/±Infinity: the strings "NaN",
 *   "Infinity", "-Infinity"; string (and map keys): well-formed Unicode only — a lone surrogate
 *   (`"\ud800"`) has no UTF-8 form and is refused, naming the field.
 * Spec: Avro 1.11 §"Complex Types", §"Logical Types", §"JSON Encoding" (union wrapper).
 */
import avsc from 'avsc';
import type { Type } from 'avsc';
import type { JsonValue } from '../../envelope/types.js';
import { isLongValue, MappedLogicalType } from './avro-types.js';
import type { LongValue } from './avro-types.js';
import {
  formatDateDays,
  formatDecimal,
  formatFloating,
  formatLong,
  formatTimeOfDay,
  formatTimestamp,
  parseBase64,
  parseDateDays,
  parseDecimal,
  parseFloating,
  parseInt32,
  parseLong,
  parseString,
  parseTimeOfDay,
  parseTimestamp,
  parseUuid,
  Reason,
  wellFormedProblem,
} from './logical.js';

/** One problem in the data: `field` is a JSON pointer (RFC 6901) into the natural JSON, '' = the whole value. */
export interface Violation {
  readonly field: string;
  readonly reason: string;
}

/** Natural JSON → Avro-ready value. On a problem: pushes to `out` and returns undefined. */
export type ToAvro = (json: unknown, path: string, out: Violation[]) => unknown;
/** Avro-ready (or decoded) value → natural JSON. Throws {@link JsonMappingError} on a value the type cannot hold. */
export type ToJson = (value: unknown, path: string) => JsonValue;

export interface Compiled {
  readonly toAvro: ToAvro;
  readonly toJson: ToJson;
}

/** Raised by a {@link ToJson} converter; the public API turns it into a GatewayError. */
export class JsonMappingError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

/** RFC 6901 reference token of a member name. */
export function pointerToken(name: string): string {
  return `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);
}

/** A converter for a scalar parsed by `parse` (Reason = refusal) and printed by `format` (undefined = cannot print). */
function scalar<A>(parse: (v: unknown) => A | Reason, check: (v: unknown) => v is A, format: (v: A) => JsonValue | undefined, what: string): Compiled {
  return {
    toAvro(json, path, out) {
      const r = parse(json);
      if (r instanceof Reason) {
        out.push({ field: path, reason: r.text });
        return undefined;
      }
      return r;
    },
    toJson(value, path) {
      if (!check(value)) throw new JsonMappingError(path, `value is not a valid ${what}`);
      const j = format(value);
      if (j === undefined) throw new JsonMappingError(path, `value cannot be written as ${what}`);
      return j;
    },
  };
}

const isNumber = (v: unknown): v is number => typeof v === 'number';
const isInt = (v: unknown): v is number => typeof v === 'number' && (v | 0) === v;
const isString = (v: unknown): v is string => typeof v === 'string';
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
const toBase64 = (v: Uint8Array): string => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');

function compileLogical(type: MappedLogicalType): Compiled {
  const l = type.logical;
  switch (l.name) {
    case 'timestamp-millis':
    case 'timestamp-micros': {
      const micros = l.name === 'timestamp-micros';
      return scalar<LongValue>((v) => parseTimestamp(v, micros), isLongValue, (v) => formatTimestamp(v, micros), `${l.name} (RFC 3339, years 0000–9999)`);
    }
    case 'time-millis':
      return scalar<number>((v) => parseTimeOfDay(v, false), isInt, (v) => formatTimeOfDay(v, false), 'time-millis');
    case 'time-micros':
      return scalar<LongValue>((v) => parseTimeOfDay(v, true), isLongValue, (v) => formatTimeOfDay(v, true), 'time-micros');
    case 'date':
      return scalar<number>(parseDateDays, isInt, formatDateDays, 'date (years 0000–9999)');
    case 'uuid':
      return scalar<string>(parseUuid, isString, (v) => v, 'uuid');
    case 'decimal':
      return scalar<Uint8Array>((v) => parseDecimal(v, l), isBytes, (v) => formatDecimal(v, l.scale), 'decimal');
  }
}

function compileUnion(types: readonly Type[], memo: Map<Type, Compiled>): Compiled {
  const nullIndex = types.findIndex((t) => t.typeName === 'null');
  const branches = types.map((t, i) => ({ index: i, type: t, name: t.branchName as string, conv: compileType(t, memo) }));
  const nonNull = branches.filter((b) => b.index !== nullIndex);
  const byName = new Map<string, (typeof branches)[number]>();
  for (const b of nonNull) byName.set(b.name, b);
  for (const b of nonNull) {
    const short = b.name.slice(b.name.lastIndexOf('.') + 1);
    if (short !== b.name && !byName.has(short) && nonNull.filter((o) => o.name.endsWith(`.${short}`)).length === 1) byName.set(short, b);
  }
  const listing = branches.map((b) => b.name).join(', ');
  const single = nonNull.length === 1 ? nonNull[0] : undefined;

  const wrapped = (json: unknown): (typeof branches)[number] | undefined => {
    if (!isPlainObject(json)) return undefined;
    let found: (typeof branches)[number] | undefined;
    let count = 0;
    for (const k in json) {
      if (++count > 1) return undefined;
      found = byName.get(k);
    }
    if (found === undefined) return undefined;
    // A record or map branch may legitimately have a member of that name: then the value is bare.
    if (single !== undefined) {
      const t = single.type;
      if (t.typeName === 'map') return undefined;
      if (t instanceof avsc.types.RecordType && t.fields.some((f) => byName.has(f.name))) return undefined;
    }
    return found;
  };

  // `{"null": …}`: the null branch named like the others (Avro 1.11 §"JSON Encoding" writes a
  // null branch as bare null, but a partner that wraps every branch sends this). Taken as null
  // unless a lone map or record branch may itself have a member "null" (then the value is bare).
  const wrappedNull = (json: unknown): json is { null: unknown } => {
    if (nullIndex < 0 || !isPlainObject(json)) return false;
    let count = 0;
    for (const k in json) if (++count > 1 || k !== 'null') return false;
    if (count !== 1) return false;
    if (single !== undefined) {
      const t = single.type;
      if (t.typeName === 'map') return false;
      if (t instanceof avsc.types.RecordType && t.fields.some((f) => f.name === 'null')) return false;
    }
    return true;
  };

  const toAvro: ToAvro = (json, path, out) => {
    if (json === null) {
      if (nullIndex >= 0) return null;
      out.push({ field: path, reason: `null is not allowed here (union of ${listing})` });
      return undefined;
    }
    if (wrappedNull(json)) {
      if (json.null === null) return null;
      out.push({ field: path + pointerToken('null'), reason: 'the null branch holds only null' });
      return undefined;
    }
    const w = wrapped(json);
    if (w !== undefined) {
      const key = Object.keys(json as object)[0] as string;
      const v = w.conv.toAvro((json as Record<string, unknown>)[key], path + pointerToken(key), out);
      return v === undefined ? undefined : { [w.name]: v };
    }
    if (single !== undefined) {
      const v = single.conv.toAvro(json, path, out);
      return v === undefined ? undefined : { [single.name]: v };
    }
    // A bare integer beyond ±(2^53 − 1) was rounded by the JSON parser: an int/long branch refuses
    // it, and a float/double branch must not take the rounded number in its place.
    if (typeof json === 'number' && Number.isInteger(json) && !Number.isSafeInteger(json) && nonNull.some((b) => b.type.typeName === 'int' || b.type.typeName === 'long' || b.type.typeName === 'abstract:long')) {
      out.push({ field: path, reason: `integer ${json} is beyond ±9007199254740991, so JSON parsers round it: send a long as a decimal string, or name the branch ({"double": …}) for a double` });
      return undefined;
    }
    for (const b of nonNull) {
      const trial: Violation[] = [];
      const v = b.conv.toAvro(json, path, trial);
      if (trial.length === 0) return { [b.name]: v };
    }
    // No branch takes an ill-formed string (string, enum, uuid, bytes…): say why rather than "no branch".
    const problem = typeof json === 'string' ? wellFormedProblem(json) : undefined;
    out.push({ field: path, reason: problem ?? `matches no branch of the union (${listing}); name the branch as {"<branch>": value}` });
    return undefined;
  };

  const byBranchName = new Map(branches.map((b) => [b.name, b]));
  const toJson: ToJson = (value, path) => {
    if (value === null) {
      if (nullIndex >= 0) return null;
      throw new JsonMappingError(path, 'null is not a branch of the union');
    }
    if (typeof value === 'object') {
      const keys = Object.keys(value);
      const b = keys.length === 1 ? byBranchName.get(keys[0] as string) : undefined;
      if (b !== undefined) {
        const j = b.conv.toJson((value as Record<string, unknown>)[b.name], path);
        return single !== undefined ? j : { [b.name]: j };
      }
    }
    throw new JsonMappingError(path, `value is not a wrapped branch of the union (${listing})`);
  };
  return { toAvro, toJson };
}

function compileRecord(type: avsc.types.RecordType, memo: Map<Type, Compiled>): Compiled {
  const slot: { toAvro: ToAvro; toJson: ToJson } = {
    toAvro: () => undefined,
    toJson: () => null,
  };
  // Registered before compiling fields, so recursive records resolve to this slot.
  memo.set(type, { toAvro: (j, p, o) => slot.toAvro(j, p, o), toJson: (v, p) => slot.toJson(v, p) });

  const fields = type.fields.map((f) => {
    const fieldType = f.type;
    const defaultValue: unknown = f.defaultValue();
    const primitiveDefault = defaultValue === null || ['string', 'number', 'boolean'].includes(typeof defaultValue);
    return {
      name: f.name,
      pointer: pointerToken(f.name),
      conv: compileType(fieldType, memo),
      hasDefault: defaultValue !== undefined,
      defaultOf: primitiveDefault ? () => defaultValue : () => f.defaultValue() as unknown,
      nullable: fieldType.typeName === 'union:wrapped' && (fieldType as avsc.types.WrappedUnionType).types.some((t) => t.typeName === 'null'),
    };
  });
  const known = new Set(fields.map((f) => f.name));
  const label = type.name ?? 'record';

  slot.toAvro = (json, path, out) => {
    if (!isPlainObject(json)) {
      out.push({ field: path, reason: `expected an object (${label})` });
      return undefined;
    }
    const rec: Record<string, unknown> = {};
    let seen = 0;
    for (const f of fields) {
      // An own member whose value is undefined (possible from JS callers, never from JSON) counts as absent.
      const v = Object.hasOwn(json, f.name) ? json[f.name] : undefined;
      if (v !== undefined) {
        seen++;
        rec[f.name] = f.conv.toAvro(v, path + f.pointer, out);
      } else if (f.hasDefault) {
        rec[f.name] = f.defaultOf();
      } else if (f.nullable) {
        rec[f.name] = null;
      } else {
        out.push({ field: path + f.pointer, reason: 'required field is missing' });
      }
    }
    if (seen !== Object.keys(json).length) {
      for (const k of Object.keys(json)) {
        if (!known.has(k)) out.push({ field: path + pointerToken(k), reason: `unknown field (not in ${label})` });
      }
    }
    return rec;
  };
  slot.toJson = (value, path) => {
    if (typeof value !== 'object' || value === null) throw new JsonMappingError(path, `expected a record (${label})`);
    const src = value as Record<string, unknown>;
    const out: Record<string, JsonValue> = {};
    for (const f of fields) out[f.name] = f.conv.toJson(src[f.name], path + f.pointer);
    return out;
  };
  return memo.get(type) as Compiled;
}

const PROTO_KEY = '__proto__';

/** Compiles (or returns the memoised) converters of `type`. */
export function compileType(type: Type, memo: Map<Type, Compiled>): Compiled {
  const hit = memo.get(type);
  if (hit !== undefined) return hit;
  const compiled = build(type, memo);
  memo.set(type, compiled);
  return compiled;
}

function build(type: Type, memo: Map<Type, Compiled>): Compiled {
  if (type instanceof MappedLogicalType) return compileLogical(type);
  switch (type.typeName) {
    case 'null':
      return scalar<null>((v) => (v === null ? null : new Reason('expected null')), (v): v is null => v === null, () => null, 'null');
    case 'boolean':
      return scalar<boolean>((v) => (typeof v === 'boolean' ? v : new Reason('expected a boolean')), isBool, (v) => v, 'boolean');
    case 'int':
      return scalar<number>(parseInt32, isInt, (v) => v, 'int');
    case 'long':
    case 'abstract:long':
      return scalar<LongValue>(parseLong, isLongValue, formatLong, 'long');
    case 'float':
      return scalar<number>((v) => parseFloating(v, true), isNumber, formatFloating, 'float');
    case 'double':
      return scalar<number>((v) => parseFloating(v, false), isNumber, formatFloating, 'double');
    case 'string':
      return scalar<string>(parseString, isString, (v) => v, 'string');
    case 'bytes':
      return scalar<Uint8Array>((v) => parseBase64(v), isBytes, toBase64, 'bytes');
    case 'fixed': {
      const size = (type as avsc.types.FixedType).size;
      return scalar<Uint8Array>((v) => parseBase64(v, size), (v): v is Uint8Array => isBytes(v) && v.length === size, toBase64, `fixed(${size})`);
    }
    case 'enum': {
      const symbols = new Set((type as avsc.types.EnumType).symbols);
      const listing = [...symbols].join(', ');
      const isSymbol = (v: unknown): v is string => typeof v === 'string' && symbols.has(v);
      return scalar<string>((v) => (isSymbol(v) ? v : new Reason(`expected one of ${listing}`)), isSymbol, (v) => v, `enum symbol (${listing})`);
    }
    case 'array': {
      const items = compileType((type as avsc.types.ArrayType).itemsType, memo);
      return {
        toAvro(json, path, out) {
          if (!Array.isArray(json)) {
            out.push({ field: path, reason: 'expected an array' });
            return undefined;
          }
          const arr: unknown[] = new Array(json.length);
          for (let i = 0; i < json.length; i++) arr[i] = items.toAvro(json[i], `${path}/${i}`, out);
          return arr;
        },
        toJson(value, path) {
          if (!Array.isArray(value)) throw new JsonMappingError(path, 'expected an array');
          return value.map((v, i) => items.toJson(v, `${path}/${i}`));
        },
      };
    }
    case 'map': {
      const values = compileType((type as avsc.types.MapType).valuesType as Type, memo);
      return {
        toAvro(json, path, out) {
          if (!isPlainObject(json)) {
            out.push({ field: path, reason: 'expected an object (map)' });
            return undefined;
          }
          const map: Record<string, unknown> = {};
          for (const k of Object.keys(json)) {
            // On a plain object `map.__proto__ = v` sets the prototype: the member would vanish
            // silently, here and in every JavaScript reader (avsc decodes maps into plain objects).
            if (k === PROTO_KEY) out.push({ field: path + pointerToken(k), reason: 'the map key "__proto__" is refused: JavaScript readers (avsc, this gateway) cannot hold it and would drop it' });
            else {
              // Map keys are Avro strings too (UTF-8 on the wire).
              const problem = wellFormedProblem(k);
              if (problem !== undefined) out.push({ field: path + pointerToken(k), reason: `map key: ${problem}` });
              else map[k] = values.toAvro(json[k], path + pointerToken(k), out);
            }
          }
          return map;
        },
        toJson(value, path) {
          if (!isPlainObject(value)) throw new JsonMappingError(path, 'expected a map');
          const out: Record<string, JsonValue> = {};
          for (const k of Object.keys(value)) out[k] = values.toJson(value[k], path + pointerToken(k));
          return out;
        },
      };
    }
    case 'record':
    case 'error':
      return compileRecord(type as avsc.types.RecordType, memo);
    case 'union:wrapped':
      return compileUnion((type as avsc.types.WrappedUnionType).types, memo);
    default:
      throw new Error(`unsupported Avro type ${type.typeName}; build types with avroType()`);
  }
}
