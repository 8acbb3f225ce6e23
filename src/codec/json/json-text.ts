/**
 * JSON text → value, for every JSON the gateway reads from outside (request bodies, `data_base64`
 * declared as JSON, structured-mode records). UTF-8 is checked (JSON text exchanged between
 * systems MUST be UTF-8), a leading BOM is ignored, duplicate member names are refused, and no
 * exception escapes.
 * Spec: RFC 8259 §4 (names within an object SHOULD be unique: with duplicates, receivers disagree
 * on the value — a proxy that keeps the first member sees a different event than one that keeps
 * the last), §8.1 (UTF-8; parsers MAY ignore a BOM).
 * Cost: linear in the text whatever its shape: one JSON.parse, then one pass over the text
 * counting members and one over the value counting keys; only when the counts differ is the text
 * scanned again to name the duplicate, and the pointer is built once, for the duplicate found
 * (building it for every member cost nesting depth × members: a 330 KB body took 28 s).
 * The pointer and the name in a refusal are cut to `MAX_POINTER_CHARS` (envelope) characters.
 */
import { isUtf8 } from 'node:buffer';
import { escapePointerToken, shortenPointer as shorten } from '../../envelope/index.js';

/**
 * Parsed JSON, or the reason the text is not JSON (`pointer`: where, for a duplicate member name,
 * RFC 6901; cut around "…" when longer than `MAX_POINTER_CHARS` (envelope)).
 */
export type JsonParse = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: string; readonly pointer?: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

/**
 * Parses `body` (bytes or text) as one JSON value. Never throws. Refuses text that is not UTF-8
 * (bytes), not JSON, or has a member name twice in one object (`pointer` names the second one).
 * Cost: linear in the length of `body` (module comment).
 */
export function parseJsonText(body: Uint8Array | string): JsonParse {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    if (!isUtf8(body)) return { ok: false, reason: 'not valid UTF-8' };
    text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    return { ok: false, reason: `not valid JSON (${err instanceof Error ? err.message : String(err)})` };
  }
  if (typeof value === 'object' && value !== null && membersInText(text) !== membersInValue(value)) {
    const dup = duplicateMember(text);
    const pointer = shorten(dup?.pointer ?? '');
    const name = shorten(dup?.name ?? '');
    return { ok: false, reason: `not valid JSON for this gateway: member name "${name}" appears more than once in the same object (at ${pointer === '' ? 'the top level' : pointer}); receivers would disagree on its value`, pointer };
  }
  return { ok: true, value };
}

const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** A character of a JSON number token (RFC 8259 §6): digits, `-`, `+`, `.`, `e`, `E`. */
function isNumberChar(c: number): boolean {
  return (c >= DIGIT_0 && c <= DIGIT_9) || c === MINUS || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;
}

/**
 * The source text of every JSON number that is the value of a member of an event object, by the
 * event's index and the member's name: JSON.parse reads `1.0`, `1E2` and `1` alike, so the form
 * a number was written in is only in the text. Events are the root object (`batch` false, index
 * 0) or the objects that are elements of the root array (`batch` true, index = position).
 * Only the members of the event objects themselves are collected, not those nested deeper
 * (`data`'s). `text` is valid JSON (parsed already) without duplicate member names.
 * Cost: linear in `text`, one pass; strings are skipped whole.
 */
export function eventNumberTexts(text: string, batch: boolean): Map<number, Map<string, string>> {
  const found = new Map<number, Map<string, string>>();
  const eventDepth = batch ? 2 : 1;
  let depth = 0;
  let index = 0;
  let name = '';
  let afterColon = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (depth === eventDepth && !afterColon) {
        const raw = text.slice(i + 1, end);
        name = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
      }
      afterColon = false;
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      afterColon = false;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
    else if (c === COMMA) {
      if (depth === 1 && batch) index++;
    } else if (c === COLON) afterColon = depth === eventDepth;
    else if (afterColon && (c === MINUS || (c >= DIGIT_0 && c <= DIGIT_9))) {
      let end = i + 1;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      let members = found.get(index);
      if (members === undefined) found.set(index, (members = new Map<string, string>()));
      members.set(name, text.slice(i, end));
      afterColon = false;
      i = end - 1;
    } else if (c > 0x20) afterColon = false; // true, false, null
  }
  return found;
}

/** Name separators outside strings: in valid JSON text, exactly one per object member. */
function membersInText(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === COLON) n++;
    else if (c === QUOTE) i = stringEnd(text, i);
  }
  return n;
}

/** Index of the closing quote of the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  return text.length;
}

/** Own keys of every object in a parsed value (JSON.parse keeps one member per distinct name). */
function membersInValue(root: object): number {
  let n = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (const child of node as unknown[]) if (typeof child === 'object' && child !== null) stack.push(child);
    } else {
      const obj = node as Record<string, unknown>;
      for (const key of Object.keys(obj)) {
        n++;
        const child = obj[key];
        if (typeof child === 'object' && child !== null) stack.push(child);
      }
    }
  }
  return n;
}

interface Frame {
  readonly object: boolean;
  readonly keys: Set<string> | undefined;
  /** Current member name (object) or element index (array). */
  token: string;
  index: number;
  expectKey: boolean;
}

/**
 * The first member (in text order) whose name repeats within its object, with its JSON pointer
 * (the text is valid JSON). Linear: the frames keep their own token, and the pointer is joined
 * from them once, when the duplicate is found.
 */
function duplicateMember(text: string): { readonly pointer: string; readonly name: string } | undefined {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (c === '{') stack.push({ object: true, keys: new Set(), token: '', index: 0, expectKey: true });
    else if (c === '[') stack.push({ object: false, keys: undefined, token: '0', index: 0, expectKey: false });
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',' && top !== undefined) {
      if (top.object) top.expectKey = true;
      else top.token = String(++top.index);
    } else if (c === ':' && top !== undefined) top.expectKey = false;
    else if (c === '"') {
      const end = stringEnd(text, i);
      if (top?.object === true && top.expectKey) {
        const raw = text.slice(i + 1, end);
        const name = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        if (top.keys!.has(name)) {
          let path = '';
          for (let f = 0; f < stack.length - 1; f++) path += '/' + escapePointerToken(stack[f]!.token);
          return { pointer: `${path}/${escapePointerToken(name)}`, name };
        }
        top.keys!.add(name);
        top.token = name;
      }
      i = end;
    }
  }
  return undefined;
}
