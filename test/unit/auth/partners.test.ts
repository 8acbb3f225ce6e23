/** PARTNERS_FILE parsing (issue 11): the contract shape, keys from env and files, every problem named, no secret echoed. */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { uriReferenceProblem } from '../../../src/envelope/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { Authenticator, keyHash, kindAllowed, parsePartners, sourceAllowed } from '../../../src/http/auth/index.js';
import type { AuthOutcome } from '../../../src/http/auth/authenticate.js';

const catalog = loadCatalog();
const hex = (k: string): string => createHash('sha256').update(k, 'utf8').digest('hex');
const H1 = hex('key-one');
const H2 = hex('key-two');

function problems(text: string, env: Record<string, string> = {}, files: Record<string, string> = {}): string[] {
  try {
    parsePartners(text, 'p.yaml', catalog, env, (p) => {
      if (files[p] === undefined) throw Object.assign(new Error(`ENOENT: no such file, open '${p}'`), { code: 'ENOENT' });
      return files[p];
    });
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return ((err as GatewayError).details.problems as string[]) ?? [];
  }
  return [];
}

describe('parsePartners', () => {
  it('reads the issue\'s shape: keys inline, from the environment and from a file; grants by name or eventId', () => {
    const [p] = parsePartners(
      `partners:
  - id: acme
    keys: [{ sha256: ${H1} }, { sha256Env: ACME_NEXT }, { sha256File: /run/k }]
    sources: ["urn:acme", "urn:acme:*"]
    publish: [PriceLoadingCompleted, b785f117-3e61-4864-89c3-4accf13140c2]
    subscribe: ["*"]
    permissions: [replay, redrive]
    roles: [admin]
    maxSubscriptions: 3
`,
      'p.yaml',
      catalog,
      { ACME_NEXT: H2 },
      () => `${hex('key-three')}\n`,
    );
    expect(p!.id).toBe('acme');
    expect(p!.keyHashes.map((b) => b.toString('hex'))).toEqual([H1, H2, hex('key-three')]);
    expect([...p!.publish.eventIds].sort()).toEqual(['78b8fd47-3ff3-4881-9419-7bfe84ce89cb', 'b785f117-3e61-4864-89c3-4accf13140c2']);
    expect(p!.subscribe.all).toBe(true);
    expect([...p!.permissions]).toEqual(['replay', 'redrive']);
    expect(p!.roles.has('admin')).toBe(true);
    expect(p!.maxSubscriptions).toBe(3);
    expect(sourceAllowed(p!.sources, 'urn:acme')).toBe(true);
    expect(sourceAllowed(p!.sources, 'urn:acme:eu')).toBe(true);
    expect(sourceAllowed(p!.sources, 'urn:acmex')).toBe(false);
    expect(Object.isFrozen(p)).toBe(true);
  });

  it('names every problem by its place, without echoing a hash', () => {
    const text = `partners:
  - id: acme
    keys: [{ sha256: ${H1} }, { sha256Env: UNSET_VAR }, { sha256File: /missing }, { sha256Env: BAD }]
    publish: [NoSuchKind]
  - id: acme
    keys: [{ sha256: ${H1} }]
`;
    const p = problems(text, { BAD: 'not-hex' });
    expect(p).toEqual(
      expect.arrayContaining([
        'partners[0].keys[1]: environment variable UNSET_VAR is not set',
        'partners[0].keys[2]: cannot read /missing (ENOENT)',
        'partners[0].keys[3]: not a lowercase hex SHA-256 (64 digits)',
        'partners[0].publish[0]: unknown event kind "NoSuchKind"',
        'partners[1].id: acme is declared twice',
        'partners[1].keys[0]: the same key is also declared at partners[0].keys[0]',
      ]),
    );
    expect(p.join(' ')).not.toContain(H1);
  });

  it.each([
    ['partners: []', 'partners'],
    [`partners: [{ id: "a.b", keys: [{ sha256: ${H1} }] }]`, 'partners[0].id'],
    [`partners: [{ id: anonymous, keys: [{ sha256: ${H1} }] }]`, 'partners[0].id'],
    [`partners: [{ id: admin, keys: [{ sha256: ${H1} }] }]`, 'partners[0].id: "admin" is reserved'],
    [`partners: [{ id: a, keys: [{ sha256: ${H1.toUpperCase()} }] }]`, 'partners[0].keys[0]'],
    [`partners: [{ id: a, keys: [{ sha256: ${H1} }], permissions: [purge] }]`, 'partners[0].permissions[0]'],
    [`partners: [{ id: a, keys: [{ sha256: ${H1} }], colour: blue }]`, 'partners[0]'],
    ['{ not yaml', 'not YAML'],
  ])('refuses %s naming %s', (text, where) => {
    expect(problems(text).join('; ')).toContain(where);
  });

  it('the reserved id "admin" names the setting that does make an admin: roles: [admin], which loads (not permissions: [admin], which does not)', () => {
    const said = problems(`partners: [{ id: admin, keys: [{ sha256: ${H1} }] }]`).join('; ');
    expect(said).toContain('roles: [admin]');
    expect(said).not.toContain('permissions: [admin]');
    expect(problems(`partners: [{ id: ops, keys: [{ sha256: ${H1} }], roles: [admin] }]`)).toEqual([]);
    expect(problems(`partners: [{ id: ops, keys: [{ sha256: ${H1} }], permissions: [admin] }]`).join('; ')).toContain('partners[0].permissions[0]');
  });

  it('refuses a file nested too deeply for the YAML parser, saying so', () => {
    expect(problems(`partners: ${'['.repeat(20_000)}${']'.repeat(20_000)}`).join('; ')).toContain('not YAML: nested too deeply');
  });

  it('a "*" grant covers every kind but internal ones; naming an internal kind covers it', () => {
    const kind = catalog.kinds[0]!;
    const internal = { ...kind, internal: true };
    expect(kindAllowed({ all: true, eventIds: new Set() }, kind)).toBe(true);
    expect(kindAllowed({ all: true, eventIds: new Set() }, internal)).toBe(false);
    expect(kindAllowed({ all: false, eventIds: new Set([kind.eventId]) }, internal)).toBe(true);
  });

  it('sources: an exact rule matches only itself; a prefix rule matches what starts with it (property)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ maxLength: 20 }), (base, rest) => {
        expect(sourceAllowed([{ value: base, prefix: true }], base + rest)).toBe(true);
        expect(sourceAllowed([{ value: base, prefix: false }], base + rest)).toBe(rest === '');
      }),
    );
  });
});

