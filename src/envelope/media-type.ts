/**
 * The one media-type parser of the gateway: the ingress Content-Type check, the management API's
 * Content-Type check, the `datacontenttype` attribute rule and the Kafka `content-type` header
 * all read a media type here, so the same text gets the same answer everywhere (break report
 * 2026-12-06: four parsers, four answers).
 *
 * Grammar (RFC 9110 §8.3.1, §5.6.2, §5.6.4, §5.6.6):
 *   media-type = type "/" subtype parameters
 *   parameters = *( OWS ";" OWS [ parameter ] )     — empty parameters (`;;`, a trailing `;`) allowed
 *   parameter  = token "=" ( token / quoted-string ) — no whitespace around "="
 *   quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE; quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
 * No leading whitespace (an HTTP field value is already trimmed; an attribute has none); trailing
 * OWS is allowed (the grammar's OWS before a `;`). Type, subtype and parameter names are
 * case-insensitive (lowercased here); a quoted value is read unquoted (`charset="UTF-8"` has the
 * value `UTF-8`, compared as `charset=utf-8` by whoever compares charsets case-insensitively).
 * Refused: a parameter given twice, in any case (RFC 6838 §4.3), and a comma-separated list of
 * media types (an Accept-style list is not one media type).
 */

/** A parsed media type; `type`, `subtype` and parameter names lowercased, values unquoted. */
export interface MediaType {
  readonly type: string;
  readonly subtype: string;
  /** `type/subtype`, lowercased, without parameters. */
  readonly essence: string;
  readonly params: Readonly<Record<string, string>>;
}

/**
 * Why a text is not one media type: `malformed` (not the grammar above), `list` (a `,` where a
 * `;` or the end was expected: several media types), `repeated` (parameter `name` given twice).
 */
export interface MediaTypeFault {
  readonly fault: 'malformed' | 'list' | 'repeated';
  /** The repeated parameter's name, lowercased (only for `repeated`). */
  readonly name?: string;
}

/** tchar (RFC 9110 §5.6.2): `!#$%&'*+-.^_\`|~`, digits, letters. */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[c.charCodeAt(0)] = 1;

function isTchar(code: number): boolean {
  return code < 128 && TCHAR[code] === 1;
}

const CACHE_LIMIT = 256;
const cache = new Map<string, MediaType | MediaTypeFault>();
const MALFORMED: MediaTypeFault = Object.freeze({ fault: 'malformed' });
const LIST: MediaTypeFault = Object.freeze({ fault: 'list' });

/** True when `r` is a fault, not a media type. */
export function isMediaTypeFault(r: MediaType | MediaTypeFault): r is MediaTypeFault {
  return 'fault' in r;
}

/**
 * Reads `text` as one media type (grammar in the module comment): the frozen {@link MediaType},
 * or a {@link MediaTypeFault} saying why not. Results are cached per distinct text (at most 256),
 * so the per-request cost of a usual Content-Type is one Map lookup.
 */
export function readMediaType(text: string): MediaType | MediaTypeFault {
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  const read = readUncached(text);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(text, read);
  return read;
}

/** {@link readMediaType}, undefined for any fault. */
export function parseMediaType(text: string): MediaType | undefined {
  const r = readMediaType(text);
  return isMediaTypeFault(r) ? undefined : r;
}

function skipOws(text: string, i: number): number {
  while (i < text.length && (text.charCodeAt(i) === 0x20 || text.charCodeAt(i) === 0x09)) i++;
  return i;
}

function tokenEnd(text: string, i: number): number {
  while (i < text.length && isTchar(text.charCodeAt(i))) i++;
  return i;
}

/** qdtext (RFC 9110 §5.6.4): HTAB, SP, 0x21, 0x23–0x5B, 0x5D–0x7E, obs-text 0x80–0xFF. */
function isQdtext(c: number): boolean {
  return c === 0x09 || c === 0x20 || c === 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) || (c >= 0x80 && c <= 0xff);
}

