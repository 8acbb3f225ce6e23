/**
 * JSON text → value, for request bodies. UTF-8 is checked (JSON text exchanged between systems
 * MUST be UTF-8), a leading BOM is ignored, and no exception escapes.
 * Spec: RFC 8259 §8.1 (UTF-8; parsers MAY ignore a BOM).
 */
import { isUtf8 } from 'node:buffer';

/** Parsed JSON, or the reason the text is not JSON. */
export type JsonParse = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: string };

/** Parses `body` (bytes or text) as one JSON value. Never throws. */
export function parseJsonText(body: Uint8Array | string): JsonParse {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    if (!isUtf8(body)) return { ok: false, reason: 'not valid UTF-8' };
    text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return parseText(text);
}

function parseText(text: string): JsonParse {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, reason: `not valid JSON (${err instanceof Error ? err.message : String(err)})` };
  }
}
