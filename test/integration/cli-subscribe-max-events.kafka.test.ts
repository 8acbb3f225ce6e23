/**
 * `ce-gateway subscribe --max-events N` prints exactly N events and commits only those (tester's
 * report A1): partitions are handled side by side and the consumer kept handing records over until
 * the stop, so a run with `--max-events 1` over nine events on three partitions printed five, all
 * committed. Now the records past N are held until the stop and stay uncommitted: a second run of
 * the same subscription gets exactly the rest (nothing lost, nothing twice), and the command says on
 * stderr how many it printed and held back. Events on several
 * partitions of a topic of this run (a catalog copy); the real CLI in child processes, both
 * clients; no time is asserted.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceLoaded } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { KAFKA_CLIENTS, kafkaClientEnv } from '../helpers/kafka-client.js';
import type { KafkaClient } from '../helpers/kafka-client.js';
import { runProcess } from '../helpers/spawn-node.js';
import type { ProcessResult } from '../helpers/spawn-node.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const EVENTS = 9;
const FIRST = 2;

const catalog = catalogWithOwnTopics(uniqueName('maxev'));
let gw: TestGateway;
let published: string[];

beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir } });
  // Nine instruments, nine keys: the events land on several partitions of the six.
  published = [];
  for (let i = 0; i < EVENTS; i++) {
    const r = gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded(`MAXEV${i}/USD`, 'H1'))!;
    await r.delivered;
    published.push(r.id);
  }
  const topic = gw.gateway.catalog.byName('PriceLoadingCompleted')!.topic.name;
  const used = (await gw.gateway.transport.endOffsets(topic)).filter((p) => p.offset > 0n);
  expect(used.length, 'partitions holding the events').toBeGreaterThanOrEqual(3);
}, 120_000);
afterAll(async () => {
  await gw?.close();
  catalog.cleanup();
});

function subscribe(client: KafkaClient, subscription: string, maxEvents: number): Promise<ProcessResult> {
  const s = stackEnv();
  return runProcess(process.execPath, [...CLI_ENTRY, 'subscribe', '--subscription', subscription, '--kind', 'PriceLoadingCompleted', '--from-beginning', '--max-events', String(maxEvents)], {
    cwd: ROOT,
    env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: catalog.dir, LOG_LEVEL: 'warn', ...kafkaClientEnv(client) },
    // A run that waits for an event that never comes (one lost) is killed: signal SIGKILL.
    timeoutMs: 90_000,
  });
}

function printedIds(r: ProcessResult): string[] {
  return r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { attributes: { id: string } }).attributes.id);
}

describe('subscribe --max-events', () => {
  for (const client of KAFKA_CLIENTS) {
    it(`${client}: prints exactly N events; the next run of the subscription gets exactly the rest`, async () => {
      const subscription = uniqueName(`maxev-${client}`);
      const first = await subscribe(client, subscription, FIRST);
      const said1 = `stdout: ${first.stdout}\nstderr: ${first.stderr}`;
      expect(first.signal, said1).toBeNull();
      expect(first.code, said1).toBe(0);
      const one = printedIds(first);
      expect(one, said1).toHaveLength(FIRST);
      // The stop is said in the command's own words, whatever LOG_LEVEL (warn here): how many it
      // printed and how many later deliveries it held back uncommitted (it said nothing).
      const stopLine = /^subscribe: stopped after (\d+) events \(--max-events\), committed; (?:no later delivery was in hand|(\d+) later deliver(?:y was|ies were) in hand and held back, not committed: the next run of (\S+) gets (?:it|them) first)$/m.exec(first.stderr);
      expect(stopLine, said1).not.toBeNull();
      expect(Number(stopLine![1]), said1).toBe(FIRST);
      if (stopLine![2] !== undefined) {
        expect(Number(stopLine![2]), said1).toBeGreaterThan(0);
        expect(Number(stopLine![2]), said1).toBeLessThanOrEqual(EVENTS - FIRST);
        expect(stopLine![3], said1).toBe(subscription);
      }

      const second = await subscribe(client, subscription, EVENTS - FIRST);
      const said2 = `first: ${one.join(',')}\nstdout: ${second.stdout}\nstderr: ${second.stderr}`;
      expect(second.signal, said2).toBeNull();
      expect(second.code, said2).toBe(0);
      const two = printedIds(second);
      expect(two, said2).toHaveLength(EVENTS - FIRST);
      // Nothing twice, nothing lost: the two runs together printed every event once.
      expect(new Set([...one, ...two]).size, said2).toBe(EVENTS);
      expect([...one, ...two].sort(), said2).toEqual([...published].sort());
    }, 240_000);
  }
});
