/**
 * The client address a request's failed authentications are counted against (issue 11: "failed
 * attempts counted and rate-limited per client address"). Without trusted proxies it is the TCP
 * peer; behind a load balancer or reverse proxy that would be the proxy itself — every partner's
 * failures in one bucket — so `TRUSTED_PROXIES` names the proxies whose `X-Forwarded-For` is
 * believed. The address is then the right-most one in `X-Forwarded-For` that is not a trusted
 * proxy (proxy-addr's rule, the one express's `trust proxy` uses): a client cannot choose its
 * bucket by sending its own `X-Forwarded-For`, because only hops added by trusted proxies are
 * skipped.
 * Spec: issue 11; RFC 7239 §5.2 and the de-facto `X-Forwarded-For` header.
 */
import type { IncomingMessage } from 'node:http';
import proxyAddr from 'proxy-addr';

/** How to find a request's client address. */
export type ClientAddressOf = (req: IncomingMessage) => string;

/**
 * `trusted`: IP addresses, CIDR ranges or proxy-addr's names (`loopback`, `linklocal`,
 * `uniquelocal`); empty or undefined: the TCP peer, `X-Forwarded-For` ignored.
 * Errors: TypeError from proxy-addr for an entry that is no address or range (the config's
 * `TRUSTED_PROXIES` check refuses those at start-up).
 */
export function clientAddressOf(trusted: readonly string[] | undefined): ClientAddressOf {
  if (trusted === undefined || trusted.length === 0) return (req) => req.socket.remoteAddress ?? 'unknown';
  const trust = proxyAddr.compile([...trusted]);
  return (req) => (req.socket.remoteAddress === undefined ? 'unknown' : proxyAddr(req, trust));
}
