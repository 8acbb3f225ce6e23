/**
 * A retry parked on a subscription's own retry topic when its gateway stops is delivered by the
 * next gateway without any new event of its kinds (test/helpers/parked-retry.ts), on the real
 * broker: two gateways one after the other on a catalog and a definitions topic of this run's own,
 * members on demand (the default), a real HTTP sink on 127.0.0.1.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, it } from 'vitest';
import { startGateway } from '../../helpers/gateway.js';
import { expectParkedRetryDelivered } from '../../helpers/parked-retry.js';
import { uniqueName } from '../../helpers/stack.js';
import { ownCatalog } from '../consumer/members.js';

const cat = ownCatalog('it-restart-retry');
afterAll(() => cat.close());

describe('a retry parked when the gateway stops (Kafka)', () => {
  it('is delivered by the next gateway without a new event of its kinds (ordering none, members on demand)', async () => {
    const env = {
      ...cat.env(),
      SUBSCRIPTIONS_TOPIC: `${uniqueName('it-restart-retry')}.subscriptions`,
      SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      SUBSCRIPTION_IDLE_STOP_MS: '2000',
      SUBSCRIPTION_CHECK_INTERVAL_MS: '200',
    };
    await expectParkedRetryDelivered(async () => {
      const g = await startGateway({ stack: true, env });
      await g.gateway.subscriptionsLoaded();
      return g;
    });
  }, 120_000);
});
