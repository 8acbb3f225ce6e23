/**
 * Retries parked on `<group>.retry` under `ordering: none` are not stranded when a PATCH turns the
 * subscription to `ordering: key` (test/helpers/reordered-retry.ts), on the real broker: a catalog
 * and a definitions topic of this run's own, members on demand (the default), a real HTTP sink on
 * 127.0.0.1.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, it } from 'vitest';
import { startGateway } from '../../helpers/gateway.js';
import { expectReorderedRetriesDelivered } from '../../helpers/reordered-retry.js';
import { uniqueName } from '../../helpers/stack.js';
import { ownCatalog } from '../consumer/members.js';

const cat = ownCatalog('it-ordering-retry');
afterAll(() => cat.close());

describe('PATCH ordering none → key (Kafka)', () => {
  it('delivers the retries parked on the retry topic before the change, and counts them in the lag meanwhile', async () => {
    const env = {
      ...cat.env(),
      SUBSCRIPTIONS_TOPIC: `${uniqueName('it-ordering-retry')}.subscriptions`,
      SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      SUBSCRIPTION_IDLE_STOP_MS: '2000',
      SUBSCRIPTION_CHECK_INTERVAL_MS: '200',
    };
    const g = await startGateway({ stack: true, env });
    try {
      await g.gateway.subscriptionsLoaded();
      await expectReorderedRetriesDelivered(g, 8000);
    } finally {
      await g.close();
    }
  }, 120_000);
});
