/**
 * Checks of one value against a CloudEvents type. Each returns the reason when the value is not
 * of the type, undefined when it is. Patterns are compiled once at module load.
 * Spec: CloudEvents 1.0.2 "Type System"; RFC 3986 §3, §4.1–4.3; RFC 4648 §4; RFC 3339 §5.6.
 */
import type { AttributeType } from './attribute-types.js';
import { isRfc3339Timestamp } from './time.js';

export const INT32_MIN = -2_147_483_648;
export const INT32_MAX = 2_147_483_647;

// Control characters U+0000–U+001F, U+007F–U+009F, the 66 Unicode noncharacters, and (with the
// u flag) any surrogate that is not half of a proper pair.
const BAD_STRING_CHAR =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u{0}-\u{1F}\u{7F}-\u{9F}\u{FDD0}-\u{FDEF}\u{FFFE}\u{FFFF}\u{1FFFE}\u{1FFFF}\u{2FFFE}\u{2FFFF}\u{3FFFE}\u{3FFFF}\u{4FFFE}\u{4FFFF}\u{5FFFE}\u{5FFFF}\u{6FFFE}\u{6FFFF}\u{7FFFE}\u{7FFFF}\u{8FFFE}\u{8FFFF}\u{9FFFE}\u{9FFFF}\u{AFFFE}\u{AFFFF}\u{BFFFE}\u{BFFFF}\u{CFFFE}\u{CFFFF}\u{DFFFE}\u{DFFFF}\u{EFFFE}\u{EFFFF}\u{FFFFE}\u{FFFFF}\u{10FFFE}\u{10FFFF}\u{D800}-\u{DFFF}]/u;

// RFC 3986: unreserved / pct-encoded / sub-delims / ":" / "@" / "/" / "?" / "#" / "[" / "]".
const URI_CHARS = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#[\]]|%[0-9A-Fa-f]{2})*$/;
/** The same characters, and a percent-encoding that may be cut short at the end (a prefix of a URI-reference). */
const URI_PREFIX_CHARS = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#[\]]|%[0-9A-Fa-f]{2})*(?:%[0-9A-Fa-f]?)?$/;
const SCHEME_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const PATH_DELIMITER = /[/?#]/;
const BRACKET = /[[\]]/;
const PORT_SUFFIX = /^(?::[0-9]*)?$/;
const MISPLACED_BRACKET = "must be an RFC 3986 URI-reference ('[' and ']' only around an IP-literal host, e.g. http://[::1]:8080/; elsewhere percent-encode them as %5B and %5D, RFC 3986 §3.2.2)";
// IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ).
const IPV_FUTURE = /^[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+$/;
const H16 = /^[0-9A-Fa-f]{1,4}$/;
// dec-octet: 0–255 without leading zeros.
const IPV4 = /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])$/;
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;
const INTEGER_TEXT = /^-?(?:0|[1-9][0-9]*)$/;

/** Spec: CloudEvents 1.0.2 "Type System" → String (allowed Unicode characters). */
export function stringProblem(v: string): string | undefined {
  return BAD_STRING_CHAR.test(v)
    ? 'contains a character CloudEvents Strings exclude (control character, noncharacter or unpaired surrogate)'
    : undefined;
}

/** Spec: CloudEvents 1.0.2 "Type System" → Integer (signed 32-bit). */
export function integerProblem(v: number): string | undefined {
  if (!Number.isInteger(v)) return 'must be a CloudEvents Integer (a whole number)';
  if (!Number.isSafeInteger(v)) return 'integer is outside the safe range; send it as a string';
  if (v < INT32_MIN || v > INT32_MAX) return 'must be a CloudEvents Integer (signed 32-bit: -2147483648 to 2147483647)';
  return undefined;
}

/**
 * The Integer of a canonical string (`-?(0|[1-9][0-9]*)`, 32-bit), or undefined.
 * Spec: CloudEvents 1.0.2 "Type System" → Integer string encoding (RFC 7159 §6 integer part).
 */
export function parseIntegerText(text: string): number | undefined {
  if (!INTEGER_TEXT.test(text) || text.length > 11) return undefined;
  const n = Number(text);
  return n >= INT32_MIN && n <= INT32_MAX ? n : undefined;
}

/**
 * Reason when no URI-reference starts with `v`, else undefined: only its characters (a
 * percent-encoding may be cut short at the end) and at most one '#'. Brackets and the scheme are
 * not checked: a prefix may end before they are complete. Used for prefix rules on `source`.
 * Spec: RFC 3986 §4.1 (URI-reference), §2.1 (percent-encoding).
 */
