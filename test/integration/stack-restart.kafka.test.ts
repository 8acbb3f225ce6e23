/**
 * Records written before `stack:down` / `stack:up` still decode with their schemas afterwards:
 * the registry's ids live in its PostgreSQL database as long as Kafka's data does.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { stackDown, stackUp } from '../../scripts/stack/index.js';
import { isGatewayError } from '../../src/core/errors.js';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { uniqueName } from '../helpers/stack.js';
import { startGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

describe('stack restart', () => {
  it('decodes records written before stack:down after stack:up', async () => {
    if (process.env.KAFKA_BROKERS) throw new Error('this test restarts the project stack; run it without an external KAFKA_BROKERS');
    // Topics of this run only: the record is found by reading its partition from the start.
    const catalog = catalogWithOwnTopics(uniqueName('restart'));
    const first = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir } });
    const topic = first.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
    const event = structuredPriceEvent({ id: randomUUID() }, priceLoaded('CHF/JPY', 'W1'));
    const res = await fetch(`${first.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
    expect(res.status).toBe(202);
    const stored = ((await res.json()) as { events: { partition: number; offset: string }[] }).events[0]!;
    await first.close();

    await stackDown();
    await stackUp();

    const second = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir } });
    try {
      const codec = second.gateway.codec();
      let decoded: Record<string, unknown> | undefined;
      const consume = () =>
        second.gateway.transport.consume({ group: `restart-${randomUUID()}`, topics: [topic], startFrom: 'earliest' }, async (record) => {
          if (record.partition !== stored.partition || record.offset !== BigInt(stored.offset)) return;
          const env = await codec.fromRecord(record);
          decoded = { id: env.attributes.id, data: env.data?.kind === 'json' ? env.data.value : undefined };
        });
      // A broker just started loads its group coordinator's state first (__consumer_offsets, as
      // large as the run made it): a join meanwhile fails with a retriable error (NOT_COORDINATOR,
      // COORDINATOR_LOAD_IN_PROGRESS), which the gateway's reconciler retries; so does this test.
      let c: Awaited<ReturnType<typeof consume>> | undefined;
      const until = Date.now() + 60_000;
      while (c === undefined) {
        try {
          c = await consume();
        } catch (err) {
          if (!isGatewayError(err) || !err.retriable || Date.now() > until) throw err;
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
      await waitFor('the record written before the restart', () => decoded, 60_000);
      await c.stop();
      expect(decoded).toEqual({ id: event.id, data: { ...priceLoaded('CHF/JPY', 'W1'), feed: null } });
    } finally {
      await second.close();
      catalog.cleanup();
    }
  });
});
