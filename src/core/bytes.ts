/**
 * Byte comparison for the hot paths that cache by content (header names and values of consumed
 * records): a plain loop, cheaper than `Buffer.compare` or `Buffer.equals` for the few dozen bytes
 * of a header (no native call), and working on any Uint8Array, Buffer or not.
 */

/** Whether `a` and `b` hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && sameBytesAt(a, b, 0);
}

/** Whether `buf` holds the bytes of `a` from offset `at` (the caller checks `at + a.length` is within `buf`). */
export function sameBytesAt(a: Uint8Array, buf: Uint8Array, at: number): boolean {
  // `length`, read once (a Uint8Array's length is its byteLength): `byteLength` in the loop's test
  // made each call ~10× slower on Node 20 (273 vs 29 ns for a 25-byte header; 24 calls per consumed
  // record, 5 % of a push gateway's CPU in the issue 8 profile).
  const n = a.length;
  for (let i = 0; i < n; i++) if (a[i] !== buf[at + i]) return false;
  return true;
}
