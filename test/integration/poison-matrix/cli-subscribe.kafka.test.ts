/**
 * Breaker matrix for `ce-gateway subscribe` (the real CLI, a child process, on the run's Kafka
 * client): generated poison records (test/helpers/poison-records.ts) and then a good record on one
 * partition of a catalog topic of this run. The run prints the good event and dead-letters every
 * poison record with a reason. Then again with the schema registry unreachable when the run starts
 * (a loopback proxy of this test, listening only later): no record is skipped or dead-lettered for
 * the registry's absence; once it answers, the same outcome.
 */
import { createServer, connect } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscriptionTopics } from '../../../src/bus/subscriber/index.js';
import type { TransportRecord } from '../../../src/transport/port.js';
import { catalogWithOwnTopics } from '../../helpers/catalog-copy.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { kafkaClientEnv } from '../../helpers/kafka-client.js';
import { ceHeaders, goodPriceValue, poisonCases } from '../../helpers/poison-records.js';
import { runProcess } from '../../helpers/spawn-node.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const dec = new TextDecoder();
const catalog = catalogWithOwnTopics(uniqueName('brkA-cli'));
let gw: TestGateway;
let topic: string;
const offsets = new Map<string, string>();
let goodId = '';

beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir } });
  topic = gw.gateway.catalog.byName('PriceLoadingCompleted')!.topic.name;
  const codec = gw.gateway.codec();
  const key = new TextEncoder().encode('BRK-CLI');
  for (const c of poisonCases(codec, 'cli')) {
    const [p] = await gw.gateway.transport.produce(topic, [{ key, partition: 0, value: c.value, headers: c.headers }]);
    offsets.set(p!.offset.toString(), c.name);
  }
  goodId = 'cli-good';
  await gw.gateway.transport.produce(topic, [{ key, partition: 0, value: goodPriceValue(codec), headers: ceHeaders(goodId) }]);
}, 120_000);
afterAll(async () => {
  await gw?.close();
  catalog.cleanup();
});

/** Dead letters of `subscription` by source offset → reason, once `n` are there (or 20 s passed). */
async function deadLetters(subscription: string, n: number): Promise<Map<string, string>> {
  const out: TransportRecord[] = [];
  const reader = await gw.gateway.transport.consume({ group: uniqueName('brkA-dlq-reader'), topics: [`${subscription}.dlq`], startFrom: 'earliest' }, async (r) => void out.push(r));
  await waitFor(`${n} dead letters`, () => out.length >= n, 20_000, 200).catch(() => undefined);
  await reader.stop();
  const h = (r: TransportRecord, name: string): string => dec.decode(r.headers.find(([k]) => k === name)?.[1] ?? new Uint8Array());
  return new Map(out.map((r) => [h(r, 'dlq_source_offset'), h(r, 'dlq_reason')]));
}

async function run(subscription: string, registryUrl: string): Promise<{ ids: string[]; said: string }> {
  await gw.gateway.transport.ensureTopics(subscriptionTopics(subscription));
  const s = stackEnv();
  const r = await runProcess(process.execPath, [...CLI_ENTRY, 'subscribe', '--subscription', subscription, '--kind', 'PriceLoadingCompleted', '--from-beginning', '--max-events', '1'], {
    cwd: ROOT,
    env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: registryUrl, CATALOG_DIR: catalog.dir, LOG_LEVEL: 'warn', ...kafkaClientEnv() },
    timeoutMs: 150_000,
  });
  const said = `code ${r.code} signal ${r.signal}\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(-3000)}`;
  expect(r.signal, said).toBeNull();
  expect(r.code, said).toBe(0);
  return { ids: r.stdout.split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { attributes: { id: string } }).attributes.id), said };
}

async function expectDeadLettered(subscription: string): Promise<void> {
  const dlq = await deadLetters(subscription, offsets.size);
  const missing = [...offsets].filter(([o]) => !dlq.has(o)).map(([, name]) => name);
  expect(missing, 'poison records not dead-lettered').toEqual([]);
  for (const [o, name] of offsets) expect(dlq.get(o), name).toMatch(/^poison: /);
}

describe('ce-gateway subscribe over generated poison records', () => {
  it('prints the good event after them and dead-letters each with a reason', async () => {
    const subscription = uniqueName('brkA-cli-up');
    const { ids, said } = await run(subscription, stackEnv().schemaRegistryUrl);
    expect(ids, said).toEqual([goodId]);
    await expectDeadLettered(subscription);
  }, 200_000);

  it('with the registry unreachable at first: waits for it, skips nothing, then the same outcome', async () => {
    const upstream = new URL(stackEnv().schemaRegistryUrl);
    // A port of our own, closed until the proxy listens on it.
    const probe: Server = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const proxy: Server = createServer((c) => {
      const u = connect(Number(upstream.port), upstream.hostname);
      c.pipe(u).pipe(c);
      c.on('error', () => u.destroy());
      u.on('error', () => c.destroy());
    });
    const subscription = uniqueName('brkA-cli-down');
    const running = run(subscription, `http://127.0.0.1:${port}${upstream.pathname}`);
    try {
      // The run is reading and failing to reach the registry: nothing may be printed or dead-lettered for it.
      await new Promise((r) => setTimeout(r, 8_000));
      const early = await deadLetters(subscription, 0);
      const wrongly = [...early].filter(([, reason]) => /registry|ECONNREFUSED|fetch failed/i.test(reason));
      expect(wrongly, 'dead-lettered because the registry was away').toEqual([]);
      await new Promise<void>((r) => proxy.listen(port, '127.0.0.1', r));
      const { ids, said } = await running;
      expect(ids, said).toEqual([goodId]);
    } finally {
      await running.catch(() => undefined);
      proxy.close();
    }
    await expectDeadLettered(subscription);
  }, 240_000);
});