/** The character after `\` in a quoted-pair: HTAB, SP, VCHAR, obs-text. */
function isQuotable(c: number): boolean {
  return c === 0x09 || (c >= 0x20 && c <= 0x7e) || (c >= 0x80 && c <= 0xff);
}

function readUncached(text: string): MediaType | MediaTypeFault {
  const typeEnd = tokenEnd(text, 0);
  if (typeEnd === 0 || text.charCodeAt(typeEnd) !== 0x2f) return MALFORMED;
  const subEnd = tokenEnd(text, typeEnd + 1);
  if (subEnd === typeEnd + 1) return MALFORMED;
  const essence = text.slice(0, subEnd).toLowerCase();
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  let i = subEnd;
  for (;;) {
    i = skipOws(text, i);
    if (i >= text.length) break;
    const c = text.charCodeAt(i);
    if (c === 0x2c) return LIST;
    if (c !== 0x3b) return MALFORMED;
    i = skipOws(text, i + 1);
    // An empty parameter (`;;`, `; ;` or a trailing `;`): allowed by RFC 9110 §8.3.1's grammar.
    if (i >= text.length || text.charCodeAt(i) === 0x3b) continue;
    if (text.charCodeAt(i) === 0x2c) return LIST;
    const nameEnd = tokenEnd(text, i);
    if (nameEnd === i || text.charCodeAt(nameEnd) !== 0x3d) return MALFORMED;
    const name = text.slice(i, nameEnd).toLowerCase();
    let value: string;
    i = nameEnd + 1;
    if (text.charCodeAt(i) === 0x22) {
      // quoted-string: `;`, `,` and `\"` inside are part of the value (RFC 9110 §5.6.4).
      let out = '';
      let from = i + 1;
      let j = from;
      for (;;) {
        if (j >= text.length) return MALFORMED;
        const q = text.charCodeAt(j);
        if (q === 0x22) break;
        if (q === 0x5c) {
          if (j + 1 >= text.length || !isQuotable(text.charCodeAt(j + 1))) return MALFORMED;
          out += text.slice(from, j);
          from = j + 1;
          j += 2;
          continue;
        }
        if (!isQdtext(q)) return MALFORMED;
        j++;
      }
      value = out + text.slice(from, j);
      i = j + 1;
    } else {
      const valueEnd = tokenEnd(text, i);
      if (valueEnd === i) return MALFORMED;
      value = text.slice(i, valueEnd);
      i = valueEnd;
    }
    if (Object.hasOwn(params, name)) return Object.freeze({ fault: 'repeated', name });
    params[name] = value;
  }
  return Object.freeze({ type: essence.slice(0, typeEnd), subtype: essence.slice(typeEnd + 1), essence, params: Object.freeze(params) });
}

const SHOWN = 40;

/**
 * Why `text` is not one media type, as a sentence naming `what` carries it (`Content-Type`,
 * `datacontenttype`), else undefined. `only` limits it to some faults (the ingress leaves a
 * malformed binary-mode Content-Type to the `datacontenttype` rule). Messages:
 * repeated — RFC 6838 §4.3; list — one media type, not a list (RFC 9110 §8.3);
 * malformed — RFC 9110 §8.3.1.
 */
export function mediaTypeProblem(text: string, what: string, only?: readonly MediaTypeFault['fault'][]): string | undefined {
  const r = readMediaType(text);
  if (!isMediaTypeFault(r) || (only !== undefined && !only.includes(r.fault))) return undefined;
  if (r.fault === 'repeated') {
    const name = r.name ?? '';
    const shown = name.length > SHOWN ? `${name.slice(0, SHOWN)}…` : name;
    return `${what} has the parameter ${shown} more than once (RFC 6838 §4.3): receivers would disagree on which one counts; give each parameter once`;
  }
  if (r.fault === 'list') return `${what} is a list of media types (a comma outside a quoted value): it must be one media type (RFC 9110 §8.3)`;
  return `${what} must be an RFC 2046 media type such as application/json (RFC 9110 §8.3.1)`;
}
