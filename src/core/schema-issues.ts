/**
 * Schema validation issues as users should read them.
 *
 * zod 4 runs size checks on any value with a `length`, also after the value failed its type: a
 * string where an array of at most 2 is expected reports "expected array" and "Too big: expected
 * string to have <=2 characters". The second is noise about a value that is already wrong, so an
 * issue at a path that has a type issue is dropped. Likewise `.int()`'s safe-integer range next to
 * the field's own bound (1–1000): the declared bound is the one a user can act on.
 */
import type { z } from 'zod';

/**
 * The issues, without those at a path that also has an `invalid_type` issue (that one says what is wrong).
 * Order is kept. Pure.
 */
export function schemaIssues(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  const mistyped = new Set(issues.filter((i) => i.code === 'invalid_type').map((i) => pathKey(i.path)));
  const typed = mistyped.size === 0 ? [...issues] : issues.filter((i) => i.code === 'invalid_type' || !mistyped.has(pathKey(i.path)));
  // `.int()` adds its own safe-integer bound: beside the field's declared bound (1–1000) it only
  // misleads ("expected int to be <=9007199254740991" for concurrency 1e308).
  const bounded = new Set(typed.filter((i) => (i.code === 'too_big' || i.code === 'too_small') && !isSafeIntegerBound(i)).map((i) => `${i.code}${pathKey(i.path)}`));
  return typed.filter((i) => !((i.code === 'too_big' || i.code === 'too_small') && isSafeIntegerBound(i) && bounded.has(`${i.code}${pathKey(i.path)}`))).map(withKeyReason);
}

/**
 * A record key refused by its own schema: zod says only "Invalid key in record" and keeps the key
 * schema's messages (which say the rule: "exit codes are integers 0–255") nested; those are the message.
 */
function withKeyReason(i: z.core.$ZodIssue): z.core.$ZodIssue {
  if (i.code !== 'invalid_key' || i.issues.length === 0) return i;
  return { ...i, message: `key ${JSON.stringify(String(i.path[i.path.length - 1] ?? ''))}: ${[...new Set(i.issues.map((n) => n.message))].join('; ')}` };
}

/** Whether an issue is the safe-integer range `.int()` checks. */
function isSafeIntegerBound(i: z.core.$ZodIssue): boolean {
  if (i.code === 'too_big') return i.origin === 'int' && i.maximum === Number.MAX_SAFE_INTEGER;
  if (i.code === 'too_small') return i.origin === 'int' && i.minimum === Number.MIN_SAFE_INTEGER;
  return false;
}

function pathKey(path: readonly PropertyKey[]): string {
  return JSON.stringify(path.map((p) => (typeof p === 'symbol' ? p.toString() : p)));
}
