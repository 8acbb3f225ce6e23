/** The authorization checks routes call (issue 11): ownership (404), capabilities (403), the audit log, ingress admission. */
import { Writable } from 'node:stream';
import { GatewayError } from '../../../src/core/errors.js';
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { ANONYMOUS, Access, PartnerRateLimits, admitEvents, parsePartners } from '../../../src/http/auth/index.js';
import type { Partner } from '../../../src/http/auth/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { envelopeOf } from './envelope.js';

const catalog = loadCatalog();
const H = (c: string): string => c.repeat(64);
const [plain, replayer, admin] = parsePartners(
  `partners:
  - { id: plain, keys: [{ sha256: ${H('a')} }], sources: ["urn:plain"], publish: [PriceLoadingCompleted] }
  - { id: replayer, keys: [{ sha256: ${H('b')} }], permissions: [replay] }
  - { id: ops, keys: [{ sha256: ${H('c')} }], roles: [admin] }
`,
  'p.yaml',
  catalog,
  {},
) as [Partner, Partner, Partner];

function withLog(p: Partner): { access: Access; lines: () => string[] } {
  const lines: string[] = [];
  const out = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) });
  return { access: new Access(p, createLogger({ level: 'info', destination: out })), lines: () => lines };
}
const code = (f: () => void): string | undefined => {
  try {
    f();
    return undefined;
  } catch (err) {
    return `${(err as GatewayError).code}${(err as GatewayError).details.permission === undefined ? '' : `:${String((err as GatewayError).details.permission)}`}`;
  }
};

describe('Access', () => {
  it('owner(): own id, or ?owner= for an admin; another owner is 404 for everyone else', () => {
    expect(withLog(plain).access.owner(undefined)).toBe('plain');
    expect(withLog(plain).access.owner('plain')).toBe('plain');
    expect(code(() => withLog(plain).access.owner('ops'))).toBe('CEG_NOT_FOUND');
    // The 404 names the part of the request that named the other owner: ?owner=, not the path's name.
    const fieldOf = (f: () => void): unknown => {
      try {
        f();
      } catch (err) {
        return (err as GatewayError).details.field;
      }
      return undefined;
    };
    expect(fieldOf(() => withLog(plain).access.owner('ops'))).toBe('owner');
    expect(fieldOf(() => withLog(plain).access.assertOwns('ops'))).toBe('name');
    expect(withLog(admin).access.owner('plain')).toBe('plain');
    expect(code(() => withLog(admin).access.owner('a.b'))).toBe('CEG_INVALID_NAME');
    expect(code(() => withLog(admin).access.owner(['x', 'y']))).toBe('CEG_INVALID_NAME');
  });

  it('require(): 404 for others\' resources (BOLA) before 403 for a missing capability (BFLA)', () => {
    expect(code(() => withLog(plain).access.require('replay', 'plain'))).toBe('CEG_FORBIDDEN:replay');
    expect(code(() => withLog(plain).access.require('replay', 'replayer'))).toBe('CEG_NOT_FOUND');
    expect(code(() => withLog(replayer).access.require('replay', 'replayer'))).toBeUndefined();
    expect(code(() => withLog(replayer).access.require('redrive', 'replayer'))).toBe('CEG_FORBIDDEN:redrive');
    expect(code(() => withLog(replayer).access.require('admin', 'replayer'))).toBe('CEG_FORBIDDEN:admin');
    expect(code(() => withLog(admin).access.require('redrive', 'plain'))).toBeUndefined();
    expect(code(() => withLog(plain).access.assertOwns('plain'))).toBeUndefined();
  });

  it('audit(): replay, redrive and purge always; other actions only on others\' resources', () => {
    const a = withLog(admin);
    a.access.audit('update-subscription', { owner: 'ops', subscription: 'x' });
    expect(a.lines()).toHaveLength(0);
    a.access.audit('update-subscription', { owner: 'plain', subscription: 'x' });
    a.access.audit('replay', { owner: 'ops', subscription: 'y' });
    expect(a.lines().map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { audit: true, partner: 'ops', action: 'update-subscription', target: { owner: 'plain', subscription: 'x' } },
      { audit: true, partner: 'ops', action: 'replay', target: { owner: 'ops' } },
    ]);
  });

  it('audited(): the line is written after the action, with its outcome (ok, or failed with the code); the error is rethrown', async () => {
    const a = withLog(admin);
    const seenDuring: number[] = [];
    expect(await a.access.audited('replay', { owner: 'plain', subscription: 'x' }, () => {
      seenDuring.push(a.lines().length);
      return Promise.resolve(7);
    })).toBe(7);
    const missing = new GatewayError('CEG_NOT_FOUND', 'no such subscription', { retriable: false });
    await expect(a.access.audited('redrive', { owner: 'plain', subscription: 'gone' }, () => {
      seenDuring.push(a.lines().length);
      return Promise.reject(missing);
    })).rejects.toBe(missing);
    await expect(a.access.audited('purge', { owner: 'plain', subscription: 'y' }, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(seenDuring).toEqual([0, 1]);
    expect(a.lines().map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { action: 'replay', target: { subscription: 'x' }, outcome: 'ok' },
      { action: 'redrive', target: { subscription: 'gone' }, outcome: 'failed', error: 'CEG_NOT_FOUND' },
      { action: 'purge', outcome: 'failed', error: 'CEG_INTERNAL' },
    ]);
    // Own resources, not replay/redrive/purge: nothing to audit, whatever the outcome.
    await a.access.audited('update-subscription', { owner: 'ops', subscription: 'z' }, () => Promise.resolve());
    expect(a.lines()).toHaveLength(3);
  });
});

