/**
 * A subscription's own secret values taken out of what its sink answered, before the answer's
 * excerpt is kept (dead letter header `dlq_response_excerpt`, `GET …/deadletters`, the logs). A
 * sink that echoes the request in its error body (common in debugging endpoints and some API
 * gateways) sent back the `delivery.headers` values — stored sealed and "never returned" — and
 * they reached the dead-letter topic in clear.
 * Redacted: every `delivery.headers` value and every signing secret (the stored text, and its
 * base64 key without the `whsec_` prefix), as they appear and JSON-escaped, each at least
 * {@link MIN_REDACTED_LENGTH} characters long (shorter values are not secrets worth the noise of
 * redacting every occurrence of, e.g., `1`). A header value also has its credentials taken out
 * on their own ({@link credentialParts}): a sink refusing `Authorization: Bearer <token>` names
 * the token alone (`invalid token <token>`), never the whole value, and one refusing Basic names
 * the decoded user (break report 2026-12-07: the token stayed in `GET …/deadletters`).
 * The answer is redacted before it is cut to the excerpt's {@link MAX_EXCERPT_BYTES}: cut first,
 * a value crossing the cut no longer matched and its start stayed in the dead letter (break report,
 * 2026-12-06). So the attempt keeps {@link REDACTION_MARGIN_BYTES} more than the excerpt: every
 * value that starts inside the excerpt ends inside what was kept.
 * Spec: Standard Webhooks 1.0.0 (secrets `whsec_` + base64); docs/subscriptions.md (headers
 * "stored encrypted, never returned").
 */
import { MAX_EXCERPT_BYTES, utf8Prefix } from '../../../bus/subscriber/index.js';
import { MAX_SINK_HEADER_VALUE_LENGTH } from '../../../bus/subscriptions/model.js';

/** What replaces a secret value in an excerpt. */
export const REDACTED = '[redacted]';

/** Values shorter than this are left as they are. */
export const MIN_REDACTED_LENGTH = 6;

const SECRET_PREFIX = 'whsec_';

/**
 * Bytes of a sink's answer kept beyond the excerpt, so that redaction sees whole values: the longest
 * text {@link secretTexts} makes is a header value JSON-escaped (each character at most two: `\"`,
 * `\\`); signing secrets are shorter.
 */
export const REDACTION_MARGIN_BYTES = 2 * MAX_SINK_HEADER_VALUE_LENGTH;

/** The texts to take out of an answer for these header values and signing secrets, longest first. */
export function secretTexts(headers: Readonly<Record<string, string>>, secrets: readonly string[]): readonly string[] {
  const out = new Set<string>();
  const add = (v: string): void => {
    if (v.length < MIN_REDACTED_LENGTH) return;
    out.add(v);
    // As a JSON string body would carry it (an echo of the request as JSON).
    const json = JSON.stringify(v).slice(1, -1);
    if (json !== v) out.add(json);
  };
  for (const v of Object.values(headers)) {
    add(v.trim());
    for (const part of credentialParts(v)) add(part);
  }
  for (const s of secrets) {
    add(s);
    if (s.startsWith(SECRET_PREFIX)) add(s.slice(SECRET_PREFIX.length));
  }
  // Longest first: a value containing another is replaced whole.
  return [...out].sort((a, b) => b.length - a.length);
}

// RFC 9110 §11.4: credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ].
const SCHEME_AND_REST = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) +(\S.*)$/s;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const AUTH_PARAM = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ *= *(?:"((?:[^"\\]|\\.)*)"|(\S*))$/s;

/**
 * The parts of one header value a sink may echo alone, for {@link secretTexts}: when the value
 * has the shape of RFC 9110 credentials (a scheme, spaces, the rest), the rest — whole, each
 * comma- or space-separated piece, each auth-param's value (unquoted) — and for `Basic` the
 * base64 decoded (`user:password`) and the password; the scheme itself is no secret and stays.
 * Any other value: its space- or comma-separated pieces. Pieces shorter than
 * {@link MIN_REDACTED_LENGTH} are dropped by the caller.
 * Spec: RFC 9110 §11.4 (credentials, token68, auth-param); RFC 7617 §2 (Basic: base64 of user-id ":" password).
 */
export function credentialParts(value: string): readonly string[] {
  const v = value.trim();
  const m = SCHEME_AND_REST.exec(v);
  const rest = m === null ? v : m[2]!.trim();
  const out: string[] = m === null ? [] : [rest];
  for (const piece of rest.split(/[\s,]+/)) {
    if (piece === '') continue;
    out.push(piece);
    if (TOKEN68.test(piece)) continue;
    const p = AUTH_PARAM.exec(piece);
    if (p !== null) out.push(p[1] === undefined ? (p[2] ?? '') : p[1].replace(/\\(.)/g, '$1'));
  }
  // Quoted auth-param values may hold spaces or commas: read them from the whole rest as well.
  for (const q of rest.matchAll(/= *"((?:[^"\\]|\\.)*)"/g)) out.push(q[1]!.replace(/\\(.)/g, '$1'));
  if (m !== null && m[1]!.toLowerCase() === 'basic' && TOKEN68.test(rest)) {
    const plain = Buffer.from(rest, 'base64').toString('utf8');
    const colon = plain.indexOf(':');
    if (colon >= 0 && !plain.includes('\uFFFD')) out.push(plain, plain.slice(colon + 1));
  }
  return out;
}

/** `text` with every occurrence of `secrets` (from {@link secretTexts}) replaced by {@link REDACTED}. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const v of secrets) if (out.includes(v)) out = out.split(v).join(REDACTED);
  return out;
}

/**
 * The excerpt of an answer's start `text` (up to {@link MAX_EXCERPT_BYTES} + {@link REDACTION_MARGIN_BYTES}
 * bytes as read): `secrets` ({@link secretTexts}) redacted, then cut to whole characters within
 * {@link MAX_EXCERPT_BYTES} bytes.
 */
export function redactedExcerpt(text: string, secrets: readonly string[]): string {
  return utf8Prefix(secrets.length === 0 ? text : redact(text, secrets), MAX_EXCERPT_BYTES);
}
