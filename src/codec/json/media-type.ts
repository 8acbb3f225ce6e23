/**
 * Media types: parse `type/subtype; params` once per distinct header text (small cache), and
 * classify them for the CloudEvents HTTP binding.
 * Spec: RFC 9110 §8.3.1 (media type syntax, case-insensitive type, subtype and parameter
 * names); CloudEvents HTTP binding 1.0.2 §3 (mode detection); JSON format 1.0.2 §3.1.1
 * (JSON-formatted content = `*\/json` or `*\/*+json`).
 */

/** A parsed media type; `type`, `subtype` and parameter names lowercased. */
export interface MediaType {
  readonly type: string;
  readonly subtype: string;
  /** `type/subtype`, lowercased, without parameters. */
  readonly essence: string;
  readonly params: Readonly<Record<string, string>>;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const QUOTED_PAIR = /\\(.)/g;
const CACHE_LIMIT = 256;
const cache = new Map<string, MediaType | null>();

/** Media type of the structured content mode with the JSON event format. */
export const STRUCTURED_JSON = 'application/cloudevents+json';
/** Media type of the batched content mode with the JSON batch format. */
export const BATCH_JSON = 'application/cloudevents-batch+json';
/** Prefix every CloudEvents event-format media type has (structured and batch). */
export const CLOUDEVENTS_PREFIX = 'application/cloudevents';

/**
 * Parses a Content-Type value; undefined when it is not `token/token` with well-formed
 * parameters. Results are frozen and cached (at most 256 distinct texts).
 */
export function parseMediaType(text: string): MediaType | undefined {
  const hit = cache.get(text);
  if (hit !== undefined) return hit ?? undefined;
  const parsed = parseUncached(text);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(text, parsed ?? null);
  return parsed;
}

function parseUncached(text: string): MediaType | undefined {
  const parts = text.split(';');
  const essence = (parts[0] ?? '').trim().toLowerCase();
  const slash = essence.indexOf('/');
  if (slash <= 0) return undefined;
  const type = essence.slice(0, slash);
  const subtype = essence.slice(slash + 1);
  if (!TOKEN.test(type) || !TOKEN.test(subtype)) return undefined;
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  for (let i = 1; i < parts.length; i++) {
    const p = (parts[i] ?? '').trim();
    if (p === '') continue;
    const eq = p.indexOf('=');
    if (eq <= 0) return undefined;
    const name = p.slice(0, eq).trim().toLowerCase();
    let value = p.slice(eq + 1).trim();
    if (!TOKEN.test(name)) return undefined;
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1).replace(QUOTED_PAIR, '$1');
    params[name] = value;
  }
  return Object.freeze({ type, subtype, essence, params: Object.freeze(params) });
}

/**
 * True for JSON-formatted content: subtype `json` or ending in `+json`, any type.
 * Spec: CloudEvents JSON format 1.0.2 §3.1.1.
 */
export function isJsonMediaType(mt: MediaType): boolean {
  return mt.subtype === 'json' || mt.subtype.endsWith('+json');
}

/**
 * Charsets whose bytes 0x00–0x7F are US-ASCII (IANA names and common aliases, lower case): a text
 * of ASCII bytes only reads the same in them as in UTF-8.
 */
const ASCII_SUPERSET = /^(?:iso[-_]?8859[-_](?:[1-9]|1[0-6])|latin-?[1-9]|l[1-9]|windows-125[0-8]|cp125[0-8]|cp819|ibm819)$/;

/** True when every byte (or UTF-16 code unit) of `content` is US-ASCII (below 0x80). */
function isAscii(given: Uint8Array | string | (() => Uint8Array | string)): boolean {
  const content = typeof given === 'function' ? given() : given;
  if (typeof content === 'string') {
    for (let i = 0; i < content.length; i++) if (content.charCodeAt(i) > 0x7f) return false;
    return true;
  }
  for (let i = 0; i < content.length; i++) if (content[i]! > 0x7f) return false;
  return true;
}

/**
 * Why the `charset` parameter of a JSON media type cannot be honoured, or undefined: JSON text
 * exchanged between systems is UTF-8 (RFC 8259 §8.1), which is how the gateway reads every JSON
 * body and data, so a charset other than `utf-8` (any case; quotes already removed by
 * {@link parseMediaType}; `utf8` tolerated; `us-ascii`/`ascii` too, a subset) would be silently
 * misread — `charset=iso-8859-1` with bytes C3 A9 means "Ã©", not "é". No charset parameter is
 * fine. So is a charset that is a superset of US-ASCII (ISO-8859-x, windows-125x, latin1…) when
 * `content` (the bytes, or the text, it describes; or a function giving them, called only then) is all ASCII: it reads the same either way
 * (some HTTP client libraries add `charset=ISO-8859-1` by default; RFC 8259 §11 gives JSON no
 * charset parameter at all). `what` names the content in the reason (e.g. "CloudEvents JSON",
 * "JSON data").
 */
export function charsetProblem(mt: MediaType, what: string, content?: Uint8Array | string | (() => Uint8Array | string)): string | undefined {
  const raw = mt.params.charset;
  if (raw === undefined) return undefined;
  const charset = raw.toLowerCase();
  // US-ASCII is a subset of UTF-8: its bytes read the same (a client library's default charset).
  if (charset === 'utf-8' || charset === 'utf8' || charset === 'us-ascii' || charset === 'ascii') return undefined;
  const superset = ASCII_SUPERSET.test(charset);
  if (superset && content !== undefined && isAscii(content)) return undefined;
  const shown = charset.length > 40 ? `${charset.slice(0, 40)}…` : charset;
  return superset
    ? `charset ${shown} is not supported for content with non-ASCII bytes: ${what} is UTF-8 (RFC 8259 §8.1); send it as UTF-8 with charset=utf-8 or no charset`
    : `charset ${shown} is not supported: ${what} is UTF-8 (RFC 8259 §8.1); send it as UTF-8 with charset=utf-8 or no charset`;
}

/** True when the `datacontenttype` text declares JSON-formatted content (absent = JSON). */
export function declaresJson(datacontenttype: string | undefined): boolean {
  if (datacontenttype === undefined) return true;
  const mt = parseMediaType(datacontenttype);
  return mt !== undefined && isJsonMediaType(mt);
}