describe('admitEvents', () => {
  const price = envelopeOf('78b8fd47-3ff3-4881-9419-7bfe84ce89cb', 'urn:plain');
  it('passes a permitted kind under an allowed source; refuses the rest naming the permission', () => {
    expect(code(() => admitEvents(plain, catalog, [price], false))).toBeUndefined();
    expect(code(() => admitEvents(plain, catalog, [envelopeOf('b785f117-3e61-4864-89c3-4accf13140c2', 'urn:plain')], false))).toBe('CEG_FORBIDDEN:publish');
    expect(code(() => admitEvents(plain, catalog, [envelopeOf('78b8fd47-3ff3-4881-9419-7bfe84ce89cb', 'urn:other')], false))).toBe('CEG_FORBIDDEN:source');
    // unknown types are left to validation (400 CEG_UNKNOWN_TYPE)
    expect(code(() => admitEvents(plain, catalog, [envelopeOf('00000000-0000-4000-8000-000000000000', 'urn:plain')], false))).toBeUndefined();
  });
  it('the anonymous caller may publish anything but internal kinds', () => {
    const internal = { ...catalog, byEventId: (id: string) => ({ ...catalog.byEventId(id)!, internal: true }) };
    expect(code(() => admitEvents(ANONYMOUS, catalog, [price], false))).toBeUndefined();
    expect(code(() => admitEvents(ANONYMOUS, internal, [price], false))).toBe('CEG_FORBIDDEN:internal');
  });
});

describe('PartnerRateLimits', () => {
  it('a partner starts with a second\'s worth; past it 429 with Retry-After; partners have their own buckets', () => {
    const r = new PartnerRateLimits({ requestsPerSecond: 3, eventsPerSecond: 10 });
    for (let i = 0; i < 3; i++) expect(r.request(plain).error).toBeUndefined();
    const over = r.request(plain);
    expect(over.error?.code).toBe('CEG_RATE_LIMITED');
    expect(over.headers['retry-after']).toBe('1');
    expect(over.headers['ratelimit-policy']).toBe('"requests";q=3;w=1');
    expect(over.headers.ratelimit).toMatch(/^"requests";r=0;t=1$/);
    expect(r.request(admin).error).toBeUndefined();
  });
  it('a batch larger than the bucket passes once when full and leaves it in debt', () => {
    const r = new PartnerRateLimits({ requestsPerSecond: 3, eventsPerSecond: 10 });
    expect(r.events(plain, 25).error).toBeUndefined();
    const next = r.events(plain, 1);
    expect(next.error?.code).toBe('CEG_RATE_LIMITED');
    expect(Number(next.headers['retry-after'])).toBeGreaterThanOrEqual(2);
  });
});
