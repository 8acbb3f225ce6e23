/**
 * One harness, two transports (bus spec T3, T14): the scenarios run the same caller code on Kafka
 * (each member its own Kafka clients, as separate processes would be) and on the in-memory
 * transport (members share one in-memory broker, the only way members meet in memory).
 */
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { createMemoryRegistry } from '../../src/registry/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import { stackEnv } from '../helpers/stack.js';
import { kafkaClientEnv } from '../helpers/kafka-client.js';

export interface Harness {
  readonly name: 'kafka' | 'memory';
  /** A new member (a gateway without HTTP): what a new process would be. Closed by `close()`. */
  member(): Promise<Gateway>;
  close(): Promise<void>;
}

function vars(kafka: boolean, client?: 'kafkajs' | 'platformatic'): Record<string, string> {
  const s = kafka ? stackEnv() : undefined;
  return {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(s ? { KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, DATABASE_URL: s.databaseUrl } : {}),
    ...(kafka ? kafkaClientEnv(client) : {}),
  };
}

/** Members on the stack's Kafka through `client` (default: this run's `KAFKA_CLIENT`, else the gateway's default). */
export function kafkaHarness(client?: 'kafkajs' | 'platformatic'): Harness {
  const members: Gateway[] = [];
  return {
    name: 'kafka',
    async member() {
      const config = loadConfig(vars(true, client));
      const gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }));
      members.push(gw);
      await gw.ready;
      return gw;
    },
    async close() {
      await Promise.allSettled(members.splice(0).map((m) => m.close()));
    },
  };
}

export function memoryHarness(): Harness {
  const transport = createMemoryTransport();
  const registry = createMemoryRegistry();
  const members: Gateway[] = [];
  return {
    name: 'memory',
    async member() {
      const config = loadConfig(vars(false));
      const gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }), { transport, registry });
      members.push(gw);
      await gw.ready;
      return gw;
    },
    async close() {
      await Promise.allSettled(members.splice(0).map((m) => m.close()));
      await transport.close();
    },
  };
}
