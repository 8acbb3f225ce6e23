/** The failed-attempt limit of Authenticator: which addresses it forgets, credentials in flight, long credentials. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { Authenticator, parsePartners } from '../../../src/http/auth/index.js';
import { MAX_CREDENTIAL_CHARS, MAX_TRACKED_ADDRESSES, MAX_WAITING_TOKENS_PER_ADDRESS } from '../../../src/http/auth/authenticate.js';
import type { AuthOutcome } from '../../../src/http/auth/authenticate.js';
import type { OidcVerifier } from '../../../src/http/auth/oidc.js';

const catalog = loadCatalog();
const H1 = createHash('sha256').update('key-one', 'utf8').digest('hex');
const [acme] = parsePartners(`partners: [{ id: acme, keys: [{ sha256: ${H1} }] }]`, 'p.yaml', catalog, {});

function sync(o: AuthOutcome | Promise<AuthOutcome>): AuthOutcome {
  if (o instanceof Promise) throw new Error('unexpected promise');
  return o;
}
const code = (o: AuthOutcome): string => (o.ok ? 'ok' : o.error.code);

describe('Authenticator: tracked addresses', () => {
  it('a locked-out address stays locked while failures of more than MAX_TRACKED_ADDRESSES other addresses come and go', () => {
    const a = new Authenticator([acme!], { failuresPerMinute: 3 });
    for (let i = 0; i < 3; i++) sync(a.authenticate(['Bearer wrong'], '192.0.2.66'));
    expect(code(sync(a.authenticate(['Bearer key-one'], '192.0.2.66')))).toBe('CEG_RATE_LIMITED');
    for (let i = 0; i < MAX_TRACKED_ADDRESSES + 50; i++) sync(a.authenticate(['Bearer wrong'], `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`));
    expect(code(sync(a.authenticate(['Bearer key-one'], '192.0.2.66')))).toBe('CEG_RATE_LIMITED');
  });
});

describe('Authenticator: OIDC tokens in flight', () => {
  const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhY21lIn0.c2ln';
  /** A verifier whose answers wait until `open()`: every request arrives before any verification ends. */
  function gatedVerifier(answer: (token: string) => typeof acme): { oidc: OidcVerifier; open: () => void; calls: () => number } {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let calls = 0;
    const fake = {
      verify: async (token: string) => {
        calls++;
        await gate;
        return answer(token);
      },
    };
    return { oidc: fake as unknown as OidcVerifier, open, calls: () => calls };
  }

  it('200 concurrent bad tokens from one address: exactly the allowance is verified and answered 401, the rest 429', async () => {
    const v = gatedVerifier(() => undefined);
    const a = new Authenticator([acme!], { failuresPerMinute: 3, oidc: v.oidc });
    const pending = Array.from({ length: 200 }, () => Promise.resolve(a.authenticate([`Bearer ${JWT}`], '198.51.100.9')));
    v.open();
    const codes = (await Promise.all(pending)).map(code);
    expect(codes.filter((c) => c === 'CEG_UNAUTHENTICATED')).toHaveLength(3);
    expect(codes.filter((c) => c === 'CEG_RATE_LIMITED')).toHaveLength(197);
    expect(v.calls()).toBe(3);
  });

  it('a good token gives its reservation back: valid tokens never use up the allowance', async () => {
    const v = gatedVerifier(() => acme);
    const a = new Authenticator([acme!], { failuresPerMinute: 2, oidc: v.oidc });
    v.open();
    for (let i = 0; i < 5; i++) expect(code(await a.authenticate([`Bearer ${JWT}`], '198.51.100.10'))).toBe('ok');
    for (let i = 0; i < 2; i++) expect(code(await a.authenticate(['Bearer wrong'], '198.51.100.10'))).toBe('CEG_UNAUTHENTICATED');
    expect(code(await a.authenticate([`Bearer ${JWT}`], '198.51.100.10'))).toBe('CEG_RATE_LIMITED');
  });
});

