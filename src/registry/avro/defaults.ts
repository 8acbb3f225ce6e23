/**
 * Field default values: each must be a valid JSON encoding of the field's type, and a union's
 * default must be a value of its FIRST branch.
 * Spec: Avro 1.11 §"Complex Types" → Records, the field "default" table (JSON encoding of defaults)
 * and the note "when a default value is specified for a record field whose type is a union, the
 * type of the default value must match the first element of the union". Stricter where avsc (the
 * encoder) cannot load the schema: a long default beyond ±(2^53−2), and the strings "NaN",
 * "Infinity", "-Infinity" as float/double defaults (the spec's JSON encoding is a number).
 */
import { describeType, joinPath } from './model.js';
import type { AvroNode, RecordNode, SchemaProblem } from './model.js';

const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;
/** −2^63, exact as a double; 2^63 (= −LONG_MIN) is the first value above the long range. */
const LONG_MIN = -(2 ** 63);
/** avsc's bound for a long held as a JavaScript number (avsc lib/types.js `isSafeLong`: 2^53 − 2). */
const AVSC_LONG_MAX = 2 ** 53 - 2;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Answers already worked out for a (type, JSON object or array) pair, within one default's check. */
type Verdicts = Map<AvroNode, WeakMap<object, { readonly problem: string | undefined }>>;

/**
 * Why `value` is not a valid default for `type`; undefined when it is.
 * Linear in the default's size times the schema's types: each (type, object or array of the
 * default) pair is judged once. Without that, a union of two records that both hold the union
 * (`A { x: ["null", A, B] }`, `B { x: ["null", A, B] }`) was tried branch after branch at every
 * level of a wrong default, 2^levels calls: a 24-level default held `schemas check` for a minute,
 * 30 levels for hours (break report hE, 2026-12-07).
 */
export function defaultValueProblem(type: AvroNode, value: unknown, depth = 0, verdicts: Verdicts = new Map()): string | undefined {
  if (typeof value !== 'object' || value === null) return judgeDefault(type, value, depth, verdicts);
  let byValue = verdicts.get(type);
  if (byValue === undefined) verdicts.set(type, (byValue = new WeakMap()));
  const known = byValue.get(value);
  if (known !== undefined) return known.problem;
  const problem = judgeDefault(type, value, depth, verdicts);
  byValue.set(value, { problem });
  return problem;
}

