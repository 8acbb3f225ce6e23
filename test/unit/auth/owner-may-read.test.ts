/** The read permission of subscription owners outside a request (docs/security.md "Revoking a permission"). */
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../../src/catalog/index.js';
import type { EventKind } from '../../../src/catalog/index.js';
import { ownerMayRead, parsePartners } from '../../../src/http/auth/index.js';

const catalog = loadCatalog();
const kind = (name: string): EventKind => catalog.byName(name)!;
const internal: EventKind = { ...kind('SeriesUpdateCompleted'), internal: true };
const H = (c: string): string => c.repeat(64);
const partners = parsePartners(
  `partners:
  - { id: prices, keys: [{ sha256: ${H('a')} }], subscribe: [PriceLoadingCompleted] }
  - { id: all, keys: [{ sha256: ${H('b')} }], subscribe: ["*"] }
  - { id: oidc-only, subscribe: [StrategySignal] }
`,
  'p.yaml',
  catalog,
  {},
);

describe('ownerMayRead', () => {
  const mayRead = ownerMayRead(partners);
  it('a partner of the file: its subscribe grant (an OIDC-only partner too: the file holds its permissions)', () => {
    expect(mayRead('prices', kind('PriceLoadingCompleted'))).toBe(true);
    expect(mayRead('prices', kind('StrategySignal'))).toBe(false);
    expect(mayRead('all', kind('StrategySignal'))).toBe(true);
    expect(mayRead('all', internal)).toBe(false); // "*" never covers an internal kind
    expect(mayRead('oidc-only', kind('StrategySignal'))).toBe(true);
  });
  it('anonymous: every kind but internal ones; an owner the file does not name: nothing', () => {
    expect(mayRead('anonymous', kind('StrategySignal'))).toBe(true);
    expect(mayRead('anonymous', internal)).toBe(false);
    expect(mayRead('removed-partner', kind('PriceLoadingCompleted'))).toBe(false);
  });
  it('without partners (no authentication): everything', () => {
    expect(ownerMayRead(undefined)('anyone', internal)).toBe(true);
  });
});
