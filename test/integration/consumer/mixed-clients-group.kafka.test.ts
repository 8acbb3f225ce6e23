/**
 * One consumer group, members on both Kafka clients (src/transport/group-protocols.ts): gateway
 * instances with different `KAFKA_CLIENT`s serve one subscription together — its partitions spread
 * over both, and those of a member that leaves move to the other (docs/subscriptions.md: "every
 * gateway instance runs a member of it"). kafkajs offered only `RoundRobinAssigner` and
 * @platformatic/kafka only `roundrobin`: the second client to join was refused ("supported
 * protocols are incompatible") for as long as the first was a member (breaker report, 2026-12-06).
 * Both orders, as the first member to join leads the group and computes the assignment.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Consumption, Transport, TransportRecord } from '../../../src/transport/index.js';
import type { KafkaClient } from '../../helpers/kafka-client.js';
import { transportOn } from '../../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

const PARTITIONS = 6;
const text = (r: TransportRecord): string => Buffer.from(r.value ?? new Uint8Array()).toString();
const held = (c: Consumption): string[] => c.assignments().map((a) => `${a.topic}/${a.partition}`);

describe.each([
  ['kafkajs', 'platformatic'],
  ['platformatic', 'kafkajs'],
] as const)('one consumer group with a %s member joined first, then a %s one', (first: KafkaClient, second: KafkaClient) => {
  const brokers = stackEnv().kafkaBrokers;
  const transports: Transport[] = [];
  const consumptions: Consumption[] = [];
  afterAll(async () => {
    await Promise.allSettled(consumptions.map((c) => c.stop()));
    await Promise.allSettled(transports.map((t) => t.close()));
  });

  it('shares the partitions, hands every record to one of them, and moves a leaving member\'s partitions to the other', async () => {
    const topic = uniqueName(`it-mixed-group-${first}`);
    const group = uniqueName(`mixed-group-${first}`);
    const seen = new Map<KafkaClient, string[]>([[first, []], [second, []]]);
    const member = async (client: KafkaClient): Promise<Consumption> => {
      const t = transportOn({ brokers, clientId: uniqueName(`mixed-${client}`) }, client);
      transports.push(t);
      const c = await t.consume({ group, topics: [topic], startFrom: 'earliest' }, (r) => {
        seen.get(client)!.push(text(r));
        return Promise.resolve();
      });
      consumptions.push(c);
      return c;
    };
    const producer = transportOn({ brokers, clientId: uniqueName('mixed-producer') }, first);
    transports.push(producer);
    await producer.ensureTopics([{ name: topic, partitions: PARTITIONS, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
    const a = await member(first);
    await waitFor(`the ${first} member to hold all ${PARTITIONS} partitions`, () => held(a).length === PARTITIONS, 60_000);
    const b = await member(second);
    // Before the fix the second member never joined: it held nothing (and its start failed or retried).
    await waitFor(`both members to hold partitions (${first}: ${held(a).join(',')}; ${second}: ${held(b).join(',')})`, () => held(a).length > 0 && held(b).length > 0 && held(a).length + held(b).length === PARTITIONS, 60_000, 100);
    expect(new Set([...held(a), ...held(b)]).size, 'each partition held by one member').toBe(PARTITIONS);

    const sent = Array.from({ length: PARTITIONS * 10 }, (_, i) => `r-${i}`);
    await producer.produce(topic, sent.map((value, i) => ({ key: null, value: Buffer.from(value), headers: [], partition: i % PARTITIONS })));
    const all = (): string[] => [...seen.get(first)!, ...seen.get(second)!];
    await waitFor('every record handled by one of the members', () => sent.every((v) => all().includes(v)), 60_000, 100);
    expect(seen.get(first)!.length, `records the ${first} member handled`).toBeGreaterThan(0);
    expect(seen.get(second)!.length, `records the ${second} member handled`).toBeGreaterThan(0);

    // The first member leaves: the other takes over its partitions and the records written after.
    await a.stop();
    await waitFor(`the ${second} member to hold all ${PARTITIONS} partitions`, () => held(b).length === PARTITIONS, 60_000, 100);
    const later = Array.from({ length: PARTITIONS }, (_, i) => `after-${i}`);
    await producer.produce(topic, later.map((value, i) => ({ key: null, value: Buffer.from(value), headers: [], partition: i })));
    await waitFor(`the records written after the ${first} member left handled by the ${second} one`, () => later.every((v) => seen.get(second)!.includes(v)), 60_000, 100);
  }, 240_000);
});

describe('a member of an earlier release (kafkajs offering RoundRobinAssigner only) and a platformatic member of this one', () => {
  it('share one group: a rolling upgrade that also switches KAFKA_CLIENT keeps both serving', async () => {
    const brokers = stackEnv().kafkaBrokers;
    const topic = uniqueName('it-mixed-group-legacy');
    const group = uniqueName('mixed-group-legacy');
    const t = transportOn({ brokers, clientId: uniqueName('mixed-legacy') }, 'platformatic');
    // kafkajs with its default assigners, as every kafkajs consumer (and this gateway before) joins.
    const { Kafka, logLevel } = await import('kafkajs');
    const legacy = new Kafka({ brokers: [...brokers], clientId: uniqueName('legacy'), logLevel: logLevel.NOTHING }).consumer({ groupId: group });
    let c: Consumption | undefined;
    try {
      await t.ensureTopics([{ name: topic, partitions: PARTITIONS, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      let legacyHeld = 0;
      legacy.on(legacy.events.GROUP_JOIN, (e) => {
        legacyHeld = Object.values(e.payload.memberAssignment).reduce((n, ps) => n + ps.length, 0);
      });
      await legacy.connect();
      await legacy.subscribe({ topics: [topic], fromBeginning: true });
      await legacy.run({ eachMessage: () => Promise.resolve() });
      await waitFor('the legacy member to hold every partition', () => legacyHeld === PARTITIONS, 60_000, 100);
      c = await t.consume({ group, topics: [topic], startFrom: 'earliest' }, () => Promise.resolve());
      await waitFor('both members to hold partitions', () => c!.assignments().length > 0 && legacyHeld > 0 && c!.assignments().length + legacyHeld === PARTITIONS, 60_000, 100);
    } finally {
      await c?.stop();
      await legacy.disconnect();
      await t.close();
    }
  }, 120_000);
});
