/**
 * The environment of a `ce-gateway serve` child process on the stack's Kafka and registry, for the
 * tests that run the real CLI and signal it (drain, SIGHUP, workers, connectors): no env file, the
 * Kafka client under test, loopback, info logs, a catalog copy and a definitions topic of its own.
 */
import { kafkaClientEnv } from './kafka-client.js';
import { stackEnv } from './stack.js';

/** `process.env` with the settings above, then `extra` (which wins, e.g. GATEWAY_WORKERS, OPS_PORT). */
export function serveEnv(o: { readonly catalogDir: string; readonly subscriptionsTopic: string; readonly port: number }, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const s = stackEnv();
  return {
    ...process.env,
    CE_GATEWAY_ENV_FILE: '/dev/null',
    ...kafkaClientEnv(),
    KAFKA_BROKERS: s.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
    CATALOG_DIR: o.catalogDir,
    SUBSCRIPTIONS_TOPIC: o.subscriptionsTopic,
    PORT: String(o.port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...extra,
  };
}
