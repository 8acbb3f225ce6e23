/** Gateway members on the real stack with a catalog of this run's own topics, and a raw Kafka client. */
import { createGateway } from '../../../src/app/index.js';
import type { Gateway, GatewayOverrides } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { kafkajs } from '../../../src/transport/kafka/kafkajs.js';
import { partitionForKey } from '../../../src/transport/partitioner.js';
import { catalogWithOwnTopics } from '../../helpers/catalog-copy.js';
import { kafkaClientEnv } from '../../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';

const { Kafka, logLevel } = kafkajs();

export { kafkaClientEnv } from '../../helpers/kafka-client.js';

export interface OwnCatalog {
  readonly dir: string;
  /** The run's topic of PriceLoadingCompleted. */
  readonly priceTopic: string;
  member(overrides?: GatewayOverrides): Promise<Gateway>;
  /** Env for a `ce-gateway` child process on this catalog. */
  env(): Record<string, string>;
  close(): Promise<void>;
}

/** `client`: the Kafka client of its members; default `KAFKA_CLIENT` of the test run (see {@link kafkaClientEnv}). */
export function ownCatalog(prefix: string, client?: 'kafkajs' | 'platformatic'): OwnCatalog {
  const run = uniqueName(prefix);
  const { dir, cleanup } = catalogWithOwnTopics(run);
  const members: Gateway[] = [];
  const env = (): Record<string, string> => {
    const s = stackEnv();
    return { KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: dir, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...(client === undefined ? kafkaClientEnv() : { KAFKA_CLIENT: client }) };
  };
  return {
    dir,
    priceTopic: `${run}.trading.price-loading-completed`,
    env,
    async member(overrides = {}) {
      const config = loadConfig(env());
      const gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }), overrides);
      members.push(gw);
      await gw.ready;
      return gw;
    },
    async close() {
      await Promise.allSettled(members.splice(0).map((m) => m.close()));
      cleanup();
    },
  };
}

/** A raw kafkajs client on the stack (what a foreign producer would be). */
export function rawKafka(): InstanceType<typeof Kafka> {
  return new Kafka({ clientId: 'raw-test-client', brokers: [...stackEnv().kafkaBrokers], logLevel: logLevel.NOTHING });
}

/** Instruments whose partition key (`<instrument>_H1`) lands on each of partitions 0..n-1. */
export function instrumentsPerPartition(n: number, tag: string): string[] {
  const out: (string | undefined)[] = Array.from({ length: n });
  for (let i = 0; out.some((x) => x === undefined); i++) {
    const instrument = `${tag}${i}/USD`;
    const p = partitionForKey(new TextEncoder().encode(`${instrument.replace(/[^A-Za-z0-9]/g, '-')}_H1`), n);
    out[p] ??= instrument;
  }
  return out as string[];
}
