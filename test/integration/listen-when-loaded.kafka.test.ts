/**
 * `gateway.listen({ whenLoaded: true })` on Kafka: the server takes connections only once the
 * subscription definitions are read from their compacted topic, so the first `/readyz` it answers
 * is already 200. A replacement cluster worker joins the port this way (cli/workers.ts, issue 14);
 * a plain `listen()` resolves before that read ends.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { kafkaClientEnv } from '../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';

let gw: Gateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

async function readyGateway(): Promise<Gateway> {
  const s = stackEnv();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    KAFKA_BROKERS: s.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
    SUBSCRIPTIONS_TOPIC: uniqueName('when-loaded-defs'),
    ...kafkaClientEnv(),
  });
  gw = createGateway(config, createLogger({ level: 'silent' }));
  await gw.ready;
  return gw;
}

async function readyz(addr: AddressInfo): Promise<{ status: number; definitions: boolean | undefined }> {
  const res = await fetch(`http://127.0.0.1:${addr.port}/readyz`);
  const body = (await res.json()) as { checks: Record<string, boolean> };
  return { status: res.status, definitions: body.checks.subscriptionDefinitions };
}

describe('listen({ whenLoaded: true })', () => {
  it('resolves with the definitions loaded: the service is there and the first /readyz answers 200', async () => {
    const g = await readyGateway();
    const addr = await g.listen({ whenLoaded: true });
    expect(g.subscriptionService()).toBeDefined();
    expect(await readyz(addr)).toEqual({ status: 200, definitions: true });
  });

  it('a plain listen() resolves before the definitions are read (what whenLoaded is for)', async () => {
    const g = await readyGateway();
    const addr = await g.listen();
    expect(g.subscriptionService()).toBeUndefined();
    await g.subscriptionsLoaded();
    expect(await readyz(addr)).toEqual({ status: 200, definitions: true });
  });
});
