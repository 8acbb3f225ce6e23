/**
 * Issue 11: the gateway's Kafka client settings (KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME,
 * KAFKA_SASL_PASSWORD_FILE) against a real listener that needs SASL: the stack's SASL_PLAINTEXT
 * SCRAM-SHA-512 listener (scripts/stack/kafka.ts), on a private broker started from the same code,
 * its user created with Kafka's ConfigCommand. Both client libraries publish through it; a wrong
 * password is never ready; the password is never logged.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { gatewayWithLogs } from '../helpers/logged-gateway.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { waitFor } from '../helpers/wait.js';

describe('Kafka over SASL/SCRAM-SHA-512', { timeout: 120_000 }, () => {
  let broker: PrivateBroker;
  const catalog = catalogWithOwnTopics(`sasl${Date.now().toString(36)}`);
  const dir = mkdtempSync(join(tmpdir(), 'ceg-sasl-'));

  beforeAll(async () => {
    broker = await startPrivateBroker('sasl');
  }, 120_000);
  afterAll(async () => {
    await broker?.stop();
    catalog.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  function gateway(client: string, passwordFile: string): ReturnType<typeof gatewayWithLogs> {
    return gatewayWithLogs({
      CATALOG_DIR: catalog.dir,
      KAFKA_CLIENT: client,
      KAFKA_BROKERS: broker.saslBrokers.join(','),
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: broker.config.kafka.saslUser,
      KAFKA_SASL_PASSWORD_FILE: passwordFile,
      SUBSCRIPTIONS_TOPIC: `sasl-subs-${client}`,
    });
  }

  it.each(['kafkajs', 'platformatic'])('%s: publishes through the SASL listener with the user and password file', async (client) => {
    const { gw, logs } = gateway(client, broker.config.kafka.saslPasswordFile);
    try {
      const addr = await gw.listen();
      await gw.ready;
      const res = await fetch(`http://127.0.0.1:${addr.port}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent()) });
      expect(res.status, await res.clone().text()).toBe(202);
      const { events } = (await res.json()) as { events: { topic: string }[] };
      // A topic this young may answer NOT_LEADER (retriable) to the first offsets request: poll.
      await waitFor('the record in the end offsets', async () => (await gw.transport.endOffsets(events[0]!.topic)).reduce((a, p) => a + p.offset, 0n) > 0n, 20_000, 200);
      expect(((await (await fetch(`http://127.0.0.1:${addr.port}/readyz`)).json()) as { checks: { broker: boolean } }).checks.broker).toBe(true);
    } finally {
      await gw.close();
    }
    const password = readFileSync(broker.config.kafka.saslPasswordFile, 'utf8').trim();
    expect(password.length).toBeGreaterThan(10);
    expect(logs()).not.toContain(password);
  });

  it('a wrong password is never ready and nothing is published', async () => {
    const wrong = join(dir, 'wrong');
    writeFileSync(wrong, 'not-the-password');
    const { gw, logs } = gateway('kafkajs', wrong);
    try {
      const addr = await gw.listen();
      await waitFor('a failed bootstrap attempt', () => /SASL|[Aa]uthentication/.test(logs()), 30_000, 200);
      const r = await fetch(`http://127.0.0.1:${addr.port}/readyz`);
      expect(r.status).toBe(503);
      const post = await fetch(`http://127.0.0.1:${addr.port}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent()) });
      expect(post.status).toBe(503);
    } finally {
      await gw.close();
    }
    expect(logs()).not.toContain('not-the-password');
  });
});
