/**
 * Which Kafka client (issue 14: `KAFKA_CLIENT=kafkajs|platformatic`) an integration test runs on.
 * - Tests on the shared stack run on ONE client: `KAFKA_CLIENT` from the environment
 *   (`KAFKA_CLIENT=platformatic npx vitest run …`; unset: the gateway's default), so the suite's
 *   time is not doubled (exception: a test whose point is one client's behaviour, e.g. the
 *   kafkajs fetch wait in retry-backoff-timing, runs on both); CI (`.ci/run`) runs the suite on the default client, and
 *   `npm run test:platformatic` runs the integration project on the other.
 * - Fault tests on a private broker run on BOTH clients in one file, sharing the broker (its
 *   start is the slow part), so no one can forget the second client.
 */
import { loadConfig } from '../../src/config/index.js';
import { createKafkaTransport, createPlatformaticTransport } from '../../src/transport/index.js';
import type { KafkaTransportInput, Transport } from '../../src/transport/index.js';

export type KafkaClient = 'kafkajs' | 'platformatic';

/** Every client behind the transport port. */
export const KAFKA_CLIENTS: readonly KafkaClient[] = ['kafkajs', 'platformatic'];

/** The client of this run: `KAFKA_CLIENT` when set, else the configuration's default. */
export function testKafkaClient(): KafkaClient {
  const c = process.env.KAFKA_CLIENT;
  if (c === undefined || c === '') return loadConfig({ KAFKA_BROKERS: '127.0.0.1:9092' }).kafka?.client ?? 'kafkajs';
  if (c !== 'kafkajs' && c !== 'platformatic') throw new Error(`KAFKA_CLIENT=${c}: expected kafkajs or platformatic`);
  return c;
}

/** `KAFKA_CLIENT` for a gateway's environment: `client`, or this run's. */
export function kafkaClientEnv(client: KafkaClient = testKafkaClient()): { KAFKA_CLIENT: KafkaClient } {
  return { KAFKA_CLIENT: client };
}

/** A transport on `client` (default: this run's). */
export function transportOn(input: KafkaTransportInput, client: KafkaClient = testKafkaClient()): Transport {
  return (client === 'platformatic' ? createPlatformaticTransport : createKafkaTransport)(input);
}
