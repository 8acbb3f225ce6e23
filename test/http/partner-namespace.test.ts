/**
 * Kafka treats '.' and '_' in topic names as one character, so partner `acme`'s subscription
 * `eu_orders` and partner `acme_eu`'s `orders` would need the same topics
 * (`ce-gateway.sub.acme.eu_orders.dlq` ~ `ce-gateway.sub.acme_eu.orders.dlq`): whichever came first
 * took the name from the other (a squat, listed as open in the session notes). With a partners
 * file, an owner whose id and '_' begin another partner's id may not use '_' in names (400 naming
 * `name`, without naming the other partner); the longer id keeps its names. The rule alone,
 * property-based: no two names that pass share a Kafka spelling.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAME_PATTERN, extendedPartnerIds, groupOf, reachesAnotherPartner } from '../../src/bus/subscriptions/index.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { sha256 } from '../helpers/partners.js';

describe('reachesAnotherPartner', () => {
  // Ids and names from a small alphabet with many '_', so Kafka spellings meet often.
  const part = fc.stringMatching(/^[ab][ab_]{0,5}$/);
  it('no two (owner, name) pairs that pass share a Kafka spelling of their group', () => {
    let passed = 0;
    fc.assert(
      fc.property(fc.uniqueArray(part, { minLength: 1, maxLength: 6 }), fc.array(fc.tuple(fc.nat(), part), { minLength: 2, maxLength: 12 }), (ids, picks) => {
        const partners = new Set(ids);
        const pairs = picks.map(([i, name]) => ({ owner: ids[i % ids.length]!, name })).filter((p) => NAME_PATTERN.test(p.name) && !reachesAnotherPartner(p.owner, p.name, partners));
        passed += pairs.length;
        const spelled = new Map<string, string>();
        for (const p of pairs) {
          const group = groupOf(p.owner, p.name);
          const kafka = group.replaceAll('.', '_');
          const seen = spelled.get(kafka);
          if (seen !== undefined) expect(seen, `${group} and ${seen}`).toBe(group);
          spelled.set(kafka, group);
        }
      }),
      { numRuns: 2000 },
    );
    expect(passed).toBeGreaterThan(1000); // the rule lets names through, not only refuses them
  });

  it("refuses '_' in names only to an owner whose id and '_' begin another partner's id", () => {
    const partners = new Set(['acme', 'acme_eu', 'acme_eu_west', 'globex']);
    expect(reachesAnotherPartner('acme', 'eu_orders', partners)).toBe(true);
    expect(reachesAnotherPartner('acme', 'us_orders', partners)).toBe(true); // one bit: which id extends acme is not told
    expect(reachesAnotherPartner('acme_eu', 'west_orders', partners)).toBe(true);
    expect(reachesAnotherPartner('acme_eu_west', 'a_b', partners)).toBe(false);
    expect(reachesAnotherPartner('acme_eu', 'orders', partners)).toBe(false);
    expect(reachesAnotherPartner('acme', 'eu-orders', partners)).toBe(false);
    expect(reachesAnotherPartner('globex', 'eu_orders', partners)).toBe(false);
    expect(reachesAnotherPartner('acme', 'eu_orders', new Set())).toBe(false); // no partners file
    expect(extendedPartnerIds(partners)).toEqual([['acme', 'acme_eu'], ['acme', 'acme_eu_west'], ['acme_eu', 'acme_eu_west']]);
  });
});

describe('POST /subscriptions with partners acme and acme_eu', () => {
  const keys = { acme: randomUUID(), acmeEu: randomUUID() };
  const dir = mkdtempSync(join(tmpdir(), 'ceg-namespace-'));
  let gw: TestGateway;

  beforeAll(async () => {
    const file = join(dir, 'partners.yaml');
    writeFileSync(
      file,
      `partners:
  - id: acme
    keys: [{ sha256: ${sha256(keys.acme)} }]
    subscribe: [PriceLoadingCompleted]
  - id: acme_eu
    keys: [{ sha256: ${sha256(keys.acmeEu)} }]
    subscribe: [PriceLoadingCompleted]
`,
    );
    gw = await startGateway({ stack: false, env: { PARTNERS_FILE: file, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') } });
    await gw.gateway.subscriptionsLoaded();
  });
  afterAll(async () => {
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const create = async (key: string, name: string): Promise<{ status: number; type: string | null; body: Record<string, unknown> }> => {
    const res = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
    return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Record<string, unknown> };
  };

  it("acme cannot use '_' in names (it could take acme_eu's); acme_eu keeps its names and may use '_'; '-' is fine", async () => {
    for (const name of ['eu_orders', 'us_orders']) {
      const squat = await create(keys.acme, name);
      expect(squat.status, name).toBe(400);
      expect(squat.type).toMatch(/^application\/problem\+json/);
      expect(squat.body).toMatchObject({ code: 'CEG_INVALID_SUBSCRIPTION', violations: [{ field: 'name', reason: expect.stringMatching(/another partner's namespace/) }] });
      expect(JSON.stringify(squat.body)).not.toContain('acme_eu'); // which partner is not told
    }
    expect((await create(keys.acmeEu, 'orders')).status).toBe(201);
    expect((await create(keys.acmeEu, 'west_orders')).status).toBe(201);
    expect((await create(keys.acme, 'eu-orders')).status).toBe(201);
  });
});
