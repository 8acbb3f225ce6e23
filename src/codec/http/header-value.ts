/**
 * Header values of the binary content mode: decode (quoted-string unescaping, then one round of
 * percent-decoding into UTF-8) and encode (percent-encode space, `"`, `%` and everything outside
 * printable ASCII).
 * Spec: CloudEvents HTTP binding 1.0.2 §3.1.3.2; RFC 9110 §5.6.4 (quoted-string), RFC 3986 §2.1.
 */

// Anything but printable ASCII and space (HTAB is not allowed in an attribute value either).
const NOT_VISIBLE_ASCII = /[^\x20-\x7E]/;
const NEEDS_DECODING = /["%]/;
// Characters that may stay as they are when encoding: printable ASCII except `"` and `%`.
const NEEDS_ENCODING = /[^\x21\x23\x24\x26-\x7E]/;
const HEX = '0123456789ABCDEF';
const OWS_EDGES = /^[ \t]+|[ \t]+$/g;

/** Decoded header value, or the reason it cannot be decoded. */
export type DecodedHeader = { readonly ok: true; readonly value: string } | { readonly ok: false; readonly reason: string };

/**
 * Decodes one `ce-` header value: surrounding whitespace dropped; double-quoted sections
 * unescaped (backslash escapes); then a single round of percent-decoding, the bytes read as
 * UTF-8. Raw characters outside printable ASCII, a malformed `%XX`, an unterminated quote and
 * byte sequences that are not UTF-8 (including overlong forms such as `%C0%A0`) are refused.
 */
export function decodeHeaderValue(raw: string): DecodedHeader {
  const v = trimOws(raw);
  if (NOT_VISIBLE_ASCII.test(v)) {
    return { ok: false, reason: 'header values must be printable US-ASCII; percent-encode other characters as UTF-8 (CloudEvents HTTP binding §3.1.3.2)' };
  }
  if (!NEEDS_DECODING.test(v)) return { ok: true, value: v };
  let unquoted = v;
  if (v.includes('"')) {
    const u = unquote(v);
    if (u === undefined) return { ok: false, reason: 'unterminated double-quoted string in header value' };
    unquoted = u;
  }
  if (!unquoted.includes('%')) return { ok: true, value: unquoted };
  return percentDecode(unquoted);
}

function trimOws(s: string): string {
  const first = s.charCodeAt(0);
  const last = s.charCodeAt(s.length - 1);
  return first === 0x20 || first === 0x09 || last === 0x20 || last === 0x09 ? s.replace(OWS_EDGES, '') : s;
}

/** Removes RFC 9110 quoted-string quoting; undefined when a quote is left open. */
function unquote(v: string): string | undefined {
  let out = '';
  let inQuotes = false;
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    if (inQuotes) {
      if (c === '\\') {
        if (i + 1 >= v.length) return undefined;
        out += v[++i];
      } else if (c === '"') inQuotes = false;
      else out += c;
    } else if (c === '"') inQuotes = true;
    else out += c;
  }
  return inQuotes ? undefined : out;
}

function percentDecode(v: string): DecodedHeader {
  // decodeURIComponent performs exactly one round, rejects malformed escapes and invalid UTF-8
  // (overlong forms, surrogates) with URIError (ECMA-262 "Decode").
  try {
    return { ok: true, value: decodeURIComponent(v) };
  } catch {
    return { ok: false, reason: 'invalid percent-encoding: %XX must be two hex digits and the bytes valid UTF-8' };
  }
}

/**
 * Percent-encodes an attribute's canonical string for a header: space, `"`, `%` and every
 * character outside U+0021–U+007E become UTF-8 `%XY` (upper-case hex). Unpaired surrogates are
 * encoded as U+FFFD (valid attribute values have none).
 */
export function encodeHeaderValue(value: string): string {
  if (!NEEDS_ENCODING.test(value)) return value;
  let out = '';
  for (const ch of value) {
    const cp = ch.codePointAt(0) ?? 0xfffd;
    if (cp >= 0x21 && cp <= 0x7e && cp !== 0x22 && cp !== 0x25) {
      out += ch;
      continue;
    }
    for (const b of Buffer.from(ch, 'utf8')) out += '%' + (HEX[b >> 4] ?? '0') + (HEX[b & 15] ?? '0');
  }
  return out;
}
