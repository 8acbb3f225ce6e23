/**
 * Schema validation issues as users should read them.
 *
 * zod 4 runs size checks on any value with a `length`, also after the value failed its type: a
 * string where an array of at most 2 is expected reports "expected array" and "Too big: expected
 * string to have <=2 characters". The second is noise about a value that is already wrong, so an
 * issue at a path that has a type issue is dropped.
 */
import type { z } from 'zod';

/**
 * The issues, without those at a path that also has an `invalid_type` issue (that one says what is wrong).
 * Order is kept. Pure.
 */
export function schemaIssues(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  const mistyped = new Set(issues.filter((i) => i.code === 'invalid_type').map((i) => pathKey(i.path)));
  if (mistyped.size === 0) return [...issues];
  return issues.filter((i) => i.code === 'invalid_type' || !mistyped.has(pathKey(i.path)));
}

function pathKey(path: readonly PropertyKey[]): string {
  return JSON.stringify(path.map((p) => (typeof p === 'symbol' ? p.toString() : p)));
}
