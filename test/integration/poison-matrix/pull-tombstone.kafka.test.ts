/**
 * A tombstone (null value) with valid CloudEvents headers on a topic that is not compacted: a
 * subscription dead-letters it ("event without data on a topic that is not compacted"); a pull
 * subscription must do the same, not hand out an event whose required data is missing, and must
 * hand out the good record behind it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransportRecord } from '../../../src/transport/port.js';
import { PRICE_TOPIC } from '../../fixtures/events.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { ceHeaders, goodPriceValue } from '../../helpers/poison-records.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

const dec = new TextDecoder();
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { SUBSCRIPTIONS_TOPIC: `${uniqueName('brkA-defs')}.subscriptions`, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') } });
  await gw.gateway.subscriptionsLoaded();
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

describe('pull over a tombstone on a topic that is not compacted', () => {
  it('dead-letters it with the reason a subscription gives, and hands out the good record behind it', async () => {
    const tag = randomUUID().slice(0, 8);
    const pull = `brkAtpull${tag}`;
    const created = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: pull, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
    expect(created.status).toBe(201);
    const key = new TextEncoder().encode(`BRK-T-${tag}`);
    const t = gw.gateway.transport;
    const [tomb] = await t.produce(PRICE_TOPIC, [{ key, partition: 0, value: null, headers: ceHeaders(`${tag}-tombstone`) }]);
    await t.produce(PRICE_TOPIC, [{ key, partition: 0, value: goodPriceValue(gw.gateway.codec()), headers: ceHeaders(`${tag}-good`) }]);

    const pulled: string[] = [];
    await waitFor('the good record pulled', async () => {
      const res = await fetch(`${gw.url}/subscriptions/${pull}/events?max=1000&wait=2`);
      expect(res.status).toBe(200);
      for (const e of (await res.json()) as { id: string }[]) pulled.push(e.id);
      return pulled.includes(`${tag}-good`);
    }, 60_000, 200);
    expect(pulled.filter((id) => id.startsWith(tag))).toEqual([`${tag}-good`]);

    const dead: TransportRecord[] = [];
    const reader = await t.consume({ group: uniqueName('brkA-dlq-reader'), topics: [`ce-gateway.sub.anonymous.${pull}.dlq`], startFrom: 'earliest' }, async (r) => void dead.push(r));
    try {
      await waitFor('the dead letter', () => dead.length >= 1, 30_000, 200);
    } finally {
      await reader.stop();
    }
    const h = (name: string): string | undefined => {
      const v = dead[0]!.headers.find(([k]) => k === name)?.[1];
      return v && dec.decode(v);
    };
    expect(dead).toHaveLength(1);
    expect(h('dlq_source_offset')).toBe(tomb!.offset.toString());
    expect(h('dlq_reason')).toMatch(/^poison: event without data on a topic that is not compacted/);
  }, 180_000);
});
