/**
 * Secret values taken out of text that came back from a peer (a webhook sink's answer, a schema
 * registry's error message) before it is kept or logged: a peer echoing the request (debugging
 * endpoints, some API gateways and proxies) sends back the credentials it was given.
 * Moved here from the webhook sink (src/connectors/sinks/webhook/redact.ts, which re-exports it) so
 * that the registry client uses the same rules without depending on the connectors.
 * Spec: RFC 9110 §11.4 (credentials); RFC 7617 §2 (Basic); Standard Webhooks 1.0.0 (`whsec_` secrets).
 */

/** What replaces a secret value in an excerpt. */
export const REDACTED = '[redacted]';

/** Values shorter than this are left as they are. */
export const MIN_REDACTED_LENGTH = 6;

const SECRET_PREFIX = 'whsec_';

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
