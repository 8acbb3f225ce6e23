/**
 * The webhook port rule: a target whose host is not allow-listed may use 443 or 80 (the URL's
 * default when it names none) and the ports of WEBHOOK_ALLOWED_PORTS (`*`: any); a host name or
 * address literal in WEBHOOK_ALLOWED_HOSTS keeps any port. Before, any port of a public address
 * was accepted: a partner could make the gateway POST to a public host's SMTP or SSH port, or map
 * which ports answer. The refusal is about the URL text, so it says what is wrong (not the
 * DNS-hiding generic text).
 */
import { describe, expect, it } from 'vitest';
import { checkTargetUrl, parseAllowList, parsePorts, resolveTarget } from '../../../src/connectors/sinks/webhook/index.js';
import { caught, caughtAsync } from '../../helpers/errors.js';

const PUBLIC = '93.184.215.14';
const publicLookup = async (): Promise<readonly { address: string; family: number }[]> => [{ address: PUBLIC, family: 4 }];

describe('webhook target ports', () => {
  it('by default: 443 and 80 (and the scheme default) pass; any other port of a public host is refused naming the port', async () => {
    for (const url of [`https://${PUBLIC}/hook`, `https://${PUBLIC}:443/hook`, `https://${PUBLIC}:80/hook`, 'https://hooks.example.com/h']) expect(() => checkTargetUrl(url), url).not.toThrow();
    for (const port of [22, 25, 5432, 6379, 8080, 8443, 9200, 65535]) {
      const err = caught(() => checkTargetUrl(`https://${PUBLIC}:${port}/hook`));
      expect(err.code, String(port)).toBe('CEG_WEBHOOK_TARGET_REFUSED');
      expect(err.message).toContain(`port ${port} refused`);
      expect(err.details).toMatchObject({ field: 'delivery.url', port });
    }
    // Before every delivery too (resolveTarget runs the same static checks first).
    const late = await caughtAsync(resolveTarget('https://hooks.example.com:25/x', parseAllowList(undefined), publicLookup));
    expect(late.message).toContain('port 25 refused');
  });

  it('a host name refused for its port beside an allow list of addresses says the list matches the URL\'s host as written (docs/subscriptions.md "Try it": WEBHOOK_ALLOWED_HOSTS=127.0.0.1 and http://localhost:9000)', () => {
    const err = caught(() => checkTargetUrl('http://localhost:9000/hook', parseAllowList('127.0.0.1')));
    expect(err.code).toBe('CEG_WEBHOOK_TARGET_REFUSED');
    expect(err.message).toContain('port 9000 refused');
    expect(err.message).toContain('localhost is a host name and WEBHOOK_ALLOWED_HOSTS matches the URL\'s host as written: list the name itself, or use the address in the URL');
    // Without an allow list there is nothing it could have matched: the port alone is said.
    expect(caught(() => checkTargetUrl('https://hooks.example.com:9000/h')).message).not.toContain('as written');
    // An address literal is matched as an address: no such hint.
    expect(caught(() => checkTargetUrl(`https://${PUBLIC}:9000/h`, parseAllowList('127.0.0.1'))).message).not.toContain('as written');
    expect(() => checkTargetUrl('http://localhost:9000/hook', parseAllowList('localhost'))).not.toThrow();
  });

  it('WEBHOOK_ALLOWED_PORTS adds ports, * allows any; an allow-listed host name or address keeps any port', async () => {
    const more = parseAllowList(undefined, '8443, 9443');
    expect(() => checkTargetUrl(`https://${PUBLIC}:8443/h`, more)).not.toThrow();
    expect(() => checkTargetUrl(`https://${PUBLIC}:443/h`, more)).not.toThrow();
    expect(caught(() => checkTargetUrl(`https://${PUBLIC}:25/h`, more)).message).toContain('port 25 refused');
    const any = parseAllowList(undefined, '*');
    expect(() => checkTargetUrl(`https://${PUBLIC}:25/h`, any)).not.toThrow();
    const hosts = parseAllowList('sink.internal, 127.0.0.1, 10.0.0.0/8');
    for (const url of ['http://sink.internal:5432/h', 'http://127.0.0.1:18080/h', 'https://10.1.2.3:9000/h']) expect(() => checkTargetUrl(url, hosts), url).not.toThrow();
    expect(await resolveTarget('http://127.0.0.1:18080/h', hosts)).toMatchObject({ address: '127.0.0.1' });
  });

  it('WEBHOOK_ALLOWED_PORTS that is not a port list is refused naming each entry', () => {
    expect(parsePorts(undefined)).toEqual(new Set([80, 443]));
    expect(parsePorts(' * ')).toBe('any');
    const err = caught(() => parsePorts('8443, 0, 70000, http, 80-90'));
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.message).toBe('WEBHOOK_ALLOWED_PORTS: not a port (1–65535) or *: "0", "70000", "http", "80-90"');
  });
});