export function uriPrefixProblem(v: string): string | undefined {
  if (!URI_PREFIX_CHARS.test(v)) return 'an RFC 3986 URI-reference (percent-encode other characters)';
  if (v.indexOf('#') !== v.lastIndexOf('#')) return "an RFC 3986 URI-reference (at most one '#')";
  return undefined;
}

/**
 * Spec: RFC 3986 §4.1 (URI-reference); a relative ref's first segment has no ':' (§4.2); `[` and
 * `]` only around an IP-literal host (§3.2.2, see {@link bracketProblem}).
 */
export function uriReferenceProblem(v: string): string | undefined {
  if (!URI_CHARS.test(v)) return 'must be an RFC 3986 URI-reference (percent-encode other characters)';
  const hash = v.indexOf('#');
  if (hash !== -1 && v.indexOf('#', hash + 1) !== -1) return "must be an RFC 3986 URI-reference (at most one '#')";
  const colon = v.indexOf(':');
  if (colon !== -1) {
    const firstDelimiter = v.search(PATH_DELIMITER);
    if ((firstDelimiter === -1 || colon < firstDelimiter) && !SCHEME_PREFIX.test(v)) {
      return 'must be an RFC 3986 URI-reference (invalid scheme before the first ":")';
    }
  }
  // Brackets are rare: only a value holding one is taken apart (this runs for every event's source).
  return BRACKET.test(v) ? bracketProblem(v) : undefined;
}

/**
 * Where `[` and `]` stand in a value that passed the character, '#' and scheme checks of
 * {@link uriReferenceProblem}: only as the first and last character of the host, around an
 * IP-literal, and then followed by nothing or a port. Anywhere else — path, query, fragment,
 * userinfo, a reference without an authority — they are gen-delims that must be
 * percent-encoded (`%5B`, `%5D`), so a stray or unbalanced one is not a URI-reference at all.
 * Spec: RFC 3986 §3.2 (authority = [ userinfo "@" ] host [ ":" port ], after "//"), §3.2.1
 * (userinfo has no brackets), §3.2.2 (IP-literal = "[" ( IPv6address / IPvFuture ) "]"), §3.2.3
 * (port = *DIGIT), §3.3–3.5 (path, query, fragment: no brackets), §2.2 (percent-encode delimiters
 * used as data).
 */
function bracketProblem(v: string): string | undefined {
  // The scheme check passed: a match is the scheme, and its ':' the first one of the value.
  const scheme = SCHEME_PREFIX.exec(v);
  const rest = scheme === null ? v : v.slice(scheme[0].length);
  // No "//": no authority, so no host a bracket could belong to (§4.2 network-path reference included when present).
  if (!rest.startsWith('//')) return MISPLACED_BRACKET;
  const end = rest.slice(2).search(PATH_DELIMITER);
  const authority = end === -1 ? rest.slice(2) : rest.slice(2, 2 + end);
  const after = end === -1 ? '' : rest.slice(2 + end);
  if (BRACKET.test(after)) return MISPLACED_BRACKET;
  // userinfo has no '@' of its own (§3.2.1): the host starts after the last one.
  const at = authority.lastIndexOf('@');
  if (at !== -1 && BRACKET.test(authority.slice(0, at))) return MISPLACED_BRACKET;
  const hostPort = authority.slice(at + 1);
  if (!hostPort.startsWith('[')) return MISPLACED_BRACKET;
  const close = hostPort.indexOf(']');
  if (close === -1) return "must be an RFC 3986 URI-reference (a host starting with '[' ends with ']', RFC 3986 §3.2.2)";
  if (!isIpLiteralBody(hostPort.slice(1, close))) {
    return "must be an RFC 3986 URI-reference (a host in '[' ']' is an IPv6 address or 'v<hex>.<text>' IPvFuture, RFC 3986 §3.2.2)";
  }
  if (!PORT_SUFFIX.test(hostPort.slice(close + 1))) {
    return "must be an RFC 3986 URI-reference (after the ']' of an IP-literal host only ':' and a decimal port may follow, RFC 3986 §3.2.3)";
  }
  return undefined;
}

/**
 * True when `s` (the text between `[` and `]`) is an IPv6address or an IPvFuture. No zone id
 * (`%25eth0`, RFC 6874): RFC 3986's IP-literal, which the error text promises, has none.
 * Spec: RFC 3986 §3.2.2 (IPv6address: eight h16 groups, the last two may be an IPv4address, one
 * "::" stands for one or more zero groups).
 */
