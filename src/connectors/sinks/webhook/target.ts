/**
 * Webhook target rules: which URLs a subscription may push to, checked when it is created or its
 * URL changes, and again before every delivery attempt.
 * - `http` or `https` only; no credentials in the URL (a sink's own credentials go in `headers`,
 *   which are sealed), no fragment, at most 2,048 characters.
 * - Every address the host resolves to must be a global unicast address: loopback, RFC 1918,
 *   link-local (169.254.0.0/16 with the cloud metadata address, fe80::/10), CGNAT 100.64.0.0/10,
 *   unique-local fc00::/7, IPv4-mapped, IPv4-compatible (::/96) and -translated IPv6, unspecified (0.0.0.0, ::), broadcast,
 *   multicast and the other special-purpose ranges are refused — unless the host name or the
 *   address is allowed by `WEBHOOK_ALLOWED_HOSTS` (host names, addresses or CIDRs).
 * - `https` is required unless the host is allow-listed.
 * - The port must be 443 or 80 (the URL's default when it names none) or one of
 *   `WEBHOOK_ALLOWED_PORTS` (`*`: any), unless the host name, or the address literal, is
 *   allow-listed: a partner's subscription must not make the gateway speak HTTP to a public host's
 *   SMTP, SSH or database port, nor map which ports answer. (Knative sets no port rule: its sinks
 *   are in-cluster services, here allow-listed hosts, which keep any port.)
 * - The address that passed is the one connected to: {@link resolveTarget} returns it and the
 *   delivery connects to exactly that address (no second DNS answer, so no DNS rebinding).
 * Spec: issue 8 ("Webhook targets are checked"); RFC 6890 (special-purpose address registries),
 *   RFC 1918, RFC 6598 (CGNAT), RFC 4193 (unique-local), RFC 4291 §2.5.5.2 (IPv4-mapped);
 *   OWASP SSRF Prevention Cheat Sheet.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { GatewayError } from '../../../core/errors.js';

/** Parsed `WEBHOOK_ALLOWED_HOSTS`: lower-case host names, and CIDR ranges (a bare address is a /32 or /128); with `WEBHOOK_ALLOWED_PORTS`. */
export interface AllowList {
  readonly hosts: ReadonlySet<string>;
  readonly ranges: readonly (readonly [ipaddr.IPv4 | ipaddr.IPv6, number])[];
  /** Ports a target that is not allow-listed may use: {@link DEFAULT_PORTS} plus `WEBHOOK_ALLOWED_PORTS`; `any` for `*`. Absent: the default. */
  readonly ports?: ReadonlySet<number> | 'any';
}

/** Ports every target may use: the web's (https, and http for allow-listed hosts). */
export const DEFAULT_PORTS: ReadonlySet<number> = new Set([80, 443]);

export const EMPTY_ALLOW_LIST: AllowList = Object.freeze({ hosts: new Set<string>(), ranges: [] });

const HOST_NAME = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
export const MAX_URL_LENGTH = 2048;

/**
 * What a partner is told when the check depends on DNS (the name does not resolve, resolves to
 * nothing, or to an address the rules refuse): one text for all, so that `POST /subscriptions`
 * cannot be used to map the gateway's internal DNS ("vm resolves to 127.0.0.1 …", "cannot resolve
 * nonexistent.invalid" told names apart). What was found is in the error's `cause` — for the log,
 * never the answer (the HTTP problem carries the message and `details` only).
 */
export const TARGET_NOT_ALLOWED = 'the target is not allowed or cannot be reached';

/** A DNS-dependent refusal: generic message, the detail only in `cause` (see {@link TARGET_NOT_ALLOWED}). */
const hidden = (code: 'CEG_WEBHOOK_TARGET_REFUSED' | 'CEG_SINK_FAILED', detail: string, cause?: unknown): GatewayError =>
  new GatewayError(code, TARGET_NOT_ALLOWED, { retriable: code === 'CEG_SINK_FAILED', cause: new Error(detail, cause === undefined ? undefined : { cause }), details: { field: 'delivery.url' } });

/** What a DNS-dependent refusal hides from the partner (its `cause`'s message), for the log; undefined for any other error. */
export function hiddenDetail(err: unknown): string | undefined {
  if (!(err instanceof GatewayError) || err.message !== TARGET_NOT_ALLOWED) return undefined;
  const c = (err as { cause?: unknown }).cause;
  return c instanceof Error ? c.message : undefined;
}

const refused = (reason: string, details: Record<string, unknown> = {}): GatewayError =>
  new GatewayError('CEG_WEBHOOK_TARGET_REFUSED', reason, { retriable: false, details: { field: 'delivery.url', ...details } });

/**
 * `WEBHOOK_ALLOWED_PORTS`: a comma-separated list of ports (1–65535) allowed besides
 * {@link DEFAULT_PORTS}, or `*` for any; undefined or empty: the default only.
 * Errors: CEG_INVALID_OPTIONS naming each entry that is not a port.
 */
