/**
 * A slow record on one partition holds back that partition only (docs/connectors.md "Order and
 * concurrency": "a slow hook holds back the events behind it on its partition", "A failing event
 * holds back its own partition only"), on both Kafka clients, with the plain loop (what shell-hook
 * and file-drop connectors and bus subscribers run: no `inFlightPerPartition`) and with lanes
 * (push subscriptions).
 * kafkajs fetches again only once every batch of its last fetch was handled: a handler awaited
 * inside `eachBatch` held every other partition back until the slow record ended (tester report D1:
 * a shell hook sleeping 6 s on one partition stalled the others 5 s).
 * Also the documented bound (GroupSpec.partitionsConcurrently, default the adapter's 3: "up to 3 of
 * the partitions"): six held records on six partitions, never more than 3 in hand at once, and the
 * next starts as soon as one ends (not once a whole fetch's batches ended: report D6).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Transport, TransportRecord } from '../../../src/transport/index.js';
import { KAFKA_CLIENTS, transportOn } from '../../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

const text = (r: TransportRecord): string => Buffer.from(r.value ?? new Uint8Array()).toString();
const rec = (value: string, partition: number) => ({ key: null, value: Buffer.from(value), headers: [], partition });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(KAFKA_CLIENTS)('a slow record holds back its own partition only (%s)', (client) => {
  const brokers = stackEnv().kafkaBrokers;
  const transports: Transport[] = [];
  afterAll(async () => {
    await Promise.allSettled(transports.map((t) => t.close()));
  });

  async function setUp(partitions: number): Promise<{ t: Transport; topic: string }> {
    const t = transportOn({ brokers, clientId: uniqueName(`slow-${client}`) }, client);
    transports.push(t);
    const topic = uniqueName(`it-slow-partition-${client}`);
    await t.ensureTopics([{ name: topic, partitions, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
    return { t, topic };
  }

  it.each([
    ['plain loop', undefined],
    ['lanes', 1],
  ] as const)('%s: records of other partitions are handled while one is held', async (_what, window) => {
    const { t, topic } = await setUp(4);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const handled: string[] = [];
    let slowStarted = false;
    const c = await t.consume({ group: uniqueName(`slow-group-${client}`), topics: [topic], startFrom: 'earliest', ...(window === undefined ? {} : { inFlightPerPartition: window }) }, async (r) => {
      if (text(r) === 'slow') {
        slowStarted = true;
        await Promise.race([held, sleep(20_000)]);
      }
      handled.push(text(r));
    });
    try {
      await t.produce(topic, [rec('slow', 0)]);
      await waitFor('the slow record in hand', () => slowStarted);
      // Other partitions, fetched after the slow one is in hand; each in its own produce (several fetches).
      for (const p of [1, 2, 3, 1, 2, 3]) {
        await t.produce(topic, [rec(`quick-${p}`, p)]);
        await sleep(50);
      }
      await waitFor('the other partitions handled while the slow record is in hand', () => handled.length >= 6, 8_000);
      expect(handled).not.toContain('slow');
      release();
      await waitFor('the slow record', () => handled.includes('slow'));
    } finally {
      release();
      await c.stop();
    }
  }, 40_000);

  // platformatic's plain loop runs every partition at once (no bound): see the report of D6.
  it('plain loop: at most partitionsConcurrently (3) partitions in hand; a place freed goes to the next partition at once', async () => {
    const { t, topic } = await setUp(6);
    let inHand = 0;
    let most = 0;
    const started: string[] = [];
    const ended: { value: string; at: number }[] = [];
    const c = await t.consume({ group: uniqueName(`slow-conc-${client}`), topics: [topic], startFrom: 'earliest' }, async (r) => {
      inHand++;
      most = Math.max(most, inHand);
      started.push(text(r));
      // p1 long, the others short: p1 keeps one place, the five others share the other two.
      await sleep(r.partition === 1 ? 4_000 : 300);
      ended.push({ value: text(r), at: Date.now() });
      inHand--;
    });
    try {
      await t.produce(topic, [rec('p1', 1)]);
      await waitFor('p1 in hand', () => started.length >= 1);
      await t.produce(topic, [0, 2, 3, 4, 5].map((p) => rec(`p${p}`, p)));
      await waitFor('six records handled', () => ended.length >= 6, 20_000);
      expect(most).toBeLessThanOrEqual(3);
      // The five short ones went through the two places left while p1 was in hand (not after it).
      expect(ended.map((e) => e.value).at(-1)).toBe('p1');
    } finally {
      await c.stop();
    }
  }, 40_000);
});
