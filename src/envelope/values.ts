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
const SCHEME_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const PATH_DELIMITER = /[/?#]/;
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

/** Spec: RFC 3986 §4.1 (URI-reference); a relative ref's first segment has no ':' (§4.2). */
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
  return undefined;
}

/** Spec: RFC 3986 §4.3 (absolute URI: scheme ":" hier-part, no fragment). */
export function uriProblem(v: string): string | undefined {
  const ref = uriReferenceProblem(v);
  if (ref !== undefined) return ref.replace('URI-reference', 'absolute URI');
  if (!SCHEME_PREFIX.test(v)) return 'must be an absolute URI with a scheme (RFC 3986 §4.3), e.g. https://…';
  return undefined;
}

/** Spec: RFC 4648 §4 (standard alphabet, padded, no whitespace). */
export function base64Problem(v: string): string | undefined {
  if (v.length % 4 !== 0 || !BASE64_CHARS.test(v)) return 'must be RFC 4648 base64 (standard alphabet, padded)';
  return undefined;
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