export function parsePorts(text: string | undefined): ReadonlySet<number> | 'any' {
  if (text === undefined || text.trim() === '') return DEFAULT_PORTS;
  if (text.trim() === '*') return 'any';
  const ports = new Set(DEFAULT_PORTS);
  const bad: string[] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const n = /^\d{1,5}$/.test(entry) ? Number(entry) : Number.NaN;
    if (n >= 1 && n <= 65535) ports.add(n);
    else bad.push(entry);
  }
  if (bad.length > 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `WEBHOOK_ALLOWED_PORTS: not a port (1–65535) or *: ${bad.map((b) => JSON.stringify(b.slice(0, 20))).join(', ')}`, {
      retriable: false,
      details: { field: 'WEBHOOK_ALLOWED_PORTS' },
    });
  }
  return ports;
}

/**
 * Parses `WEBHOOK_ALLOWED_HOSTS` (a comma-separated list of host names, IP addresses and CIDRs)
 * and `WEBHOOK_ALLOWED_PORTS` ({@link parsePorts}).
 * Errors: CEG_INVALID_OPTIONS naming each entry that is none of these.
 */
export function parseAllowList(text: string | undefined, portsText?: string): AllowList {
  const ports = parsePorts(portsText);
  if (text === undefined || text.trim() === '') return ports === DEFAULT_PORTS ? EMPTY_ALLOW_LIST : Object.freeze({ hosts: new Set<string>(), ranges: [], ports });
  const hosts = new Set<string>();
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  const bad: string[] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const bare = entry.replace(/^\[|\]$/g, '');
    if (bare.includes('/')) {
      try {
        ranges.push(ipaddr.parseCIDR(bare));
      } catch {
        bad.push(entry);
      }
    } else if (ipaddr.isValid(bare)) {
      const a = ipaddr.parse(bare);
      ranges.push([a, a.kind() === 'ipv4' ? 32 : 128]);
    } else if (HOST_NAME.test(entry)) {
      hosts.add(entry.toLowerCase().replace(/\.$/, ''));
    } else {
      bad.push(entry);
    }
  }
  if (bad.length > 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `WEBHOOK_ALLOWED_HOSTS: not a host name, address or CIDR: ${bad.map((b) => JSON.stringify(b.slice(0, 100))).join(', ')}`, {
      retriable: false,
      details: { field: 'WEBHOOK_ALLOWED_HOSTS' },
    });
  }
  return Object.freeze({ hosts, ranges: Object.freeze(ranges), ports });
}

function inRanges(a: ipaddr.IPv4 | ipaddr.IPv6, allow: AllowList): boolean {
  return allow.ranges.some(([net, bits]) => a.kind() === net.kind() && a.match(net, bits));
}

/**
 * Why an address may not be a webhook target, or undefined when it may (a global unicast
 * address, or one inside an allowed range). IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is refused as
 * such, whatever it maps to.
 */
export function addressProblem(address: string, allow: AllowList = EMPTY_ALLOW_LIST): string | undefined {
  if (!ipaddr.isValid(address)) return `${address.slice(0, 100)} is not an IP address`;
  const a = ipaddr.parse(address);
  if (inRanges(a, allow)) return undefined;
  // ::/96 (IPv4-compatible, deprecated by RFC 4291 §2.5.5.1): ipaddr.js calls `::a9fe:a9fe` unicast,
  // and a host that routes ::/96 (sit tunnels) reaches the IPv4 address in its last 32 bits.
  const ipv4Compatible = a.kind() === 'ipv6' && (a as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0);
  const known = a.range();
  const range = known === 'unicast' && ipv4Compatible ? 'ipv4Compatible' : known;
  if (range === 'unicast') return undefined;
  return `${a.toString()} is a ${range} address (${a.kind()}); only global unicast addresses are allowed unless WEBHOOK_ALLOWED_HOSTS lists it`;
}

/** The URL parts a target check needs; the URL without query and credentials as the sink's name. */
export interface TargetUrl {
  readonly url: URL;
  /** Lower-case host without brackets or a trailing dot. */
  readonly host: string;
  /** The host is an IP literal. */
  readonly literal: boolean;
  /** Listed by host name in the allow list. */
  readonly hostAllowed: boolean;
}

/**
 * The static checks (no DNS): scheme, credentials, fragment, length, host syntax; `http` only for
 * an allow-listed host name (an allow-listed address is checked after resolution).
 * Errors: CEG_WEBHOOK_TARGET_REFUSED naming `delivery.url`.
 */
