/**
 * Issue 8 follow-up, concurrent creates: two gateway instances (in this process, each with its own
 * HTTP server, store and Kafka clients) on one definitions topic on the real broker. The same name
 * is POSTed to both at the same moment, with different sink URLs: exactly one answers 201 and the
 * other 409 `CEG_CONFLICT`, both then show the winner's definition, and a third instance that reads
 * the topic from the start shows it too. Before the check-and-set both could answer 201 (each
 * checked its own view of the topic) and the later record silently replaced the earlier one.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogWithOwnTopics } from '../../helpers/catalog-copy.js';
import { startInstance } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

const run = uniqueName('it-race');
const cat = catalogWithOwnTopics(run);
const env = {
  CATALOG_DIR: cat.dir,
  SUBSCRIPTIONS_TOPIC: `${run}.subscriptions`,
  SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
};
const gateways: TestGateway[] = [];
let a: TestGateway;
let b: TestGateway;

const instance = (id: string): Promise<TestGateway> => startInstance(env, id, gateways);

beforeAll(async () => {
  a = await instance('race-a');
  b = await instance('race-b');
}, 90_000);

afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.close()));
  cat.cleanup();
});

async function post(gw: TestGateway, name: string, url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}/subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url } }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function urlOn(gw: TestGateway, name: string): Promise<string | undefined> {
  const res = await fetch(`${gw.url}/subscriptions/${name}`);
  if (res.status !== 200) return undefined;
  return ((await res.json()) as { delivery: { url: string } }).delivery.url;
}

describe('two POST /subscriptions of one name at the same moment on two gateways', () => {
  it('exactly one succeeds (201), the other gets 409; every instance, and a fresh one, shows the winner', async () => {
    const names = Array.from({ length: 5 }, (_, i) => `race-${i}-${randomBytes(3).toString('hex')}`);
    const winners = new Map<string, string>();
    for (const name of names) {
      const [ra, rb] = await Promise.all([post(a, name, 'http://127.0.0.1:9/from-a'), post(b, name, 'http://127.0.0.1:9/from-b')]);
      expect([ra.status, rb.status].sort(), JSON.stringify([ra.body, rb.body])).toEqual([201, 409]);
      const loser = ra.status === 409 ? ra : rb;
      expect(loser.body).toMatchObject({ code: 'CEG_CONFLICT', status: 409 });
      winners.set(name, ra.status === 201 ? 'http://127.0.0.1:9/from-a' : 'http://127.0.0.1:9/from-b');
    }
    for (const name of names) {
      await waitFor(`${name} the same on both`, async () => (await urlOn(a, name)) === winners.get(name) && (await urlOn(b, name)) === winners.get(name), 10_000);
    }
    const c = await instance('race-c');
    for (const name of names) expect(await urlOn(c, name)).toBe(winners.get(name));
    // The name is free again after a delete, for either instance.
    const name = names[0]!;
    expect((await fetch(`${b.url}/subscriptions/${name}`, { method: 'DELETE' })).status).toBe(204);
    await waitFor(`${name} gone on a`, async () => (await urlOn(a, name)) === undefined, 10_000);
    expect((await post(a, name, 'http://127.0.0.1:9/again')).status).toBe(201);
    for (const n of names) await fetch(`${a.url}/subscriptions/${n}`, { method: 'DELETE' });
  }, 120_000);
});
