/**
 * UTF-8 byte counts on hot paths (issue 14): most texts counted per record or per event are short
 * ASCII (header names, attribute names), where a character loop is cheaper than a call into
 * `Buffer.byteLength`.
 */

/** Bytes of `text` in UTF-8: its length when every unit is ASCII, else `Buffer.byteLength` (lone surrogates count 3, as Node encodes them). */
export function utf8Length(text: string): number {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return Buffer.byteLength(text, 'utf8');
  return text.length;
}
