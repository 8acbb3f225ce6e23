/**
 * The request's W3C `tracestate` header, read to travel with the request's `traceparent` into
 * the events that adopt it. The header is transport, not the partner's event: a malformed one is
 * discarded (the event is still accepted), as W3C Trace Context asks of a vendor that cannot parse
 * it, and it is never read at all when the request's `traceparent` is not valid.
 * Spec: W3C Trace Context §3.1 (a traceparent that failed to parse: tracestate is not parsed;
 * a tracestate that failed: the traceparent still holds), §3.3 (tracestate), §4.3 (processing
 * model: a tracestate that cannot be parsed may be discarded whole).
 */

/** Most list-members of a tracestate (W3C Trace Context §3.3.1.2). */
export const MAX_TRACESTATE_MEMBERS = 32;
/**
 * Longest tracestate passed on, characters of the list as written (`key=value` members joined by
 * `,`). W3C asks vendors to propagate at least 512; more is cut by whole entries (§3.3.1.5), so a
 * transport header can neither push an event over its attribute bounds nor make it refused.
 */
export const MAX_TRACESTATE_CHARS = 512;
/** Members longer than this go first when a tracestate is cut (W3C Trace Context §3.3.1.5). */
const LONG_MEMBER = 128;

// key = ( lcalpha / DIGIT ) 0*255( keychar ); keychar = lcalpha / DIGIT / "_" / "-" / "*" / "/" / "@".
// That is Trace Context Level 2's key; Level 1's simple and multi-tenant keys are all of this form.
const KEY = /^[a-z0-9][a-z0-9_\-*/@]{0,255}$/;
// value = 0*255( chr ) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E.
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
// OWS = *( SP / HTAB ) (RFC 7230 §3.2.3): String.trim would also take other whitespace, which is not OWS.
const OWS = /^[ \t]+|[ \t]+$/g;

/**
 * The tracestate to store with an adopted traceparent, else undefined: undefined when the header is
 * absent, empty (only empty or whitespace-only members) or invalid — a member that is not
 * `key=value` with a key and value of the W3C grammar, a key given twice, or more than 32 members.
 * Repeated headers arrive joined with ", " (node:http), which is how W3C combines them. The result
 * is the members without optional whitespace and empty members, joined by `,`; over
 * {@link MAX_TRACESTATE_CHARS} it is cut by whole members, those over 128 characters first, then
 * from the end.
 * Spec: W3C Trace Context §3.3.1.1 (several headers combined per RFC 7230 §3.2.2; empty and
 * whitespace-only members allowed), §3.3.1.2 (list = list-member 0*31( OWS "," OWS list-member )),
 * §3.3.1.3 (key, value), §3.3.1.4 (one entry per key), §3.3.1.5 (limits, cut by whole entries).
 */
export function validTracestate(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const members: string[] = [];
  const keys = new Set<string>();
  for (const raw of v.split(',')) {
    const member = raw.replace(OWS, '');
    if (member === '') continue;
    if (members.length === MAX_TRACESTATE_MEMBERS) return undefined;
    const eq = member.indexOf('=');
    if (eq === -1) return undefined;
    const key = member.slice(0, eq);
    if (!KEY.test(key) || !VALUE.test(member.slice(eq + 1)) || keys.has(key)) return undefined;
    keys.add(key);
    members.push(member);
  }
  return members.length === 0 ? undefined : truncated(members);
}

/** `members` joined by `,`, cut to {@link MAX_TRACESTATE_CHARS} by whole members (W3C Trace Context §3.3.1.5). */
function truncated(members: string[]): string | undefined {
  let length = members.reduce((n, m) => n + m.length, members.length - 1);
  for (let i = members.length - 1; i >= 0 && length > MAX_TRACESTATE_CHARS; i--) {
    if (members[i]!.length <= LONG_MEMBER) continue;
    length -= members[i]!.length + 1;
    members.splice(i, 1);
  }
  while (length > MAX_TRACESTATE_CHARS) length -= members.pop()!.length + 1;
  return members.length === 0 ? undefined : members.join(',');
}
