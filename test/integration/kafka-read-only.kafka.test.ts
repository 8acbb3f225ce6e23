/**
 * "Read-only credentials suffice" for `tail`, `trace` and `subscribe` (docs/security.md; the
 * `readOnly` gateway of src/app/gateway.ts), tried against a broker that enforces it: a private
 * broker with Kafka's StandardAuthorizer, where the SASL/SCRAM user may only read and describe
 * this run's topics and use consumer groups named `ce-gateway.*`, and may not write anything.
 * The kafkajs adapter used to connect its idempotent producer for every read (InitProducerId, which
 * such a principal is refused), so a read-only `tail` failed on kafkajs; @platformatic/kafka asks
 * for a producer id only on its first send. Both clients: `tail` prints the event, the read-only
 * port calls answer, and a produce is refused (the authorizer is really on).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import { priceLoaded } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { stackEnv } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const prefix = `ro${Date.now().toString(36)}`;
const catalog = catalogWithOwnTopics(prefix);
const priceTopic = `${prefix}.trading.price-loading-completed`;
const GROUP = 'ce-gateway.sub.ro.reader';
let broker: PrivateBroker;
let publishedId = '';

beforeAll(async () => {
  broker = await startPrivateBroker('acl', {
    extraProperties: ['authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer', 'super.users=User:ANONYMOUS', 'allow.everyone.if.no.acl.found=false'],
  });
  // The PLAINTEXT listener's principal (ANONYMOUS) is the super user: it creates the topics and publishes.
  const writer = await startGateway({ stack: true, env: { KAFKA_BROKERS: broker.brokers.join(','), CATALOG_DIR: catalog.dir, KAFKA_CLIENT: 'platformatic' } });
  try {
    const published = writer.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded('READONLY/USD', 'H1'))!;
    await published.delivered;
    publishedId = published.id;
    await writer.gateway.transport.commitOffsets(GROUP, priceTopic, [{ partition: 0, offset: 0n }]);
  } finally {
    await writer.close();
  }
  const { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Kafka, ResourcePatternTypes, logLevel } = kafkajs();
  const admin = new Kafka({ clientId: 'acl-setup', brokers: [...broker.brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const principal = `User:${broker.config.kafka.saslUser}`;
    const allow = (resourceType: number, resourceName: string, operation: number) => ({ resourceType, resourceName, resourcePatternType: ResourcePatternTypes.PREFIXED, principal, host: '*', operation, permissionType: AclPermissionTypes.ALLOW });
    await admin.createAcls({
      acl: [allow(AclResourceTypes.TOPIC, `${prefix}.`, AclOperationTypes.READ), allow(AclResourceTypes.TOPIC, `${prefix}.`, AclOperationTypes.DESCRIBE), allow(AclResourceTypes.GROUP, 'ce-gateway.', AclOperationTypes.READ)],
    });
  } finally {
    await admin.disconnect();
  }
}, 180_000);

afterAll(async () => {
  await broker?.stop();
  catalog.cleanup();
}, 60_000);

/** The read-only user's settings: SASL/SCRAM on the private broker, the stack's registry. */
function readerEnv(client: string): Record<string, string> {
  return {
    KAFKA_CLIENT: client,
    KAFKA_BROKERS: broker.saslBrokers.join(','),
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: broker.config.kafka.saslUser,
    KAFKA_SASL_PASSWORD_FILE: broker.config.kafka.saslPasswordFile,
    SCHEMA_REGISTRY_URL: stackEnv().schemaRegistryUrl,
    CATALOG_DIR: catalog.dir,
    LOG_LEVEL: 'warn',
  };
}

describe.each(['kafkajs', 'platformatic'])('a principal that may only read (%s)', (client) => {
  it('tail prints the event', async () => {
    const tail = spawn(process.execPath, [...CLI_ENTRY, 'tail', 'PriceLoadingCompleted', '--from-beginning', '--json'], { env: { ...process.env, ...readerEnv(client) }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: { valid: boolean; attributes?: { id: string } }[] = [];
    createInterface({ input: tail.stdout }).on('line', (l) => lines.push(JSON.parse(l) as (typeof lines)[number]));
    let stderr = '';
    tail.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => tail.once('exit', (c) => r(c)));
    try {
      await waitFor('the event from tail', () => lines.length >= 1 || (tail.exitCode !== null && Promise.reject(new Error(`tail exited ${tail.exitCode}: ${stderr.slice(-2000)}`))), 60_000);
      expect(lines).toEqual([expect.objectContaining({ valid: true, attributes: expect.objectContaining({ id: publishedId }) })]);
    } finally {
      tail.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 90_000);

  it('the read-only calls answer and a produce is refused', async () => {
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', ...readerEnv(client) });
    const gw = createGateway(config, createLogger({ level: 'silent' }), { readOnly: true });
    try {
      await gw.ready;
      const t = gw.transport;
      expect(await t.partitionCount(priceTopic)).toBe(6);
      expect((await t.endOffsets(priceTopic)).reduce((a, p) => a + p.offset, 0n)).toBe(1n);
      expect(await t.offsetsAt(priceTopic, { kind: 'earliest' })).toHaveLength(6);
      expect((await t.committedOffsets(GROUP, priceTopic)).find((c) => c.partition === 0)?.offset).toBe(0n);
      expect(await t.groupMembers(GROUP)).toBeUndefined(); // allowed to describe it; no member joined
      expect(await t.isHealthy()).toBe(true);
      const refused = await t.produce(priceTopic, [{ key: Buffer.from('k'), value: new Uint8Array([0]), headers: [] }]).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(String(refused)).toMatch(/[Aa]uthoriz/);
    } finally {
      await gw.close();
    }
  }, 90_000);
});

