/**
 * The CLI's gateway client warns (once, on stderr, never refusing) when the API key would go as a
 * bearer over plain http:// to a host that is not loopback (127.0.0.0/8, ::1, localhost): anyone on
 * the network path can read it. The requests are answered by a stubbed fetch (no network).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayClient, keyInTheClear } from '../../../src/cli/gateway-client.js';

const KEY = 'k3y-never-printed-0123456789';

/** A client whose requests fetch answers 200 `{}`, recording the URLs and authorization headers sent. */
function stubbed(base: string, apiKey?: string): { client: GatewayClient; warnings: string[]; sent: { url: string; authorization: string | undefined }[] } {
  const warnings: string[] = [];
  const sent: { url: string; authorization: string | undefined }[] = [];
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    sent.push({ url: input instanceof Request ? input.url : input instanceof URL ? input.href : input, authorization: (init?.headers as Record<string, string> | undefined)?.authorization });
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  });
  const client = new GatewayClient({ base, ...(apiKey === undefined ? {} : { apiKey }), warn: (l) => void warnings.push(l) });
  return { client, warnings, sent };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('keyInTheClear', () => {
  it.each([
    'http://gw.example:8080',
    'http://10.0.0.5:8080',
    'http://192.168.1.10',
    'http://[2001:db8::1]:8080',
    'http://128.0.0.1',
    'http://localhost.example.com',
    'http://127.example.com',
    'http://[::2]',
  ])('plain http to %s: in the clear', (u) => {
    expect(keyInTheClear(new URL(u))).toBe(true);
  });

  it.each([
    'https://gw.example:8443',
    'https://10.0.0.5',
    'http://127.0.0.1:8080',
    'http://127.1.2.3',
    'http://127.1', // WHATWG shorthand for 127.0.0.1
    'http://localhost:8080',
    'http://LOCALHOST',
    'http://localhost.:8080',
    'http://[::1]:8080',
    'http://[::ffff:127.0.0.1]:8080',
  ])('%s: not', (u) => {
    expect(keyInTheClear(new URL(u))).toBe(false);
  });
});

describe('GatewayClient over http:// beyond loopback', () => {
  it('with a key: one warning on the first request, none after; the requests go anyway, key and all; the warning never holds the key', async () => {
    const { client, warnings, sent } = stubbed('http://gw.example:8080/', KEY);
    for (const path of ['/subscriptions/a/replay', '/subscriptions/a', '/catalog']) expect((await client.call('GET', path)).status).toBe(200);
    expect(sent.map((s) => s.authorization)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY}`, `Bearer ${KEY}`]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('gw.example:8080');
    expect(warnings[0]).toMatch(/API key is sent unencrypted over http:\/\//);
    expect(warnings[0]).toContain('https://');
    expect(warnings[0]).not.toContain(KEY);
  });

  it('no warning without a key, over https, or to a loopback host', async () => {
    for (const [base, key] of [['http://gw.example:8080', undefined], ['https://gw.example:8443', KEY], ['http://127.0.0.1:8080', KEY], ['http://localhost:8080', KEY], ['http://[::1]:8080', KEY]] as const) {
      const { client, warnings } = stubbed(base, key);
      await client.call('POST', '/subscriptions/a/replay', { to: 'earliest' });
      expect(warnings, base).toEqual([]);
      vi.restoreAllMocks();
    }
  });

  it('by default the warning goes to stderr', async () => {
    vi.spyOn(globalThis, 'fetch').mockImplementation(async () => new Response('{}', { status: 200 }));
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const client = new GatewayClient({ base: 'http://10.1.2.3:8080', apiKey: KEY });
    await client.call('GET', '/catalog');
    await client.call('GET', '/catalog');
    const lines = write.mock.calls.map((c) => String(c[0]));
    expect(lines.filter((l) => l.includes('sent unencrypted'))).toHaveLength(1);
    expect(lines.join('')).not.toContain(KEY);
  });
});