function isIpLiteralBody(s: string): boolean {
  if (IPV_FUTURE.test(s)) return true;
  const gap = s.indexOf('::');
  if (gap !== -1 && s.indexOf('::', gap + 1) !== -1) return false;
  const head = gap === -1 ? s : s.slice(0, gap);
  const tail = gap === -1 ? '' : s.slice(gap + 2);
  const groups = [...(head === '' ? [] : head.split(':')), ...(tail === '' ? [] : tail.split(':'))];
  if (groups.length === 0) return gap !== -1; // "::"
  let count = 0;
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    // ls32 may be an IPv4address, as the last piece only (it counts for two groups).
    if (i === groups.length - 1 && IPV4.test(g) && (gap === -1 || tail !== '')) count += 2;
    else if (H16.test(g)) count += 1;
    else return false;
  }
  // Without "::" all eight groups are written; with it at most seven (it stands for one or more).
  return gap === -1 ? count === 8 : count <= 7;
}

/** Spec: RFC 3986 §4.3 (absolute URI: scheme ":" hier-part, no fragment). */
export function uriProblem(v: string): string | undefined {
  const ref = uriReferenceProblem(v);
  if (ref !== undefined) return ref.replace('URI-reference', 'absolute URI');
  if (!SCHEME_PREFIX.test(v)) return 'must be an absolute URI with a scheme (RFC 3986 §4.3), e.g. https://…';
  return undefined;
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Why padded base64 text `v` (RFC 4648 §4 syntax, already checked) is not the canonical encoding
 * of its bytes, else undefined: the bits of the last character before `=` that encode no data
 * (4 before `==`, 2 before `=`) are not zero, so `…AQF=` decodes as `…AQE=` does and two texts
 * stand for the same bytes — a receiver that compares or signs the text sees another value than
 * one that decodes it. The reason names the canonical last four characters. Cost: constant (only
 * the last quantum is read).
 * Spec: RFC 4648 §3.5 (pad bits MUST be set to zero by conforming encoders; decoders MAY reject
 * an encoding where they are not).
 */
export function base64PaddingProblem(v: string): string | undefined {
  const pads = v.endsWith('==') ? 2 : v.endsWith('=') ? 1 : 0;
  if (pads === 0) return undefined;
  const last = BASE64_ALPHABET.indexOf(v.charAt(v.length - pads - 1));
  // '==': the character holds 2 data bits and 4 pad bits; '=': 4 data bits and 2 pad bits.
  const padMask = pads === 2 ? 0x0f : 0x03;
  if (last < 0 || (last & padMask) === 0) return undefined;
  const quantum = v.slice(-4);
  const canonical = Buffer.from(quantum, 'base64').toString('base64');
  return `is not canonical base64: the unused bits of the last character before "=" must be zero (RFC 4648 §3.5): ${quantum} encodes the same bytes as ${canonical}; send ${canonical}`;
}

/** Spec: RFC 4648 §4 (standard alphabet, padded, no whitespace), §3.5 (canonical: pad bits zero). */
export function base64Problem(v: string): string | undefined {
  if (v.length % 4 !== 0 || !BASE64_CHARS.test(v)) return 'must be RFC 4648 base64 (standard alphabet, padded)';
  const padding = base64PaddingProblem(v);
  return padding === undefined ? undefined : `must be RFC 4648 base64 (standard alphabet, padded); it ${padding}`;
}

/** Spec: RFC 3339 §5.6 with an offset (bus spec M5). */
export function timestampProblem(v: string): string | undefined {
  return isRfc3339Timestamp(v)
    ? undefined
    : 'must be an RFC 3339 timestamp with an offset (Z or ±hh:mm) that mainstream SDKs can read: year 0001–9999 (also in UTC), seconds 00–59 (no leap second), at most 9 fraction digits, upper-case T and Z, offset within ±18:00; e.g. 2024-05-01T12:00:00Z';
}

/**
 * Reason when `value` is not of CloudEvents type `type` in its native form (string, number,
 * boolean), else undefined.
 */
export function typeProblem(type: AttributeType, value: unknown): string | undefined {
  switch (type) {
    case 'Boolean':
      return typeof value === 'boolean' ? undefined : 'must be a Boolean (true or false)';
    case 'Integer':
      return typeof value === 'number' ? integerProblem(value) : 'must be a CloudEvents Integer (a JSON number, not a string)';
    case 'String':
      return typeof value === 'string' ? stringProblem(value) : 'must be a String';
    case 'Binary':
      return typeof value === 'string' ? base64Problem(value) : 'must be Binary as a base64 string';
    case 'URI':
      return typeof value === 'string' ? uriProblem(value) : 'must be a URI string';
    case 'URI-reference':
      return typeof value === 'string' ? uriReferenceProblem(value) : 'must be a URI-reference string';
    case 'Timestamp':
      return typeof value === 'string' ? timestampProblem(value) : 'must be an RFC 3339 timestamp string';
  }
}