describe('partner sources that no event could have', () => {
  const doc = (source: string): string => `partners: [{ id: acme, keys: [{ sha256: ${H1} }], sources: [${JSON.stringify(source)}] }]`;
  const refusal = (source: string): string | undefined => {
    try {
      parsePartners(doc(source), 'p.yaml', catalog, {});
      return undefined;
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      return (err as GatewayError).message;
    }
  };

  it('refuses an exact source that ingress would refuse, naming the rule, and accepts those it takes (property)', () => {
    // Printable ASCII without spaces (what the document's shape lets through), not ending in '*'.
    const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 30 }).filter((v) => !v.endsWith('*'));
    fc.assert(
      fc.property(printable, (source) => {
        const why = refusal(source);
        if (uriReferenceProblem(source) === undefined) expect(why).toBeUndefined();
        else expect(why).toMatch(/partners\[0\]\.sources\[0\]: .*not a source any event can have/);
      }),
      { numRuns: 500 },
    );
    expect(refusal('urn:acme{eu}')).toMatch(/"urn:acme\{eu\}" is not a source/);
    expect(refusal('https://acme.example/feed[1]')).toMatch(/IP-literal/);
    expect(refusal('1acme:x')).toMatch(/scheme/);
    expect(refusal('urn:acme:eu')).toBeUndefined();
  });

  it('accepts every start of a valid source as a prefix rule, and refuses a prefix no source can start with (property)', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true }), fc.nat(), (url, cut) => {
        const prefix = url.slice(0, cut % (url.length + 1));
        expect(refusal(`${prefix}*`)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
    // A prefix may end inside a percent-encoding: 'urn:a%2' starts 'urn:a%20'.
    expect(refusal('urn:a%2*')).toBeUndefined();
    expect(refusal('urn:acme<eu>*')).toMatch(/partners\[0\]\.sources\[0\]: .*not the start of any source/);
    expect(refusal('urn:a%zz*')).toMatch(/not the start of any source/);
    expect(refusal('urn:a#b#*')).toMatch(/at most one '#'/);
    expect(refusal('*')).toBeUndefined();
  });
});

