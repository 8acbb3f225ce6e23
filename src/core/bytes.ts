/**
 * Byte comparison for the hot paths that cache by content (header names and values of consumed
 * records): a plain loop, cheaper than `Buffer.compare` or `Buffer.equals` for the few dozen bytes
 * of a header (no native call), and working on any Uint8Array, Buffer or not.
 */

/** Whether `a` and `b` hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
