/**
 * The natural-JSON shape of an Avro schema: what partners send over HTTP and handlers receive,
 * as codec/data maps it. The TypeScript generator and the JSON Schema export both read this one
 * model, so neither can describe a different shape than the codec accepts.
 *
 * The model is built from the avsc Type that codec/data builds (`avroType`), not from the schema
 * text, so logical-type fallbacks, name resolution and union branch names are exactly the codec's.
 * Mapping (codec/data/compile.ts): records → objects without unknown members; `["null", T]` and
 * other single-branch unions → the bare value (or null); other unions → `{"<branch>": value}`;
 * long → number or decimal string; bytes/fixed → base64; decimal → string with the scale's digits;
 * timestamps → RFC 3339; date → YYYY-MM-DD; time → HH:MM:SS.fff; uuid → string; float/double →
 * number or "NaN"/"Infinity"/"-Infinity".
 * Spec: Avro 1.11 §"Complex Types", §"Logical Types", §"JSON Encoding" (union wrapper);
 * DESIGN "The model is the schema registry" (types and JSON Schemas come from the one model).
 */
import type avsc from 'avsc';
import type { Type } from 'avsc';
import { avroToJson, avroType, MappedLogicalType } from '../../codec/data/index.js';
import type { JsonValue } from '../../envelope/types.js';

/** One record of the model; `fields` is filled after the record is registered (records may recur). */
export interface RecordShape {
  readonly kind: 'record';
  /** Fully qualified Avro name, e.g. `caishen.trading.ChartBar`. */
  readonly fullName: string;
  readonly doc: string | undefined;
  readonly fields: FieldShape[];
}

/** One record field. */
export interface FieldShape {
  readonly name: string;
  readonly doc: string | undefined;
  readonly shape: Shape;
  /**
   * true when a sender may leave the member out: the field has a default, or its type is a union
   * with null (then it is null). Received data always has every member.
   */
  readonly optional: boolean;
  /** The field default in natural JSON, when the schema declares one. */
  readonly default?: JsonValue;
}

/** A union branch of a wrapped union: the wrapper key (codec output: the full branch name) and its shape. */
export interface BranchShape {
  readonly name: string;
  readonly shape: Shape;
}

/** The natural-JSON shape of one Avro type. */
export type Shape =
  | { readonly kind: 'null' | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'string' | 'bytes' }
  | { readonly kind: 'fixed'; readonly fullName: string; readonly size: number; readonly doc: string | undefined }
  | { readonly kind: 'enum'; readonly fullName: string; readonly symbols: readonly string[]; readonly doc: string | undefined }
  | { readonly kind: 'timestamp-millis' | 'timestamp-micros' | 'time-millis' | 'time-micros' | 'date' | 'uuid' }
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number; readonly fixedSize?: number }
  | { readonly kind: 'array'; readonly items: Shape }
  | { readonly kind: 'map'; readonly values: Shape }
  /** A union with null and exactly one other branch, or a single-branch union: the bare value (or null). */
  | { readonly kind: 'nullable'; readonly value: Shape; readonly nullable: boolean }
  /** Any other union: exactly one `{"<branch>": value}` member, or null when `nullable`. */
  | { readonly kind: 'union'; readonly branches: readonly BranchShape[]; readonly nullable: boolean }
  | RecordShape;

/** The root of a kind's payload: always a record (the catalog checks that). */
export interface PayloadShape {
  readonly root: RecordShape;
}

/**
 * The natural-JSON shape of a catalog schema (Avro JSON text whose top level is a record).
 * Errors: GatewayError CEG_SCHEMA_INVALID (retriable: false) when the text is not a valid Avro
 *   schema; Error when the top level is not a record (the catalog refuses such schemas at load).
 */
export function payloadShape(schemaText: string): PayloadShape {
  const type = avroType(schemaText);
  const root = shapeOf(type, new Map<Type, Shape>());
  if (root.kind !== 'record') throw new Error(`top-level schema ${type.name ?? ''} is not a record`);
  return { root };
}

