/**
 * Media types: parse `type/subtype; params` once per distinct header text (small cache), and
 * classify them for the CloudEvents HTTP binding.
 * Spec: RFC 9110 §8.3.1 (media type syntax, case-insensitive type, subtype and parameter
 * names); CloudEvents HTTP binding 1.0.2 §3 (mode detection); JSON format 1.0.2 §3.1.1
 * (JSON-formatted content = `*\/json` or `*\/*+json`).
 */

import { isMediaTypeFault, parseMediaType, readMediaType } from '../../envelope/media-type.js';
import type { MediaType } from '../../envelope/media-type.js';

// The one parser lives in the envelope (lowest layer): re-exported so codec callers keep their import.
export { parseMediaType };
export type { MediaType };

/** Media type of the structured content mode with the JSON event format. */
export const STRUCTURED_JSON = 'application/cloudevents+json';
/** Media type of the batched content mode with the JSON batch format. */
export const BATCH_JSON = 'application/cloudevents-batch+json';
/** Prefix every CloudEvents event-format media type has (structured and batch). */
export const CLOUDEVENTS_PREFIX = 'application/cloudevents';

const JSON_SUFFIX = '+json';

/**
 * True for JSON-formatted content: subtype `json` or `<name>+json` with a non-empty name, any
 * type (`application/+json` is not: a suffix follows a subtype name, RFC 6838 §4.2.8).
 * Spec: CloudEvents JSON format 1.0.2 §3.1.1.
 */
export function isJsonMediaType(mt: MediaType): boolean {
  return mt.subtype === 'json' || (mt.subtype.length > JSON_SUFFIX.length && mt.subtype.endsWith(JSON_SUFFIX));
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

/** True when the `datacontenttype` text declares JSON-formatted content (absent = JSON; one with a parameter given twice counts as JSON: it is refused by the attribute rule). */
export function declaresJson(datacontenttype: string | undefined): boolean {
  if (datacontenttype === undefined) return true;
  const mt = readMediaType(datacontenttype);
  // A parameter given twice: the datacontenttype rule refuses the event naming it; the data is not
  // judged a second time against a type nobody can settle (one violation, not two).
  if (isMediaTypeFault(mt)) return mt.fault === 'repeated';
  return isJsonMediaType(mt);
}
