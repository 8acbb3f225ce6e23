/**
 * A topic deleted and created again with FEWER partitions (Kafka cannot take partitions away: an
 * operator shrinks a topic so), on both Kafka clients. The transport caches a topic's partition
 * count for `metadataMaxAgeMs` (30 s): keyed records went on being routed over the old count, to
 * partitions the topic no longer has. kafkajs's partitioner asked for a metadata refresh until its
 * retries ran out (about 4 s, then a retriable failure, again at every attempt); @platformatic/kafka
 * sent them, the broker answered UNKNOWN_TOPIC_OR_PARTITION and the send failed as an unknown topic
 * (not retriable: a single event was refused), after which the sender refused the partition as "not
 * listed yet" — ingress failed until the cached count aged out.
 * Now a send refused for a partition beyond the topic asks the count again (one look-up per topic
 * at a time) and is routed over the new count: a key to murmur2(key) mod the new count.
 * Records of the first attempt on partitions the topic still has may be written twice (that send
 * is indeterminate: consumers drop duplicates by source+id); every one is on its key's partition.
 */
import { describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import { KAFKA_CLIENTS, kafkaClientEnv } from '../helpers/kafka-client.js';
import { uniqueName } from '../helpers/stack.js';
import { recreateTopic, recordsNoted, stackTopics } from '../helpers/stack-topics.js';
import type { Transport } from '../../src/transport/index.js';
import { partitionForKey } from '../../src/transport/partitioner.js';

/** Every record of `topic` as `partition key ce_id`, read from its log start to its end. */
async function recordsOf(t: Transport, topic: string): Promise<{ partition: number; key: string; id: string }[]> {
  const out: { partition: number; key: string; id: string }[] = [];
  const read = await t.read({ topics: [topic], from: { kind: 'earliest' }, untilEnd: true }, (r) => {
    const id = r.headers.find(([name]) => name === 'ce_id')?.[1];
    out.push({ partition: r.partition, key: Buffer.from(r.key ?? new Uint8Array()).toString(), id: id === undefined ? '' : Buffer.from(id).toString() });
    return Promise.resolve();
  });
  await read.done;
  return out;
}

describe.each(KAFKA_CLIENTS)('a topic deleted and created again with fewer partitions (%s)', (client) => {
  const stack = stackTopics(client);

  it('keyed records produced at once after it are written, each on its key partition over the new count', { timeout: 90_000 }, async () => {
    const t = stack.transport({ clientId: uniqueName(`shrunk-${client}`) });
    const topic = await stack.topic(t, `it-shrunk-${client}`, 6);
    const keys = Array.from({ length: 24 }, (_, i) => `key-${i}`);
    const keyed = (k: string) => ({ key: Buffer.from(k), value: Buffer.from(k), headers: [] });
    // The count (6) is cached now, and the producer has written to every partition.
    const before = await t.produce(topic, keys.map(keyed));
    expect(new Set(before.map((p) => p.partition)).size).toBe(6);
    await recreateTopic(topic, 2);
    const positions = await t.produce(topic, keys.map(keyed));
    expect(positions.map((p) => p.partition)).toEqual(keys.map((k) => partitionForKey(Buffer.from(k), 2)));
    // A single record right after (a single event was refused for good on @platformatic/kafka).
    const [one] = await t.produce(topic, [keyed('key-5')]);
    expect(one?.partition).toBe(partitionForKey(Buffer.from('key-5'), 2));
    expect(await t.partitionCount(topic)).toBe(2);
    const ends = await t.endOffsets(topic);
    expect(ends.map((e) => e.partition)).toEqual([0, 1]);
    // Every record on its key's partition; the ones acknowledged at the offsets given.
    const { handled, handler } = recordsNoted((r, value) => `${r.partition}:${r.offset}:${value}`);
    const read = await t.read({ topics: [topic], from: { kind: 'earliest' }, untilEnd: true }, handler);
    await read.done;
    for (const h of handled) {
      const [partition, , value] = h.split(':');
      expect(Number(partition)).toBe(partitionForKey(Buffer.from(value!), 2));
    }
    for (const [i, p] of [...positions, one!].entries()) expect(handled).toContain(`${p.partition}:${p.offset}:${[...keys, 'key-5'][i]}`);
  });

  it('events posted to the gateway at once after it are all accepted and land on their keys partitions', { timeout: 120_000 }, async () => {
    const catalog = catalogWithOwnTopics(uniqueName(`shrunk-${client}`));
    const gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir, SUBSCRIPTIONS_TOPIC: uniqueName(`shrunk-defs-${client}`), ...kafkaClientEnv(client) } });
    try {
      const topic = gw.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
      expect(await gw.gateway.transport.partitionCount(topic)).toBe(6);
      const event = (i: number) => structuredPriceEvent({ subject: `e${i}` }, priceLoaded(`K${i}/USD`, 'H1', String(i).padStart(8, '0')));
      const post = (body: unknown, type: string) => fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': type }, body: JSON.stringify(body) });
      const first = Array.from({ length: 12 }, (_, i) => event(i));
      expect((await post(first, 'application/cloudevents-batch+json')).status).toBe(202);
      await recreateTopic(topic, 2);
      // Single events first (one record per produce), then a batch.
      const singles = Array.from({ length: 6 }, (_, i) => event(100 + i));
      for (const e of singles) {
        const res = await post(e, 'application/cloudevents+json');
        expect(res.status, await res.text()).toBe(202);
      }
      const batch = Array.from({ length: 12 }, (_, i) => event(200 + i));
      const res = await post(batch, 'application/cloudevents-batch+json');
      expect(res.status, await res.text()).toBe(202);
      const records = await recordsOf(gw.gateway.transport, topic);
      for (const r of records) expect(r.partition, r.key).toBe(partitionForKey(Buffer.from(r.key), 2));
      const written = new Set(records.map((r) => r.id));
      for (const e of [...singles, ...batch]) expect(written.has(String(e.id))).toBe(true);
    } finally {
      await gw.close();
      catalog.cleanup();
    }
  });
});