/** Without OIDC, authentication is synchronous. */
function sync(o: AuthOutcome | Promise<AuthOutcome>): AuthOutcome {
  if (o instanceof Promise) throw new Error('unexpected promise');
  return o;
}

describe('Authenticator', () => {
  const [acme] = parsePartners(`partners: [{ id: acme, keys: [{ sha256: ${H1} }, { sha256: ${H2} }] }]`, 'p.yaml', catalog, {});
  it('finds the partner of either key; the hash is SHA-256 of the UTF-8 bytes', () => {
    const a = new Authenticator([acme!], { failuresPerMinute: 100 });
    expect(keyHash('key-one').toString('hex')).toBe(H1);
    for (const k of ['key-one', 'key-two']) {
      const o = sync(a.authenticate([`Bearer ${k}`], '127.0.0.1'));
      expect(o.ok && o.partner.id).toBe('acme');
    }
    expect(sync(a.authenticate(['bearer key-one'], '127.0.0.1')).ok).toBe(true);
  });
  it('refuses a missing, other-scheme or unknown credential with 401 and a Bearer challenge (RFC 6750 §3.1: an error code only when a Bearer credential came)', () => {
    const a = new Authenticator([acme!], { failuresPerMinute: 100 });
    for (const [h, challenge] of [
      [undefined, 'Bearer realm="ce-gateway"'],
      [['Basic a2V5LW9uZQ=='], 'Bearer realm="ce-gateway"'],
      [['Bearer key-onE'], 'Bearer realm="ce-gateway", error="invalid_token"'],
      [['Bearer key one'], 'Bearer realm="ce-gateway", error="invalid_token"'],
      [['bearer'], 'Bearer realm="ce-gateway", error="invalid_token"'],
    ] as const) {
      const o = sync(a.authenticate(h, '127.0.0.1'));
      expect(o.ok).toBe(false);
      if (!o.ok) {
        expect(o.error.code).toBe('CEG_UNAUTHENTICATED');
        expect(o.headers['www-authenticate'], String(h)).toBe(challenge);
      }
    }
  });
  it('refuses repeated Authorization headers, even of a valid key, with 400 invalid_request naming the field; counted as a failure', () => {
    const a = new Authenticator([acme!], { failuresPerMinute: 2 });
    for (let i = 0; i < 2; i++) {
      const o = sync(a.authenticate(['Bearer key-one', 'Bearer key-one'], '10.0.0.9'));
      expect(!o.ok && o.error.code).toBe('CEG_MALFORMED_REQUEST');
      expect(!o.ok && o.error.details.field).toBe('authorization');
      expect(!o.ok && o.headers['www-authenticate']).toBe('Bearer realm="ce-gateway", error="invalid_request"');
    }
    const limited = sync(a.authenticate(['Bearer key-one'], '10.0.0.9'));
    expect(!limited.ok && limited.error.code).toBe('CEG_RATE_LIMITED');
  });
  it('limits failed attempts per address; another address is not affected', () => {
    const a = new Authenticator([acme!], { failuresPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect(sync(a.authenticate(['Bearer wrong'], '10.0.0.1')).ok).toBe(false);
    const o = sync(a.authenticate(['Bearer key-one'], '10.0.0.1'));
    expect(!o.ok && o.error.code).toBe('CEG_RATE_LIMITED');
    expect(!o.ok && Number(o.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(sync(a.authenticate(['Bearer key-one'], '10.0.0.2')).ok).toBe(true);
  });
});