function judgeDefault(type: AvroNode, value: unknown, depth: number, verdicts: Verdicts): string | undefined {
  if (depth > 64) return undefined; // a default this deep is a recursive record; stop rather than loop
  const bad = (): string => `${JSON.stringify(value)} is not a ${describeType(type)}`;
  switch (type.kind) {
    case 'primitive':
      switch (type.type) {
        case 'null':
          return value === null ? undefined : bad();
        case 'boolean':
          return typeof value === 'boolean' ? undefined : bad();
        case 'int':
          return typeof value === 'number' && Number.isInteger(value) && value >= INT_MIN && value <= INT_MAX ? undefined : bad();
        case 'long':
          if (typeof value !== 'number' || !Number.isInteger(value)) return bad();
          if (value < LONG_MIN || value >= -LONG_MIN) return `${JSON.stringify(value)} is outside the long range (−2^63 to 2^63−1)`;
          return Math.abs(value) <= AVSC_LONG_MAX
            ? undefined
            : `${JSON.stringify(value)} (as read: JSON numbers beyond 2^53 lose digits) is beyond ±${AVSC_LONG_MAX} (2^53−2), the longs avsc, which this project encodes with, holds exactly: it refuses this default; use one within that range`;
        case 'float':
        case 'double':
          if (value === 'NaN' || value === 'Infinity' || value === '-Infinity') {
            return `${JSON.stringify(value)} is not a ${type.type} default: the Avro 1.11 spec encodes a ${type.type} default as a JSON number, and avsc, which this project encodes with, refuses the strings "NaN", "Infinity" and "-Infinity" (use a number, or make the field ["null", ${type.type}] with default null)`;
          }
          return typeof value === 'number' ? undefined : bad();
        case 'bytes':
          return typeof value === 'string' && [...value].every((c) => c.charCodeAt(0) <= 0xff) ? undefined : `${JSON.stringify(value)} is not bytes (a string of code points 0–255)`;
        case 'string':
          return typeof value === 'string' ? undefined : bad();
      }
      return undefined;
    case 'fixed':
      if (typeof value !== 'string' || [...value].some((c) => c.charCodeAt(0) > 0xff)) return `${JSON.stringify(value)} is not a ${describeType(type)} (a string of code points 0–255)`;
      return value.length === type.size ? undefined : `${JSON.stringify(value)} has ${value.length} bytes, ${describeType(type)} has ${type.size}`;
    case 'enum':
      return typeof value === 'string' && type.symbols.includes(value) ? undefined : `${JSON.stringify(value)} is not a symbol of ${describeType(type)}`;
    case 'array':
      if (!Array.isArray(value)) return bad();
      for (const item of value) {
        const p = defaultValueProblem(type.items, item, depth + 1, verdicts);
        if (p !== undefined) return `item ${p}`;
      }
      return undefined;
    case 'map':
      if (!isObject(value)) return bad();
      for (const [k, v] of Object.entries(value)) {
        const p = defaultValueProblem(type.values, v, depth + 1, verdicts);
        if (p !== undefined) return `entry "${k}": ${p}`;
      }
      return undefined;
    case 'record':
      if (!isObject(value)) return bad();
      for (const f of type.fields) {
        // Own properties only: `in` also finds Object.prototype's, so a field named `constructor`
        // or `toString` left out of the default was judged as the inherited function
        // ("undefined is not a string").
        if (Object.hasOwn(value, f.name)) {
          const p = defaultValueProblem(f.type, value[f.name], depth + 1, verdicts);
          if (p !== undefined) return `field "${f.name}": ${p}`;
        } else if (!f.hasDefault) return `field "${f.name}" is missing (it has no default of its own)`;
        else if (f.name in Object.prototype) return `field "${f.name}" must be written in the default: avsc, which this project encodes with, reads a left-out "${f.name}" as JavaScript's Object.prototype.${f.name} and refuses the default (the Avro spec would take the field's own default)`;
      }
      return undefined;
    case 'union': {
      const first = type.branches[0];
      if (first === undefined) return 'an empty union has no values';
      const p = defaultValueProblem(first, value, depth + 1, verdicts);
      if (p === undefined) return undefined;
      const other = type.branches.slice(1).find((b) => defaultValueProblem(b, value, depth + 1, verdicts) === undefined);
      return other === undefined
        ? p
        : `${JSON.stringify(value)} matches the branch ${describeType(other)}, but a union default must match the FIRST branch (${describeType(first)}); list ${describeType(other)} first or change the default`;
    }
  }
}

/**
 * Every invalid field default in the schema graph, with the field path. Never throws.
 * Spec: Avro 1.11 §"Complex Types" → Records (field defaults; union defaults match the first branch).
 */
export function defaultProblems(root: AvroNode): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const visited = new Set<RecordNode>();
  const walk = (node: AvroNode, path: string): void => {
    switch (node.kind) {
      case 'record':
        if (visited.has(node)) return;
        visited.add(node);
        for (const f of node.fields) {
          const fpath = joinPath(path, 'fields', f.name);
          if (f.hasDefault) {
            const p = defaultValueProblem(f.type, f.default);
            if (p !== undefined) problems.push({ path: fpath, message: `invalid default: ${p}` });
          }
          walk(f.type, fpath);
        }
        return;
      case 'array':
        walk(node.items, joinPath(path, 'items'));
        return;
      case 'map':
        walk(node.values, joinPath(path, 'values'));
        return;
      case 'union':
        for (const b of node.branches) walk(b, path);
        return;
      default:
        return;
    }
  };
  walk(root, '/');
  return problems;
}
