/**
 * A nesting limit for schema JSON, so that a schema nested thousands of levels deep is reported as
 * invalid, naming its file, instead of overflowing the stack of the recursive Avro checks.
 * Spec: Jackson `StreamReadConstraints` (default maximum nesting depth 1000, Jackson 2.15+), which
 * Avro Java — and so the schema registries — parse schemas with.
 */

/** The deepest JSON nesting (objects and arrays) a schema may have. */
export const MAX_SCHEMA_NESTING = 1000;

/**
 * The JSON nesting depth of `text`: the most `{`/`[` open at once, outside strings. Iterative
 * (no recursion), any input (not necessarily valid JSON).
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/** The problem message for a schema nested deeper than {@link MAX_SCHEMA_NESTING}; undefined when within it. */
export function nestingProblem(text: string): string | undefined {
  const depth = jsonNestingDepth(text);
  if (depth <= MAX_SCHEMA_NESTING) return undefined;
  return `JSON nested ${depth} levels deep, more than the ${MAX_SCHEMA_NESTING} this check allows (a schema registry's Avro Java parser refuses such JSON too); flatten the schema`;
}
