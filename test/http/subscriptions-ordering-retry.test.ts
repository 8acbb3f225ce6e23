/**
 * Retries parked on `<group>.retry` under `ordering: none` are not stranded when a PATCH turns the
 * subscription to `ordering: key` (test/helpers/reordered-retry.ts), on the in-memory transport
 * (the same reconciler and subscriber as on Kafka:
 * test/integration/subscriptions/ordering-retry.kafka.test.ts). Members on demand, a real HTTP
 * sink on 127.0.0.1.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, it } from 'vitest';
import { createMemoryTransport } from '../../src/transport/index.js';
import { startGateway } from '../helpers/gateway.js';
import { expectReorderedRetriesDelivered } from '../helpers/reordered-retry.js';

const transport = createMemoryTransport();
afterAll(() => transport.close());

describe('PATCH ordering none → key', () => {
  it('delivers the retries parked on the retry topic before the change, and counts them in the lag meanwhile', async () => {
    const env = { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_IDLE_STOP_MS: '400', SUBSCRIPTION_CHECK_INTERVAL_MS: '100', SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') };
    const g = await startGateway({ stack: false, env, overrides: { transport } });
    try {
      await g.gateway.subscriptionsLoaded();
      await expectReorderedRetriesDelivered(g, 3000);
    } finally {
      await g.close();
    }
  }, 60_000);
});
