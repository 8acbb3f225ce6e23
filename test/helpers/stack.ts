/**
 * The real stack's settings for integration tests: from the environment when set (an external
 * stack), else from `.stack/env` written by `npm run stack:up` / the global set-up.
 */
import { readStackEnv } from '../../scripts/stack/index.js';

export interface TestStack {
  readonly kafkaBrokers: readonly string[];
  readonly schemaRegistryUrl: string;
  readonly databaseUrl: string;
  /** Folder with Kafka's jars (for tests that run Kafka's own Java client). */
  readonly kafkaLibs: string;
  /** Pid file of the broker process started by the stack (fault tests pause or kill it). */
  readonly kafkaPidFile: string | undefined;
}

export function stackEnv(): TestStack {
  const file = readStackEnv();
  const get = (k: 'KAFKA_BROKERS' | 'SCHEMA_REGISTRY_URL' | 'DATABASE_URL' | 'KAFKA_LIBS' | 'STACK_KAFKA_PID_FILE'): string | undefined => process.env[k] ?? file?.[k];
  const brokers = get('KAFKA_BROKERS');
  const registry = get('SCHEMA_REGISTRY_URL');
  const db = get('DATABASE_URL');
  if (!brokers || !registry || !db) {
    throw new Error('No stack configured: run `npm run stack:up` or set KAFKA_BROKERS, SCHEMA_REGISTRY_URL and DATABASE_URL');
  }
  return {
    kafkaBrokers: brokers.split(',').map((b) => b.trim()),
    schemaRegistryUrl: registry,
    databaseUrl: db,
    kafkaLibs: get('KAFKA_LIBS') ?? '',
    kafkaPidFile: get('STACK_KAFKA_PID_FILE'),
  };
}

/** A name unique to this run, safe for topics and groups: `<prefix>-<time>-<random>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
