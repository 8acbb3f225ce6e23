/** Whether a listen address (`HOST`) is a loopback one: `localhost`, `::1` or 127.0.0.0/8. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Whether an HTTP `Host` header (RFC 9110 §7.2: `host[:port]`, an IPv6 address in brackets) names
 * a loopback host: `localhost` or a name under `.localhost` (RFC 6761 §6.3: always loopback),
 * 127.0.0.0/8, or `[::1]`. Case-insensitive; a trailing dot of a name is allowed.
 */
export function isLoopbackHostHeader(header: string): boolean {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/.exec(header.trim());
  if (m === null) return false;
  if (m[1] !== undefined) return m[1] === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(m[1]);
  const host = m[2]!.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host.endsWith('.localhost') || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