function shapeOf(type: Type, records: Map<Type, Shape>): Shape {
  if (type instanceof MappedLogicalType) {
    const l = type.logical;
    if (l.name === 'decimal') {
      return l.fixedSize === undefined
        ? { kind: 'decimal', precision: l.precision, scale: l.scale }
        : { kind: 'decimal', precision: l.precision, scale: l.scale, fixedSize: l.fixedSize };
    }
    return { kind: l.name };
  }
  switch (type.typeName) {
    case 'null':
    case 'boolean':
    case 'int':
    case 'float':
    case 'double':
    case 'string':
    case 'bytes':
      return { kind: type.typeName };
    case 'long':
    case 'abstract:long':
      return { kind: 'long' };
    case 'fixed':
    case 'enum': {
      // Named: one shape object per avsc Type, so a type referenced twice is one shape.
      let named = records.get(type);
      if (named === undefined) {
        named = type.typeName === 'fixed'
          ? { kind: 'fixed', fullName: type.name ?? '', size: (type as avsc.types.FixedType).size, doc: type.doc }
          : { kind: 'enum', fullName: type.name ?? '', symbols: [...(type as avsc.types.EnumType).symbols], doc: type.doc };
        records.set(type, named);
      }
      return named;
    }
    case 'array':
      return { kind: 'array', items: shapeOf((type as avsc.types.ArrayType).itemsType, records) };
    case 'map':
      return { kind: 'map', values: shapeOf((type as avsc.types.MapType).valuesType as Type, records) };
    case 'union:wrapped':
      return unionShape((type as avsc.types.WrappedUnionType).types, records);
    case 'record':
    case 'error':
      return recordShape(type as avsc.types.RecordType, records);
    default:
      throw new Error(`unsupported Avro type ${type.typeName}`);
  }
}

function unionShape(types: readonly Type[], records: Map<Type, Shape>): Shape {
  const nullable = types.some((t) => t.typeName === 'null');
  const others = types.filter((t) => t.typeName !== 'null');
  if (others.length === 0) return { kind: 'null' };
  // codec/data: one non-null branch → the bare value (its output never wraps it).
  if (others.length === 1) return { kind: 'nullable', value: shapeOf(others[0] as Type, records), nullable };
  return {
    kind: 'union',
    nullable,
    branches: others.map((t) => ({ name: t.branchName as string, shape: shapeOf(t, records) })),
  };
}

function recordShape(type: avsc.types.RecordType, records: Map<Type, Shape>): RecordShape {
  const seen = records.get(type);
  if (seen !== undefined) return seen as RecordShape;
  const shape: RecordShape = { kind: 'record', fullName: type.name ?? '', doc: type.doc, fields: [] };
  records.set(type, shape);
  for (const f of type.fields) {
    const fieldType = f.type;
    const defaultValue: unknown = f.defaultValue();
    const nullable = fieldType.typeName === 'union:wrapped' && (fieldType as avsc.types.WrappedUnionType).types.some((t) => t.typeName === 'null');
    const field: FieldShape = {
      name: f.name,
      doc: (f as { doc?: string }).doc,
      shape: shapeOf(fieldType, records),
      optional: defaultValue !== undefined || nullable,
      ...(defaultValue === undefined ? {} : { default: avroToJson(fieldType, defaultValue) }),
    };
    shape.fields.push(field);
  }
  return shape;
}

/** The unqualified part of an Avro full name (`caishen.trading.ChartBar` → `ChartBar`). */
export function shortName(fullName: string): string {
  return fullName.slice(fullName.lastIndexOf('.') + 1);
}

/** Named types (records except `root`, enums, fixed) reachable from `root`, each once, depth-first in field order. */
export function namedTypesOf(root: RecordShape): readonly Shape[] {
  const out: Shape[] = [];
  const seen = new Set<Shape>([root]);
  const visit = (s: Shape): void => {
    switch (s.kind) {
      case 'record':
        if (seen.has(s)) return;
        seen.add(s);
        out.push(s);
        for (const f of s.fields) visit(f.shape);
        return;
      case 'enum':
      case 'fixed':
        if (seen.has(s)) return;
        seen.add(s);
        out.push(s);
        return;
      case 'array':
        visit(s.items);
        return;
      case 'map':
        visit(s.values);
        return;
      case 'nullable':
        visit(s.value);
        return;
      case 'union':
        for (const b of s.branches) visit(b.shape);
        return;
      default:
        return;
    }
  };
  for (const f of root.fields) visit(f.shape);
  return out;
}