describe('Authenticator: valid OIDC tokens are never limited as failed attempts', () => {
  const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhY21lIn0.c2ln';
  function gated(answer: () => typeof acme): { oidc: OidcVerifier; open: () => void; calls: () => number } {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let calls = 0;
    const fake = {
      verify: async () => {
        calls++;
        await gate;
        return answer();
      },
    };
    return { oidc: fake as unknown as OidcVerifier, open, calls: () => calls };
  }

  it('30 concurrent valid tokens while the key set is fetched (allowance 10): all accepted, and an API key of the address meanwhile too', async () => {
    const v = gated(() => acme);
    const a = new Authenticator([acme!], { failuresPerMinute: 10, oidc: v.oidc });
    const pending = Array.from({ length: 30 }, () => Promise.resolve(a.authenticate([`Bearer ${JWT}`], '198.51.100.30')));
    expect(code(sync(a.authenticate(['Bearer key-one'], '198.51.100.30')))).toBe('ok');
    v.open();
    expect((await Promise.all(pending)).map(code)).toEqual(Array.from({ length: 30 }, () => 'ok'));
    expect(v.calls()).toBe(30);
    // None of them was charged: the whole allowance of wrong keys is still there.
    for (let i = 0; i < 10; i++) expect(code(sync(a.authenticate(['Bearer wrong'], '198.51.100.30')))).toBe('CEG_UNAUTHENTICATED');
    expect(code(sync(a.authenticate(['Bearer wrong'], '198.51.100.30')))).toBe('CEG_RATE_LIMITED');
  });

  it('bad tokens in flight and wrong API keys at once: the excess is a debt (a lockout longer than a minute), not a free overshoot', async () => {
    const v = gated(() => undefined);
    const a = new Authenticator([acme!], { failuresPerMinute: 3, oidc: v.oidc });
    const pending = Array.from({ length: 3 }, () => Promise.resolve(a.authenticate([`Bearer ${JWT}`], '198.51.100.31')));
    for (let i = 0; i < 3; i++) expect(code(sync(a.authenticate(['Bearer wrong'], '198.51.100.31')))).toBe('CEG_UNAUTHENTICATED');
    v.open();
    expect((await Promise.all(pending)).map(code)).toEqual(['CEG_UNAUTHENTICATED', 'CEG_UNAUTHENTICATED', 'CEG_UNAUTHENTICATED']);
    const o = sync(a.authenticate(['Bearer key-one'], '198.51.100.31'));
    expect(code(o)).toBe('CEG_RATE_LIMITED');
    expect(!o.ok && Number(o.headers['retry-after'])).toBeGreaterThan(60);
  });

  it('past MAX_WAITING_TOKENS_PER_ADDRESS waiting tokens, one more is 429 at once, not counted; the waiting ones are then verified', async () => {
    const v = gated(() => acme);
    const a = new Authenticator([acme!], { failuresPerMinute: 1, oidc: v.oidc });
    const pending = Array.from({ length: 1 + MAX_WAITING_TOKENS_PER_ADDRESS }, () => Promise.resolve(a.authenticate([`Bearer ${JWT}`], '198.51.100.32')));
    const extra = await a.authenticate([`Bearer ${JWT}`], '198.51.100.32');
    expect(code(extra)).toBe('CEG_RATE_LIMITED');
    expect(!extra.ok && extra.error.message).toContain('being verified at once');
    v.open();
    expect((await Promise.all(pending)).every((o) => o.ok)).toBe(true);
    expect(code(sync(a.authenticate(['Bearer wrong'], '198.51.100.32')))).toBe('CEG_UNAUTHENTICATED');
  });
});

describe('Authenticator: long credentials', () => {
  it('a valid OIDC token of 6,000 characters is accepted (identity providers issue tokens over 4 KiB)', async () => {
    const long = `eyJhbGciOiJSUzI1NiJ9.${'a'.repeat(6000)}.c2ln`;
    const fake = { verify: (token: string) => Promise.resolve(token === long ? acme : undefined) };
    const a = new Authenticator([acme!], { failuresPerMinute: 3, oidc: fake as unknown as OidcVerifier });
    expect(code(await a.authenticate([`Bearer ${long}`], '198.51.100.20'))).toBe('ok');
  });

  it('a credential longer than MAX_CREDENTIAL_CHARS is 401 naming the bound in the detail', () => {
    const a = new Authenticator([acme!], { failuresPerMinute: 3 });
    const o = sync(a.authenticate([`Bearer ${'k'.repeat(MAX_CREDENTIAL_CHARS)}`], '198.51.100.21'));
    expect(code(o)).toBe('CEG_UNAUTHENTICATED');
    expect(!o.ok && o.error.message).toContain(String(MAX_CREDENTIAL_CHARS));
    expect(!o.ok && o.error.details.field).toBe('authorization');
    expect(MAX_CREDENTIAL_CHARS).toBe(16 * 1024);
  });
});
