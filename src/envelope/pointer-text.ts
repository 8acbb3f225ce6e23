/**
 * A JSON pointer (or member name) as a refusal echoes it: bounded, so that an input with long
 * member names or deep nesting cannot make the answer and its log line larger than the input
 * (a 772 KB body nested 257 levels with 3,000-character names was answered with its 765,262-
 * character pointer twice: break report 2026-12-06).
 * Spec: RFC 6901 (JSON Pointer); docs/errors.md CEG_INVALID_EVENT (the cut).
 */

/**
 * Longest JSON pointer (and member name) echoed in a refusal, characters: a longer one keeps its
 * first and last 127 characters around an ellipsis "…".
 */
export const MAX_POINTER_CHARS = 256;
/** Characters kept at each end of a cut pointer: (256 − the ellipsis) / 2, rounded down. */
const POINTER_END_CHARS = 127;

/**
 * `text` when at most {@link MAX_POINTER_CHARS} long, else its first and last characters around
 * "…" ({@link MAX_POINTER_CHARS} in all), never splitting a surrogate pair. Pure.
 */
export function shortenPointer(text: string): string {
  if (text.length <= MAX_POINTER_CHARS) return text;
  let head = POINTER_END_CHARS;
  let tail = text.length - POINTER_END_CHARS;
  if (isHighSurrogate(text.charCodeAt(head - 1))) head--;
  if (isLowSurrogate(text.charCodeAt(tail))) tail++;
  return `${text.slice(0, head)}…${text.slice(tail)}`;
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
