/**
 * Issue 11, maxSubscriptions across instances: two gateways (each with its own HTTP server, store
 * and Kafka clients) on one definitions topic on the real broker, one partners file where `acme`
 * may have 2 subscriptions. Three creates of distinct names by acme, POSTed to both gateways at
 * the same moment: exactly two answer 201 and one 403 `CEG_QUOTA_EXCEEDED` naming the bound — the
 * claim on the definitions topic decides in the topic's order, not each instance's local view.
 * Repeated for several rounds (deleting in between) so an interleaving that lets a third through
 * would show.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { partnersSetup } from '../../helpers/partners.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

const run = uniqueName('it-quota');
const setup = partnersSetup(run);
const env = { ...setup.env, SUBSCRIPTIONS_TOPIC: `${run}.subscriptions`, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') };
const gateways: TestGateway[] = [];
let a: TestGateway;
let b: TestGateway;
const MAX = 2; // acme's maxSubscriptions in partnersSetup

const instance = (id: string): Promise<TestGateway> => startInstance(env, id, gateways);

beforeAll(async () => {
  // The partners file names one key hash by environment variable (as the auth tests set it).
  process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
  a = await instance('quota-a');
  b = await instance('quota-b');
}, 90_000);

afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.close()));
  setup.cleanup();
});

const auth = { authorization: `Bearer ${setup.keys.acme}` };

async function create(gw: TestGateway, name: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}/subscriptions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function count(gw: TestGateway): Promise<number> {
  const res = await fetch(`${gw.url}/subscriptions`, { headers: auth });
  return ((await res.json()) as { items: unknown[] }).items.length;
}

describe('maxSubscriptions with simultaneous creates on two gateways', () => {
  it('of N+1 creates at the same moment exactly N succeed; the other gets 403 CEG_QUOTA_EXCEEDED', async () => {
    for (let round = 0; round < 4; round++) {
      const names = Array.from({ length: MAX + 1 }, (_, i) => `q${round}-${i}-${randomBytes(3).toString('hex')}`);
      const results = await Promise.all(names.map((n, i) => create(i % 2 === 0 ? a : b, n)));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses, JSON.stringify(results.map((r) => r.body))).toEqual([201, 201, 403]);
      expect(results.find((r) => r.status === 403)!.body).toMatchObject({ code: 'CEG_QUOTA_EXCEEDED', maxSubscriptions: MAX });
      // Both instances agree: acme has exactly MAX subscriptions.
      await waitFor('both instances show MAX subscriptions', async () => (await count(a)) === MAX && (await count(b)) === MAX, 10_000);
      // Room again for the next round.
      for (const [i, r] of results.entries()) {
        if (r.status === 201) expect((await fetch(`${a.url}/subscriptions/${names[i]!}`, { method: 'DELETE', headers: auth })).status).toBe(204);
      }
      await waitFor('both instances show none', async () => (await count(a)) === 0 && (await count(b)) === 0, 10_000);
    }
  }, 120_000);
});
