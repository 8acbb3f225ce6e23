/**
 * A retry parked on a subscription's own retry topic when its gateway stops is delivered by the
 * next gateway without any new event of its kinds (test/helpers/parked-retry.ts), on the in-memory
 * transport shared by both gateways as a broker outlives them (the same reconciler and work check
 * as on Kafka: test/integration/subscriptions/restart-retry.kafka.test.ts). Members on demand, a
 * real HTTP sink on 127.0.0.1.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, it } from 'vitest';
import { createMemoryTransport } from '../../src/transport/index.js';
import { startGateway } from '../helpers/gateway.js';
import { expectParkedRetryDelivered } from '../helpers/parked-retry.js';

const transport = createMemoryTransport();
afterAll(() => transport.close());

describe('a retry parked when the gateway stops', () => {
  it('is delivered by the next gateway without a new event of its kinds (ordering none, members on demand)', async () => {
    const env = { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_IDLE_STOP_MS: '400', SUBSCRIPTION_CHECK_INTERVAL_MS: '100', SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') };
    await expectParkedRetryDelivered(async () => {
      const g = await startGateway({ stack: false, env, overrides: { transport } });
      await g.gateway.subscriptionsLoaded();
      return g;
    });
  }, 40_000);
});