export function checkTargetUrl(text: string, allow: AllowList = EMPTY_ALLOW_LIST): TargetUrl {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_URL_LENGTH) throw refused(`webhook URLs are 1–${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refused('not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refused(`scheme ${url.protocol.slice(0, 20)} refused: http or https only`);
  if (url.username !== '' || url.password !== '') throw refused('credentials in the URL are refused: put the sink’s own credentials in delivery.headers (stored encrypted)');
  if (url.hash !== '') throw refused('a fragment is never sent; remove it');
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  const literal = ipaddr.isValid(host);
  if (!literal && !HOST_NAME.test(host)) throw refused(`host ${host.slice(0, 100)} is not a valid host name`);
  const hostAllowed = !literal && allow.hosts.has(host);
  if (literal) {
    const problem = addressProblem(host, allow);
    if (problem !== undefined) throw refused(problem, { address: host });
  }
  const addressAllowed = literal && inRanges(ipaddr.parse(host), allow);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const ports = allow.ports ?? DEFAULT_PORTS;
  // A host name whose addresses the allow list names (WEBHOOK_ALLOWED_HOSTS=127.0.0.1, a URL naming
  // localhost, as in docs/subscriptions.md "Try it" on port 9000) is refused here before the https
  // rule below: say the same about it, or the port is all the caller reads.
  const asWritten = !literal && (allow.hosts.size > 0 || allow.ranges.length > 0) ? ` (${host.slice(0, 100)} is a host name and WEBHOOK_ALLOWED_HOSTS matches the URL's host as written: list the name itself, or use the address in the URL)` : '';
  if (!hostAllowed && !addressAllowed && ports !== 'any' && !ports.has(port)) {
    throw refused(`port ${port} refused: webhooks use ${[...ports].sort((a, b) => a - b).join(', ')} unless WEBHOOK_ALLOWED_PORTS lists the port (or *) or WEBHOOK_ALLOWED_HOSTS lists the host${asWritten}`, { port });
  }
  if (url.protocol === 'http:' && !hostAllowed && !addressAllowed) {
    // A fresh-user trial tripped here: WEBHOOK_ALLOWED_HOSTS=127.0.0.1 and a URL naming localhost.
    throw refused(`https is required unless the host is listed in WEBHOOK_ALLOWED_HOSTS${literal ? '' : ` (${host.slice(0, 100)} is a host name: list the name itself, or use the address in the URL)`}`);
  }
  return { url, host, literal, hostAllowed };
}

/** The sink's name in logs and dead letters: scheme, host, port and path — no query, no credentials. */
export function sinkName(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** A target that passed: the address to connect to. */
export interface ResolvedTarget extends TargetUrl {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to every address (A and AAAA). */
export type Lookup = (host: string) => Promise<readonly { readonly address: string; readonly family: number }[]>;

/**
 * Targets with an IP-literal host that passed, per allow list and URL text: their check needs no
 * DNS and its answer depends on nothing else, so it is made once, not before every attempt (it was
 * ~5 % of a push delivery's CPU). Host names are resolved and checked before every attempt.
 * Bounded: at most 1,024 URLs per allow list, then it starts over.
 */
const literalTargets = new WeakMap<AllowList, Map<string, ResolvedTarget>>();
function rememberLiteral(allow: AllowList, text: string, t: ResolvedTarget): void {
  let m = literalTargets.get(allow);
  if (m === undefined) literalTargets.set(allow, (m = new Map<string, ResolvedTarget>()));
  if (m.size >= 1024) m.clear();
  m.set(text, t);
}

export const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/**
 * Every check, DNS included: the host's addresses must all pass (one refused address refuses the
 * target: an attacker's name with a private address among public ones gets nowhere), unless the
 * host name itself is allow-listed. Returns the first address, the one to connect to.
 * Errors: CEG_WEBHOOK_TARGET_REFUSED; CEG_SINK_FAILED (retriable) when the name does not resolve now.
 * Those that depend on DNS say only {@link TARGET_NOT_ALLOWED} (what was resolved: {@link hiddenDetail});
 * those about the URL text itself (scheme, credentials, an address literal) say what is wrong.
 */
export async function resolveTarget(text: string, allow: AllowList = EMPTY_ALLOW_LIST, lookup: Lookup = systemLookup): Promise<ResolvedTarget> {
  const known = literalTargets.get(allow)?.get(text);
  if (known !== undefined) return known;
  const t = checkTargetUrl(text, allow);
  if (t.literal) {
    const a = ipaddr.parse(t.host);
    if (t.url.protocol === 'http:' && !inRanges(a, allow)) throw refused('https is required unless the host is listed in WEBHOOK_ALLOWED_HOSTS');
    const resolved: ResolvedTarget = Object.freeze({ ...t, address: a.toString(), family: a.kind() === 'ipv4' ? 4 : 6 });
    rememberLiteral(allow, text, resolved);
    return resolved;
  }
  let answers: readonly { address: string; family: number }[];
  try {
    answers = await lookup(t.host);
  } catch (err) {
    throw hidden('CEG_SINK_FAILED', `cannot resolve ${t.host}`, err);
  }
  if (answers.length === 0) throw hidden('CEG_SINK_FAILED', `${t.host} has no address`);
  if (!t.hostAllowed) {
    for (const a of answers) {
      const problem = addressProblem(a.address, allow);
      if (problem !== undefined) throw hidden('CEG_WEBHOOK_TARGET_REFUSED', `${t.host} resolves to ${problem}`);
    }
    if (t.url.protocol === 'http:' && !answers.every((a) => inRanges(ipaddr.parse(a.address), allow))) throw hidden('CEG_WEBHOOK_TARGET_REFUSED', `${t.host} resolves to an address outside WEBHOOK_ALLOWED_HOSTS: https is required`);
  }
  const first = answers[0]!;
  return { ...t, address: ipaddr.parse(first.address).toString(), family: first.family === 6 ? 6 : 4 };
}
