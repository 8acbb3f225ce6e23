/**
 * A good record whose writer schema is not cached yet, read while the schema registry refuses the
 * gateway (HTTP 403: an expired credential, a proxy's rule) or answers a 404 that is not the
 * registry's own (a wrong path, a proxy's page): that is the gateway's trouble, not the record's.
 * `ce-gateway subscribe` (the real CLI, read-only: every schema id is looked up) must not
 * dead-letter the record as poison; once the registry answers, it prints it.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { subscriptionTopics } from '../../../src/bus/subscriber/index.js';
import type { TransportRecord } from '../../../src/transport/port.js';
import { catalogWithOwnTopics } from '../../helpers/catalog-copy.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { kafkaClientEnv } from '../../helpers/kafka-client.js';
import { ceHeaders, goodPriceValue } from '../../helpers/poison-records.js';
import { runProcess } from '../../helpers/spawn-node.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
// Each case on a catalog (topics) of its own, read from the beginning: only its record is there.
let catalog: ReturnType<typeof catalogWithOwnTopics>;
let gw: TestGateway;
beforeEach(async () => {
  catalog = catalogWithOwnTopics(uniqueName('brkA-reg'));
  gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir } });
}, 120_000);
afterEach(async () => {
  await gw?.close();
  catalog.cleanup();
});

/** A registry in front of the real one: answers `refusal` while `refusing`, else forwards. */
async function frontRegistry(refusal: { status: number; body: string }): Promise<{ url: string; server: Server; serve: () => void; asked: () => number }> {
  const upstream = stackEnv().schemaRegistryUrl;
  let refusing = true;
  let asked = 0;
  const server = createServer((req, res) => {
    asked++;
    if (refusing) {
      res.writeHead(refusal.status, { 'content-type': 'application/json' }).end(refusal.body);
      return;
    }
    const path = (req.url ?? '/').replace(/^\/apis\/ccompat\/v7/, '');
    fetch(`${upstream}${path}`).then(
      async (r) => void res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(await r.text()),
      () => void res.writeHead(502).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/apis/ccompat/v7`, server, serve: () => void (refusing = false), asked: () => asked };
}

for (const refusal of [
  { name: 'HTTP 403', status: 403, body: '{"error_code":40301,"message":"forbidden"}' },
  { name: 'a 404 without a registry error_code', status: 404, body: '{"title":"Could not find resource for full path"}' },
]) {
  describe(`a registry answering ${refusal.name}`, () => {
    it('is waited for: the good record is not dead-lettered, and is printed once the registry answers', async () => {
      const topic = gw.gateway.catalog.byName('PriceLoadingCompleted')!.topic.name;
      const id = `reg-${refusal.status}-${Date.now()}`;
      const subscription = uniqueName('brkA-reg');
      await gw.gateway.transport.ensureTopics(subscriptionTopics(subscription));
      await gw.gateway.transport.produce(topic, [{ key: null, partition: 0, value: goodPriceValue(gw.gateway.codec()), headers: ceHeaders(id) }]);
      const front = await frontRegistry(refusal);
      const s = stackEnv();
      const running = runProcess(process.execPath, [...CLI_ENTRY, 'subscribe', '--subscription', subscription, '--kind', 'PriceLoadingCompleted', '--from-beginning', '--max-events', '1'], {
        cwd: ROOT,
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: front.url, CATALOG_DIR: catalog.dir, LOG_LEVEL: 'warn', ...kafkaClientEnv() },
        timeoutMs: 120_000,
      });
      try {
        // Until the run asked the registry again (it waits for it) or dead-lettered the record.
        const dead: TransportRecord[] = [];
        const reader = await gw.gateway.transport.consume({ group: uniqueName('brkA-dlq-reader'), topics: [`${subscription}.dlq`], startFrom: 'earliest' }, async (r) => void dead.push(r));
        try {
          await waitFor('the registry asked again, or a dead letter', () => front.asked() >= 3 || dead.length > 0, 90_000, 200);
        } finally {
          await reader.stop();
        }
        expect(dead.map((r) => new TextDecoder().decode(r.headers.find(([k]) => k === 'dlq_reason')?.[1])), 'dead-lettered for the registry\'s refusal').toEqual([]);
        front.serve();
        const r = await running;
        const said = `stdout: ${r.stdout}\nstderr: ${r.stderr.slice(-2000)}`;
        expect(r.code, said).toBe(0);
        expect(r.stdout.split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { attributes: { id: string } }).attributes.id), said).toEqual([id]);
      } finally {
        front.serve();
        await running.catch(() => undefined);
        front.server.close();
      }
    }, 200_000);
  });
}
