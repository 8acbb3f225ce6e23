/** Builds a real gateway for tests: on the stack (Kafka + registry) or on the in-memory adapters. */
import type { AddressInfo } from 'node:net';
import { createGateway } from '../../src/app/index.js';
import type { Gateway, GatewayOverrides } from '../../src/app/index.js';
import type { RuntimeSubscription } from '../../src/connectors/subscriptions/runtime.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { kafkaClientEnv } from './kafka-client.js';
import { stackEnv } from './stack.js';

export interface TestGateway {
  readonly gateway: Gateway;
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A gateway listening on a free loopback port, ready. `overrides`: its transport and the like
 * (createGateway's); `subscriptions`: declared before it listens (a connector file's), and then
 * resolved only once the subscription definitions are loaded.
 */
export async function startGateway(opts: { stack: boolean; env?: Record<string, string>; overrides?: GatewayOverrides; subscriptions?: readonly RuntimeSubscription[] }): Promise<TestGateway> {
  const s = opts.stack ? stackEnv() : undefined;
  const vars: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // KAFKA_CLIENT of this run (issue 14: `KAFKA_CLIENT=platformatic npx vitest run …` runs the file on that client).
    ...(s ? { KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, DATABASE_URL: s.databaseUrl, ...kafkaClientEnv() } : {}),
    ...opts.env,
  };
  const config = loadConfig(vars);
  const log = createLogger({ level: config.logLevel, destination: process.stderr });
  const gateway = createGateway(config, log, opts.overrides);
  if (opts.subscriptions !== undefined) gateway.declareSubscriptions(opts.subscriptions);
  const addr: AddressInfo = await gateway.listen();
  await gateway.ready;
  if (opts.subscriptions !== undefined) await gateway.subscriptionsLoaded();
  return { gateway, url: `http://127.0.0.1:${addr.port}`, close: () => gateway.close() };
}

/**
 * One of several gateway instances on the stack sharing `env` (one definitions topic): started as
 * `INSTANCE_ID=id`, added to `all` (for closing), resolved once its subscription definitions are loaded.
 */
export async function startInstance(env: Record<string, string>, id: string, all: TestGateway[]): Promise<TestGateway> {
  const g = await startGateway({ stack: true, env: { ...env, INSTANCE_ID: id } });
  all.push(g);
  await g.gateway.subscriptionsLoaded();
  return g;
}

/**
 * `gateway` listening on its configured address (`PORT=0`: a free port), ready, its subscription
 * definitions loaded: its URL on 127.0.0.1. For a gateway a test builds itself (its own config and logger).
 */
export async function listening(gateway: Gateway): Promise<string> {
  const addr: AddressInfo = await gateway.listen();
  await gateway.ready;
  await gateway.subscriptionsLoaded();
  return `http://127.0.0.1:${addr.port}`;
}

/** Sum of end offsets of a topic: how many records it ever received. */
export async function recordCount(gateway: Gateway, topic: string): Promise<bigint> {
  const offs = await gateway.transport.endOffsets(topic);
  return offs.reduce((a, p) => a + p.offset, 0n);
}
