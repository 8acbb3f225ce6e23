/**
 * Walks of JSON data: find numbers JSON cannot hold (non-finite ones, which only a JavaScript
 * caller can put there) and nesting too deep, freezing on the way when asked. Iterative, no
 * per-node allocation unless a problem is found.
 * Integers beyond ±(2^53−1) are not refused here: whether such a number is wrong depends on the
 * schema, unknown at this point. An Avro `int`/`long` refuses it (codec/data `parseLong`: JSON
 * parsers round it, so it must come as a decimal string); a `float`/`double` takes it (`1e16` and
 * `1e300` are doubles, as every JSON parser reads them). Attributes use {@link unsafeNumberReason}.
 * Spec: RFC 8259 §6 (interoperable range is IEEE 754 double; integers beyond ±(2^53−1) lose
 * precision); RFC 6901 (JSON Pointer).
 */

/**
 * Deepest nesting of objects/arrays accepted in data. JSON.parse accepts any depth, but a
 * recursive walk, JSON.stringify and Avro encoding overflow the stack on hostile input.
 */
export const MAX_JSON_DEPTH = 256;

const TILDE = /~/g;
const SLASH = /\//g;

/** RFC 6901 escaping of one reference token. */
export function escapePointerToken(token: string): string {
  return token.includes('~') || token.includes('/') ? token.replace(TILDE, '~0').replace(SLASH, '~1') : token;
}

/** Reason for a number JSON cannot carry faithfully as an integer (attributes: Integer), else undefined. */
export function unsafeNumberReason(n: number): string | undefined {
  if (!Number.isFinite(n)) return 'number is not finite';
  if (Number.isInteger(n) && !Number.isSafeInteger(n)) {
    return `integer is beyond ±${Number.MAX_SAFE_INTEGER} and loses precision in JSON; send it as a string`;
  }
  return undefined;
}

const NOT_FINITE = 'number is not finite';

/**
 * Calls `report(pointer, reason)` for every non-finite number inside `value`, and for nesting
 * deeper than {@link MAX_JSON_DEPTH} (not descended further); pointers start with `base` (e.g.
 * `/data`). When `freeze` is true every object and array is frozen on the way.
 * Returns the number of problems reported. Large integers are left to the schema (module comment).
 */
export function inspectJson(value: unknown, base: string, freeze: boolean, report: (pointer: string, reason: string) => void): number {
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return 0;
    report(base, NOT_FINITE);
    return 1;
  }
  if (typeof value !== 'object' || value === null) return 0;
  const path: string[] = [];
  return walk(value, path, base, freeze, report);
}

function walk(node: object, path: string[], base: string, freeze: boolean, report: (pointer: string, reason: string) => void): number {
  if (path.length >= MAX_JSON_DEPTH) {
    report(pointer(base, path.slice(0, -1), path[path.length - 1] ?? ''), `nesting is deeper than ${MAX_JSON_DEPTH} levels`);
    return 1;
  }
  let problems = 0;
  if (Array.isArray(node)) {
    const arr = node as unknown[];
    for (let i = 0; i < arr.length; i++) {
      const child = arr[i];
      if (typeof child === 'number') {
        if (!Number.isFinite(child)) {
          report(pointer(base, path, String(i)), NOT_FINITE);
          problems++;
        }
      } else if (typeof child === 'object' && child !== null) {
        path.push(String(i));
        problems += walk(child, path, base, freeze, report);
        path.pop();
      }
    }
  } else {
    const obj = node as Record<string, unknown>;
    for (const key in obj) {
      const child = obj[key];
      if (typeof child === 'number') {
        if (!Number.isFinite(child)) {
          report(pointer(base, path, key), NOT_FINITE);
          problems++;
        }
      } else if (typeof child === 'object' && child !== null) {
        path.push(key);
        problems += walk(child, path, base, freeze, report);
        path.pop();
      }
    }
  }
  if (freeze) Object.freeze(node);
  return problems;
}

function pointer(base: string, path: readonly string[], last: string): string {
  let p = base;
  for (const seg of path) p += '/' + escapePointerToken(seg);
  return p + '/' + escapePointerToken(last);
}
