/**
 * Global set-up of the integration project: the real stack must be there, or the run fails.
 * With KAFKA_BROKERS / SCHEMA_REGISTRY_URL / DATABASE_URL set, those services are probed; else
 * the project's own stack is started (and stopped again at the end if this run started it).
 * Never skips: a test that needs Kafka fails loudly when Kafka cannot start.
 */
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import pg from 'pg';
import { stackDown, stackStatus, stackUp } from '../../scripts/stack/index.js';

const { Kafka, logLevel } = kafkajs();

async function probeExternal(): Promise<void> {
  const brokers = (process.env.KAFKA_BROKERS ?? '').split(',');
  const admin = new Kafka({ clientId: 'ce-gateway-test-setup', brokers, logLevel: logLevel.NOTHING, retry: { retries: 3 } }).admin();
  await admin.connect();
  await admin.describeCluster();
  await admin.disconnect();
  const res = await fetch(`${process.env.SCHEMA_REGISTRY_URL}/subjects`, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`schema registry answered ${res.status}`);
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  await client.end();
}

export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.KAFKA_BROKERS && process.env.SCHEMA_REGISTRY_URL && process.env.DATABASE_URL) {
    try {
      await probeExternal();
    } catch (err) {
      throw new Error(`The configured stack is not reachable (${(err as Error).message}); unset KAFKA_BROKERS/SCHEMA_REGISTRY_URL/DATABASE_URL to let the tests start their own`);
    }
    return async () => {};
  }
  const before = await stackStatus();
  const wasUp = before.kafka && before.registry && before.postgres;
  try {
    await stackUp((l) => process.stderr.write(`stack: ${l}\n`));
  } catch (err) {
    throw new Error(`The test stack could not start, so the integration tests cannot run: ${(err as Error).message}`);
  }
  return async () => {
    if (!wasUp && process.env.CE_GATEWAY_KEEP_STACK !== '1') await stackDown();
  };
}
