/**
 * Kafka's own Java producer and our transport send the same keys to one topic; the partition the
 * Java client chose (from RecordMetadata), our partitioner's choice, and where the broker holds
 * every record (read back) must agree for every key — non-ASCII keys included.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Transport, TransportRecord } from '../../src/transport/index.js';
import { createKafkaTransport, partitionForKey } from '../../src/transport/index.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);
const PARTITIONS = 7;
const FIXTURE = join(import.meta.dirname, '../fixtures/java/ProduceKeys.java');

const KEYS = [
  'EUR-USD_H4',
  'GBP-JPY_M15',
  'XAU-USD_D1',
  'ü-€-漢字',
  'Ωmega-ß-ç',
  '😀',
  '🇺🇦-flag-👩‍👩‍👧',
  'a',
  'ab',
  'abc',
  'abcd',
  'order-42',
  ...Array.from({ length: 36 }, (_, i) => `instrument-${i}_M${(i % 4) + 1}`),
];

const enc = new TextEncoder();
const hex = (s: string): string => Buffer.from(s, 'utf8').toString('hex');

describe('partitioner agrees with the Java client (kafka-clients)', () => {
  const stack = stackEnv();
  let t: Transport;
  let classes: string;

  beforeAll(async () => {
    t = createKafkaTransport({ clientId: 'ce-gateway-partitioner-test', brokers: stack.kafkaBrokers });
    classes = await mkdtemp(join(tmpdir(), 'ce-gateway-java-'));
    expect(stack.kafkaLibs).not.toBe('');
    await run('javac', ['-cp', join(stack.kafkaLibs, '*'), '-d', classes, FIXTURE], { timeout: 60_000 });
  });

  afterAll(async () => {
    await t.close();
    await rm(classes, { recursive: true, force: true });
  });

  it('places every key on the partition Kafka\'s Java producer chooses', async () => {
    const topic = uniqueName('partitioner-java');
    await t.ensureTopics([{ name: topic, partitions: PARTITIONS, retentionMs: -1, cleanupPolicy: 'delete' }]);

    const { stdout } = await run(
      'java',
      ['-cp', `${classes}:${join(stack.kafkaLibs, '*')}`, 'ProduceKeys', stack.kafkaBrokers.join(','), topic, ...KEYS.map(hex)],
      { timeout: 60_000, maxBuffer: 1 << 20 },
    );
    const javaPartition = new Map(
      stdout.trim().split('\n').map((line) => {
        const [h, p] = line.split('\t');
        return [Buffer.from(h!, 'hex').toString('utf8'), Number(p)] as const;
      }),
    );
    expect(javaPartition.size).toBe(KEYS.length);

    const positions = await t.produce(topic, KEYS.map((k) => ({ key: enc.encode(k), value: enc.encode(`ts-${k}`), headers: [] })));

    const mismatches = KEYS.filter((k, i) => {
      const ours = partitionForKey(enc.encode(k), PARTITIONS);
      return javaPartition.get(k) !== ours || positions[i]!.partition !== ours;
    });
    expect(mismatches).toEqual([]);
    // The keys really spread: a partitioner that sent everything to one place would not pass.
    expect(new Set(javaPartition.values()).size).toBe(PARTITIONS);

    // Read everything back: each key sits on one partition, for both producers.
    const got: TransportRecord[] = [];
    const c = await t.consume({ group: uniqueName('partitioner-java'), topics: [topic], startFrom: 'earliest' }, (r) => {
      got.push(r);
      return Promise.resolve();
    });
    try {
      await waitFor('all records read back', () => got.length >= 2 * KEYS.length || undefined, 30_000);
    } finally {
      await c.stop();
    }
    expect(got).toHaveLength(2 * KEYS.length);
    const dec = new TextDecoder();
    const placed = new Map<string, Set<number>>();
    for (const r of got) {
      const k = dec.decode(r.key);
      placed.set(k, (placed.get(k) ?? new Set()).add(r.partition));
    }
    expect(placed.size).toBe(KEYS.length);
    for (const k of KEYS) {
      expect([k, [...placed.get(k)!]]).toEqual([k, [partitionForKey(enc.encode(k), PARTITIONS)]]);
    }
    const fromJava = got.filter((r) => dec.decode(r.value).startsWith('java-')).length;
    expect(fromJava).toBe(KEYS.length);
  });
});
