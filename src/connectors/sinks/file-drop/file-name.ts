/**
 * File names for dropped events: derived from `source` + `id` (the identity of an event, so a
 * redelivered event gets the same name and overwrites its own file), in a strict charset.
 * Encoding: each UTF-8 byte outside [A-Za-z0-9-] becomes `_XX` (uppercase hex), so `_` and `.`
 * only appear as escapes; a leading `-` is escaped too (no file name looks like an option).
 * Name: `<source>__<id>.json`, injective (distinct events, distinct names). When that would be
 * longer than {@link MAX_PLAIN_NAME}, `<source cut>__<id cut>.<sha256 prefix>.json` (the hash over
 * the full source and id keeps distinct events apart; the extra `.` keeps both forms apart).
 * Spec: CloudEvents 1.0.2 §3.1.1 (`source` + `id` identify an event); bus spec S4 (dedup by
 * source+id).
 */
import { createHash } from 'node:crypto';

/** Longest plain (unhashed) file name, bytes; every name stays well under the 255-byte limit. */
export const MAX_PLAIN_NAME = 200;
const CUT = 80;
const PLAIN = /[A-Za-z0-9-]/;

/** The escaped form of `text` (see module doc). */
export function encodeNamePart(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const ch = String.fromCharCode(byte);
    if (byte < 0x80 && PLAIN.test(ch) && !(out === '' && ch === '-')) out += ch;
    else out += `_${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Cuts an encoded part to `max` characters without splitting an `_XX` escape. */
function cutEncoded(s: string, max: number): string {
  if (s.length <= max) return s;
  let cut = s.slice(0, max);
  const lastEscape = cut.lastIndexOf('_');
  if (lastEscape !== -1 && lastEscape > cut.length - 3) cut = cut.slice(0, lastEscape);
  return cut;
}

/**
 * The file name of the event `source` + `id` (see module doc). Only [A-Za-z0-9._-], never
 * starting with `.` or `-`, at most 255 bytes, ends in `.json`.
 */
export function eventFileName(source: string, id: string): string {
  const s = encodeNamePart(source);
  const i = encodeNamePart(id);
  const plain = `${s}__${i}.json`;
  if (plain.length <= MAX_PLAIN_NAME) return plain;
  const hash = createHash('sha256').update(source, 'utf8').update('\0').update(id, 'utf8').digest('hex').slice(0, 32);
  return `${cutEncoded(s, CUT)}__${cutEncoded(i, CUT)}.${hash}.json`;
}

/** The sub-directory name for an event name (or type): the same escaping, at most 100 characters plus a hash when longer. */
export function eventDirName(name: string): string {
  const enc = encodeNamePart(name);
  if (enc.length <= 100 && enc !== '') return enc;
  const hash = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 16);
  return `${cutEncoded(enc, 80)}.${hash}`;
}
