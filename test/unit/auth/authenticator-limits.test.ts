/** The failed-attempt limit of Authenticator: which addresses it forgets, credentials in flight, long credentials. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import { Authenticator, parsePartners } from '../../../src/http/auth/index.js';
import { MAX_TRACKED_ADDRESSES } from '../../../src/http/auth/authenticate.js';
import type { AuthOutcome } from '../../../src/http/auth/authenticate.js';

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
