/**
 * `ce-gateway subscribe` and its dead-letter topic, as a new user meets them (helper walk-through):
 * the command creates no topic, so a new subscription has no `<name>.dlq`, and every run began
 * with a warning about it — before anything had gone wrong. Now the run says it once, as a note on
 * its `subscribed` line with the command that creates the topic; a record that is then
 * dead-lettered is the warning, and names that command too; after `ce-gateway topics
 * --subscription NAME` (the documented way) the line names the topic and the dead letter is in it.
 * A poison record (not Avro) and a good event on one partition and key of a topic of this run; the
 * real CLI in child processes at the default log level, both clients; no time is asserted.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadLetterTopic } from '../../src/bus/subscriber/index.js';
import type { TransportRecord } from '../../src/transport/port.js';
import { priceLoaded } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { KAFKA_CLIENTS, kafkaClientEnv } from '../helpers/kafka-client.js';
import type { KafkaClient } from '../helpers/kafka-client.js';
import { runProcess } from '../helpers/spawn-node.js';
import type { ProcessResult } from '../helpers/spawn-node.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { instrumentsPerPartition } from './consumer/members.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

const catalog = catalogWithOwnTopics(uniqueName('dlqnote'));
let gw: TestGateway;
let goodId: string;

beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir } });
  const topic = gw.gateway.catalog.byName('PriceLoadingCompleted')!.topic.name;
  const partitions = await gw.gateway.transport.partitionCount(topic);
  // The poison record first, then the event, on one partition and one key: handled in that order.
  const instrument = instrumentsPerPartition(partitions, 'DLQNOTE')[0]!;
  const key = new TextEncoder().encode(`${instrument.replace(/[^A-Za-z0-9]/g, '-')}_H1`);
  await gw.gateway.transport.produce(topic, [{ key, value: new TextEncoder().encode('not avro'), headers: [], partition: 0 }]);
  const r = gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded(instrument, 'H1'))!;
  const at = await r.delivered;
  expect(at.partition, 'the event is on the poison record\'s partition').toBe(0);
  goodId = r.id;
}, 120_000);
afterAll(async () => {
  await gw?.close();
  catalog.cleanup();
});

function cli(client: KafkaClient, args: readonly string[]): Promise<ProcessResult> {
  const s = stackEnv();
  const env: NodeJS.ProcessEnv = { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: catalog.dir, ...kafkaClientEnv(client) };
  delete env['LOG_LEVEL']; // what a user sees: the default, info
  return runProcess(process.execPath, [...CLI_ENTRY, ...args], { cwd: ROOT, env, timeoutMs: 90_000 });
}

const subscribe = (client: KafkaClient, name: string): Promise<ProcessResult> =>
  cli(client, ['subscribe', '--subscription', name, '--kind', 'PriceLoadingCompleted', '--from-beginning', '--max-events', '1']);

/** The pino lines of a run's stderr at warn (40) or above. */
function warnings(stderr: string): { msg: string }[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string })
    .filter((l) => l.level >= 40);
}

function printedIds(r: ProcessResult): string[] {
  return r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { attributes: { id: string } }).attributes.id);
}

describe('subscribe without its dead-letter topic', () => {
  for (const client of KAFKA_CLIENTS) {
    it(`${client}: a new subscription says once, as a note, that it has no NAME.dlq and how to create it; the dead letter is the only warning`, async () => {
      const name = uniqueName(`dlqnote-${client}`);
      const r = await subscribe(client, name);
      const said = `stdout: ${r.stdout}\nstderr: ${r.stderr}`;
      expect(r.signal, said).toBeNull();
      expect(r.code, said).toBe(0);
      expect(printedIds(r), said).toEqual([goodId]);
      const create = `\`ce-gateway topics --subscription ${name}\``;
      const lines = r.stderr.split('\n');
      expect(lines.filter((l) => l.startsWith('subscribed ')), said).toEqual([
        `subscribed ${name} (note: no ${name}.dlq, so a record that cannot be decoded is logged and skipped; to keep such records, create it with ${create})`,
      ]);
      // Before: a warning at every start. Now the only warning is the record dead-lettered, and it says what to do.
      const warned = warnings(r.stderr);
      expect(warned.map((w) => w.msg), said).toEqual([`record dead-lettered (not stored: no dead-letter topic ${name}.dlq; to keep the next ones, create it with ${create})`]);
    }, 180_000);

    it(`${client}: once \`ce-gateway topics --subscription NAME\` created it, the run names it and the dead letter is kept there`, async () => {
      const name = uniqueName(`dlqnote-kept-${client}`);
      const topics = await cli(client, ['topics', '--subscription', name]);
      expect(topics.code, `stdout: ${topics.stdout}\nstderr: ${topics.stderr}`).toBe(0);
      const r = await subscribe(client, name);
      const said = `stdout: ${r.stdout}\nstderr: ${r.stderr}`;
      expect(r.code, said).toBe(0);
      expect(printedIds(r), said).toEqual([goodId]);
      expect(r.stderr.split('\n').filter((l) => l.startsWith('subscribed ')), said).toEqual([`subscribed ${name} (dead letters go to ${name}.dlq)`]);
      expect(warnings(r.stderr).map((w) => w.msg), said).toEqual(['record dead-lettered']);
      const kept: TransportRecord[] = [];
      const read = await gw.gateway.transport.read({ topics: [deadLetterTopic(name)], from: { kind: 'earliest' }, untilEnd: true }, (rec) => Promise.resolve(void kept.push(rec)));
      await read.done;
      expect(kept.map((k) => new TextDecoder().decode(k.value ?? new Uint8Array())), said).toEqual(['not avro']);
    }, 180_000);
  }
});
