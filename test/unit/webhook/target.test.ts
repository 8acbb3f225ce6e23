/**
 * Webhook target rules on the validator alone (no traffic anywhere): every refused address class,
 * property-based over generated addresses of each class, the allow list, https, credentials, and
 * a host name whose DNS answers include one refused address.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EMPTY_ALLOW_LIST, addressProblem, checkTargetUrl, parseAllowList, resolveTarget, targetChecker } from '../../../src/connectors/sinks/webhook/index.js';
import { TARGET_NOT_ALLOWED, hiddenDetail } from '../../../src/connectors/sinks/webhook/target.js';
import { silentLogger } from '../../../src/observability/index.js';
import type { Logger } from '../../../src/observability/index.js';
import { caught, caughtAsync } from '../../helpers/errors.js';

const octet = fc.integer({ min: 0, max: 255 });
const v4 = (a: number, b: fc.Arbitrary<number> = octet): fc.Arbitrary<string> => fc.tuple(b, octet, octet).map(([x, y, z]) => `${a}.${x}.${y}.${z}`);
const hex = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));

const refusedClasses: [string, fc.Arbitrary<string>][] = [
  ['loopback 127/8', v4(127)],
  ['RFC 1918 10/8', v4(10)],
  ['RFC 1918 172.16/12', fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([b, c, d]) => `172.${b}.${c}.${d}`)],
  ['RFC 1918 192.168/16', fc.tuple(octet, octet).map(([c, d]) => `192.168.${c}.${d}`)],
  ['link-local 169.254/16', fc.tuple(octet, octet).map(([c, d]) => `169.254.${c}.${d}`)],
  ['CGNAT 100.64/10', fc.tuple(fc.integer({ min: 64, max: 127 }), octet, octet).map(([b, c, d]) => `100.${b}.${c}.${d}`)],
  ['0/8', v4(0)],
  ['multicast 224/4', fc.tuple(fc.integer({ min: 224, max: 239 }), octet, octet, octet).map((p) => p.join('.'))],
  ['unique-local fc00::/7', fc.tuple(fc.constantFrom('fc', 'fd'), fc.integer({ min: 0, max: 255 }), hex, hex).map(([p, b, c, d]) => `${p}${b.toString(16).padStart(2, '0')}:${c}::${d}`)],
  ['link-local fe80::/10', fc.tuple(hex, hex).map(([c, d]) => `fe80::${c}:${d}`)],
  ['IPv4-mapped ::ffff:0:0/96', fc.tuple(octet, octet, octet, octet).map((p) => `::ffff:${p.join('.')}`)],
  ['multicast ff00::/8', fc.tuple(hex, hex).map(([c, d]) => `ff02::${c}:${d}`)],
  // IPv4-compatible ::/96 (RFC 4291 §2.5.5.1, deprecated), any IPv4 in its last 32 bits, in hex or dotted form.
  ['IPv4-compatible ::/96', fc.tuple(hex, hex, fc.boolean()).map(([c, d, dotted]) => (dotted ? `::${parseInt(c, 16) >> 8}.${parseInt(c, 16) & 255}.${parseInt(d, 16) >> 8}.${parseInt(d, 16) & 255}` : `::${c}:${d}`))],
];

describe('addressProblem', () => {
  it.each(refusedClasses)('refuses every %s address', (_, arb) => {
    fc.assert(fc.property(arb, (a) => addressProblem(a) !== undefined), { numRuns: 300 });
  });

  it('refuses the named ones and accepts global unicast', () => {
    for (const a of ['169.254.169.254', '0.0.0.0', '::', '::1', '255.255.255.255', '64:ff9b::a00:1', '::a9fe:a9fe', '::7f00:2', '::c0a8:101', '::2', '::808:808']) expect(addressProblem(a), a).toBeDefined();
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '100.63.255.255', '172.32.0.1']) expect(addressProblem(a), a).toBeUndefined();
  });

  it('an allow-listed range lets its addresses pass, and nothing else', () => {
    const allow = parseAllowList('127.0.0.1, 10.1.0.0/16, hooks.internal');
    expect(addressProblem('127.0.0.1', allow)).toBeUndefined();
    expect(addressProblem('127.0.0.2', allow)).toBeDefined();
    fc.assert(fc.property(octet, octet, (c, d) => addressProblem(`10.1.${c}.${d}`, allow) === undefined && addressProblem(`10.2.${c}.${d}`, allow) !== undefined));
  });

  it('refuses a malformed allow list naming the entry', () => {
    expect(caught(() => parseAllowList('127.0.0.1, not a host!')).message).toContain('not a host!');
  });
});

describe('checkTargetUrl / resolveTarget', () => {
  it('needs https unless the host is allow-listed, refuses credentials, fragments and other schemes', () => {
    const allow = parseAllowList('127.0.0.1,partner.example');
    expect(caught(() => checkTargetUrl('http://203.0.113.9/x')).code).toBe('CEG_WEBHOOK_TARGET_REFUSED');
    expect(checkTargetUrl('http://partner.example/x', allow).hostAllowed).toBe(true);
    expect(checkTargetUrl('http://127.0.0.1:9/x', allow).host).toBe('127.0.0.1');
    for (const u of ['https://a:b@partner.example/', 'https://partner.example/#f', 'gopher://partner.example/', 'https://0x7f.1/', 'https://[::1]/', 'not a url']) {
      const e = caught(() => checkTargetUrl(u));
      expect(e.code, u).toBe('CEG_WEBHOOK_TARGET_REFUSED');
      expect(e.details.field).toBe('delivery.url');
    }
  });

  it('refuses a host name when any of its addresses is refused; connects to the address that passed', async () => {
    const lookup = (answers: string[]) => async () => answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const bad = await caughtAsync(resolveTarget('https://rebind.example/hook', undefined, lookup(['93.184.216.34', '10.0.0.7'])));
    expect(bad.code).toBe('CEG_WEBHOOK_TARGET_REFUSED');
    // What DNS answered is for the log (hiddenDetail), never the message a partner reads.
    expect(bad.message).toBe(TARGET_NOT_ALLOWED);
    expect(hiddenDetail(bad)).toContain('10.0.0.7');
    const ok = await resolveTarget('https://good.example/hook', undefined, lookup(['93.184.216.34', '2606:2800:220:1::1']));
    expect(ok).toMatchObject({ address: '93.184.216.34', family: 4, host: 'good.example' });
    // An allow-listed host name is trusted whatever it resolves to.
    const internal = await resolveTarget('http://hooks.internal/x', parseAllowList('hooks.internal'), lookup(['10.0.0.7']));
    expect(internal.address).toBe('10.0.0.7');
  });
});

describe('a refused IPv4 address written as the URL parser also reads it (decimal, hex, octal, shortened)', () => {
  // WHATWG URL reads `https://2130706433/`, `https://0x7f.1/` and `https://0177.0.0.1/` as 127.0.0.1: each is an
  // address literal, refused without asking DNS (a name server could answer anything for it).
  const refusedV4 = fc.oneof(v4(127), v4(10), v4(0), fc.tuple(octet, octet).map(([c, d]) => `169.254.${c}.${d}`), fc.tuple(octet, octet).map(([c, d]) => `192.168.${c}.${d}`));
  const spellings = (dotted: string): string[] => {
    const p = dotted.split('.').map(Number);
    const n = ((p[0]! << 24) >>> 0) + (p[1]! << 16) + (p[2]! << 8) + p[3]!;
    return [String(n), `0x${n.toString(16)}`, p.map((x) => `0${x.toString(8)}`).join('.'), p.map((x) => `0x${x.toString(16)}`).join('.'), `${p[0]}.${(p[1]! << 16) + (p[2]! << 8) + p[3]!}`];
  };
  it('each spelling is refused, naming the address, with no DNS look-up', async () => {
    const noDns = (): never => {
      throw new Error('DNS asked for an address literal');
    };
    await fc.assert(
      fc.asyncProperty(refusedV4, async (dotted) => {
        for (const host of spellings(dotted)) {
          const err = await caughtAsync(resolveTarget(`https://${host}/hook`, EMPTY_ALLOW_LIST, noDns));
          expect(err.code, host).toBe('CEG_WEBHOOK_TARGET_REFUSED');
          expect(err.message, host).toContain(dotted);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('targetChecker (a new or changed URL)', () => {
  it('B-F7: a name resolving to a refused address, one that does not resolve and one without address get the same generic refusal; the detail goes to the log only', async () => {
    const logged: unknown[] = [];
    const log = { ...silentLogger(), info: (o: unknown) => void logged.push(o) } as unknown as Logger;
    const byName: Record<string, string[] | Error> = { 'vm.example': ['127.0.0.1'], 'ten.example': ['10.1.2.3'], 'gone.example': new Error('ENOTFOUND gone.example'), 'empty.example': [] };
    const lookup = async (host: string): Promise<{ address: string; family: number }[]> => {
      const a = byName[host];
      if (a instanceof Error) throw a;
      return (a ?? []).map((address) => ({ address, family: 4 }));
    };
    const check = targetChecker(EMPTY_ALLOW_LIST, lookup, log);
    const answers: { code: string; message: string; details: Record<string, unknown> }[] = [];
    for (const host of Object.keys(byName)) answers.push(await caughtAsync(check(`https://${host}/x`)));
    for (const e of answers) {
      expect(e).toMatchObject({ code: 'CEG_WEBHOOK_TARGET_REFUSED', message: TARGET_NOT_ALLOWED });
      expect(e.details).toEqual({ field: 'delivery.url' });
      expect(JSON.stringify(e.details) + e.message).not.toMatch(/127\.0\.0\.1|10\.1\.2\.3|ENOTFOUND|resolve/);
    }
    expect(JSON.stringify(logged)).toContain('vm.example resolves to 127.0.0.1');
    expect(JSON.stringify(logged)).toContain('cannot resolve gone.example');
    // The URL text itself (the partner's own input) is still explained.
    expect((await caughtAsync(check('https://127.0.0.1/x'))).message).toMatch(/loopback/);
  });


  it('refuses an empty fragment too (it parses to none but stays in the stored text); the check before each attempt lets a stored one deliver', async () => {
    const allow = parseAllowList('127.0.0.1');
    const check = targetChecker(allow);
    await check('http://127.0.0.1:9/x');
    for (const u of ['http://127.0.0.1:9/x#', 'http://127.0.0.1:9/x?q=1#', 'http://127.0.0.1:9/#f']) {
      const e = await caughtAsync(check(u));
      expect(e.code, u).toBe('CEG_WEBHOOK_TARGET_REFUSED');
      expect(e.details.field).toBe('delivery.url');
      expect(e.message).toMatch(/fragment/);
    }
    const stored = (await resolveTarget('http://127.0.0.1:9/x#', allow)).url;
    expect([stored.hash, stored.pathname + stored.search]).toEqual(['', '/x']); // what a request is sent to
  });
});
