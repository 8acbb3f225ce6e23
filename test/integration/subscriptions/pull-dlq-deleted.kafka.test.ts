/**
 * A pull subscription whose dead-letter topic an operator deleted, then a poison record arrives
 * ahead of a good one. A pull dead-letters a poison record and passes over it; with the topic gone
 * the dead-letter produce was refused as an unknown topic (not retriable), so was the fallback
 * without the value, and the partition stopped before the poison record for good: every long-poll
 * answered 503 CEG_REGISTRY_UNAVAILABLE ("the dead-letter topic did not take a poison record; try
 * again") — naming the registry, and no retry could ever help — and a stream retried in silence.
 * Now a pull, as a push subscription does, creates `<group>.dlq` again with the settings it was
 * created with, writes the dead letter there and goes on: the good record behind it is handed out.
 * Real Kafka; runs on this run's client (`KAFKA_CLIENT=kafkajs` for the other).
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
import { rawKafka } from '../consumer/members.js';

const dec = new TextDecoder();
const enc = new TextEncoder();
let gw: TestGateway;
const created: string[] = [];
beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { SUBSCRIPTIONS_TOPIC: `${uniqueName('pull-dlq-gone-defs')}.subscriptions`, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') } });
  await gw.gateway.subscriptionsLoaded();
}, 120_000);
afterAll(async () => {
  await gw?.close();
  const admin = rawKafka().admin();
  await admin.connect();
  await admin.deleteTopics({ topics: created }).catch(() => undefined);
  await admin.disconnect();
});

/** Deletes `topic` and waits until the broker no longer lists it. */
async function deleteTopic(topic: string): Promise<void> {
  const admin = rawKafka().admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [topic] });
    await waitFor(`${topic} gone`, async () => !(await admin.listTopics()).includes(topic), 30_000, 200);
  } finally {
    await admin.disconnect();
  }
}

describe('pull with its dead-letter topic deleted', () => {
  it('creates the dead-letter topic again, dead-letters the poison record there and hands out the good record behind it', async () => {
    const tag = randomUUID().slice(0, 8);
    const pull = `pulldlqgone${tag}`;
    const dlqTopic = `ce-gateway.sub.anonymous.${pull}.dlq`;
    created.push(dlqTopic, `ce-gateway.sub.anonymous.${pull}.redrive`);
    const res0 = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: pull, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
    expect(res0.status).toBe(201);
    const t = gw.gateway.transport;
    await waitFor('the dead-letter topic created with the subscription', async () => (await t.partitionCount(dlqTopic).catch(() => 0)) > 0, 30_000, 200);
    await deleteTopic(dlqTopic);

    const key = enc.encode(`PULL-DLQ-GONE-${tag}`);
    const [poison] = await t.produce(PRICE_TOPIC, [{ key, partition: 0, value: enc.encode('plain'), headers: ceHeaders(`${tag}-poison`) }]);
    await t.produce(PRICE_TOPIC, [{ key, partition: 0, value: goodPriceValue(gw.gateway.codec()), headers: ceHeaders(`${tag}-good`) }]);

    // Every long-poll answers (bounded: a hang fails the fetch), and the good record comes out.
    const pulled: string[] = [];
    const statuses: number[] = [];
    const refusals: string[] = [];
    let last = '';
    await waitFor('the good record pulled', async () => {
      const res = await fetch(`${gw.url}/subscriptions/${pull}/events?max=1000&wait=2`, { signal: AbortSignal.timeout(60_000) });
      statuses.push(res.status);
      last = await res.text();
      if (res.status !== 200) {
        refusals.push((JSON.parse(last) as { code: string }).code);
        return false;
      }
      for (const e of JSON.parse(last) as { id: string }[]) pulled.push(e.id);
      return pulled.includes(`${tag}-good`);
    }, 90_000, 200).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; statuses ${statuses.join(',')}; last answer ${last.slice(0, 400)}`);
    });
    expect(pulled.filter((id) => id.startsWith(tag))).toEqual([`${tag}-good`]);
    // A broker slow to create the topic may cost a retriable 503 on the way (this machine is shared):
    // if any, it names the broker, not the registry.
    expect(refusals.filter((c) => c !== 'CEG_BROKER_UNAVAILABLE')).toEqual([]);

    // The dead letter is on the topic created again, with its value.
    // Ours, by its ce_id: other files running at once write poison records to the same shipped
    // topic, which this subscription dead-letters too (a CI-like run had another one first).
    const dead: TransportRecord[] = [];
    const header = (r: TransportRecord, name: string): string | undefined => {
      const v = r.headers.find(([k]) => k === name)?.[1];
      return v && dec.decode(v);
    };
    const ours = (): TransportRecord | undefined => dead.find((r) => header(r, 'ce_id') === `${tag}-poison`);
    const reader = await t.consume({ group: uniqueName('pull-dlq-gone-reader'), topics: [dlqTopic], startFrom: 'earliest' }, async (r) => void dead.push(r));
    try {
      await waitFor('the dead letter', () => ours() !== undefined, 60_000, 200);
    } finally {
      await reader.stop();
    }
    expect(header(ours()!, 'dlq_source_offset')).toBe(poison!.offset.toString());
    expect(dec.decode(ours()!.value ?? new Uint8Array())).toBe('plain');
    expect(await t.partitionCount(dlqTopic)).toBe(1);
  }, 240_000);
});
