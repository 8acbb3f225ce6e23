/**
 * The client address a request's failed authentications are counted against (issue 11: "failed
 * attempts counted and rate-limited per client address"). Without trusted proxies it is the TCP
 * peer; behind a load balancer or reverse proxy that would be the proxy itself — every partner's
 * failures in one bucket — so `TRUSTED_PROXIES` names the proxies whose `X-Forwarded-For` is
 * believed. The address is then the right-most one in `X-Forwarded-For` that is not a trusted
 * proxy (proxy-addr's rule, the one express's `trust proxy` uses): a client cannot choose its
 * bucket by sending its own `X-Forwarded-For`, because only hops added by trusted proxies are
 * skipped.
 *
 * Every address is put in one canonical form before it is compared or used as a key, so one client
 * cannot spread its failures over many buckets by writing its address differently: a port is
 * removed (`a.b.c.d:port`, `[v6]:port`, as some proxies append one), brackets too; what is left
 * must be an IP address by `node:net` `isIP` (so `008.8.8.8` is not one); an IPv4-mapped IPv6
 * address (`::ffff:8.8.8.8`) is its IPv4 address; IPv6 is written in RFC 5952's canonical form.
 * An entry that is not an IP address after that (`garbage`) is not taken as the client: the
 * answer is the TCP peer's address, as for an untrusted peer. A trusted proxy that forwards a
 * value it cannot vouch for thus puts those requests in its own bucket, which the client cannot
 * vary (choosing the next hop instead would let the client pick it).
 * Spec: issue 11; RFC 7239 §5.2 and the de-facto `X-Forwarded-For` header; RFC 5952 §4.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import proxyAddr from 'proxy-addr';

/** How to find a request's client address. */
export type ClientAddressOf = (req: IncomingMessage) => string;

const V4_WITH_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/;
const BRACKETED = /^\[([^\]]+)\](?::(\d{1,5}))?$/;

/**
 * The canonical form of one address as a proxy or the socket wrote it, or undefined when it is no
 * IP address: port and brackets removed, IPv4-mapped IPv6 as IPv4, IPv6 per RFC 5952.
 */
export function canonicalAddress(raw: string): string | undefined {
  const value = raw.trim();
  const m = V4_WITH_PORT.exec(value) ?? BRACKETED.exec(value);
  if (m !== null && m[2] !== undefined && Number(m[2]) > 65_535) return undefined;
  const host = m?.[1] ?? value;
  const version = isIP(host);
  if (version === 4) return host;
  if (version !== 6) return undefined;
  try {
    const v6 = ipaddr.IPv6.parse(host);
    return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toString();
  } catch {
    return undefined; // isIP accepts a form ipaddr.js does not parse: not taken as an address
  }
}

/**
 * `trusted`: IP addresses, CIDR ranges or proxy-addr's names (`loopback`, `linklocal`,
 * `uniquelocal`); empty or undefined: the TCP peer, `X-Forwarded-For` ignored. Every answer is in
 * canonical form ({@link canonicalAddress}); `unknown` when the socket no longer knows its peer.
 * Errors: TypeError from proxy-addr for an entry that is no address or range (the config's
 * `TRUSTED_PROXIES` check refuses those at start-up).
 */
export function clientAddressOf(trusted: readonly string[] | undefined): ClientAddressOf {
  const peerOf = (req: IncomingMessage): string | undefined => {
    const raw = req.socket.remoteAddress;
    return raw === undefined ? undefined : (canonicalAddress(raw) ?? raw);
  };
  if (trusted === undefined || trusted.length === 0) return (req) => peerOf(req) ?? 'unknown';
  const trust = proxyAddr.compile([...trusted]);
  return (req) => {
    const peer = peerOf(req);
    if (peer === undefined) return 'unknown';
    // The socket's address, then X-Forwarded-For from right to left (the nearest hop first).
    const hops = proxyAddr.all(req);
    let current = peer;
    for (let i = 0; i < hops.length - 1; i++) {
      if (!trust(current, i)) return current;
      const next = canonicalAddress(hops[i + 1]!);
      if (next === undefined) return peer;
      current = next;
    }
    return current;
  };
}
