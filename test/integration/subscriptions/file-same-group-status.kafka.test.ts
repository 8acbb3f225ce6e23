/**
 * The status of a stored subscription that a connector file's of the same consumer group shadows
 * (same owner and name: docs/subscriptions.md "Subscriptions in connector files"): it is not run,
 * so it says `running: false` and no counts or times of its own — 0 and null — while the file's
 * members deliver in that group. Until 2026-12-07 it showed the file member's counts and
 * `running: true` beside `shadowedBy` ("not run"), as if the stored definition delivered them. The
 * lag stays the group's (its commits are where the stored one resumes once the clash is gone).
 * Real stack, this run's own catalog and definitions topic.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import type { Gateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { loadConnectors } from '../../../src/connectors/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../../fixtures/events.js';
import { listening } from '../../helpers/gateway.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { fetchJson } from '../../http/helpers.js';
import { ownCatalog, rawKafka } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

let cat: OwnCatalog;
let dir: string;
const subscriptionsTopic = `${uniqueName('it-same-group')}.subscriptions`;
const NAME = uniqueName('same-group').replace(/\./g, '-');
const GROUP = `ce-gateway.sub.anonymous.${NAME}`;
const gateways: Gateway[] = [];

/** A gateway on this run's catalog and definitions topic (with the connector files of `dir` when `files`); its URL. */
async function start(id: string, files: boolean): Promise<string> {
  const config = loadConfig({ ...cat.env(), PORT: '0', HOST: '127.0.0.1', INSTANCE_ID: id, SUBSCRIPTIONS_TOPIC: subscriptionsTopic, SUBSCRIPTION_IDLE_STOP_MS: '0' });
  const gw = createGateway(config, createLogger({ level: 'silent', destination: process.stderr }));
  gateways.push(gw);
  if (files) gw.declareSubscriptions(loadConnectors(dir, { environment: {} }).flatMap((d) => (d.kind === 'subscription' ? [d.runtime] : [])));
  return listening(gw);
}

let url: string;

beforeAll(async () => {
  cat = ownCatalog('it-same-group');
  dir = mkdtempSync(join(tmpdir(), 'ceg-same-group-'));
  // The stored one first, on a gateway without connector files…
  const first = await start('it-same-group-1', false);
  expect((await fetchJson(`${first}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: NAME, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) })).status).toBe(201);
  await gateways[0]!.close();
  // …then a file of the same owner and name (so the same consumer group), and a gateway with it.
  writeFileSync(join(dir, `${NAME}.yaml`), `kind: subscription\nname: ${NAME}\nowner: anonymous\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: file-drop, sink: { directory: out } }\n`);
  url = await start('it-same-group-2', true);
}, 120_000);

afterAll(async () => {
  if (url !== undefined) await fetchJson(`${url}/subscriptions/${NAME}`, { method: 'DELETE' }).catch(() => undefined);
  await Promise.allSettled(gateways.map((g) => g.close()));
  await cat?.close();
  const admin = rawKafka().admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [subscriptionsTopic, `${GROUP}.dlq`, `${GROUP}.redrive`, `${GROUP}.retry`] }).catch(() => undefined);
  await admin.disconnect();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

it('the shadowed stored subscription says not running and no counts of its own while the file\'s members deliver in its group', { timeout: 120_000 }, async () => {
  const event = { specversion: '1.0', id: randomUUID(), source: 'urn:partner:it-same-group', type: PRICE_LOADING_COMPLETED, time: '2026-12-01T10:00:00.000Z', data: priceLoaded('SAME/USD', 'H1', '26120110') };
  const res = await fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify([event]) });
  expect(res.status, await res.text()).toBe(202);
  await waitFor('the file subscription drops the event', () => readdirSync(join(dir, 'out')).length >= 1, 60_000, 200);
  // The file's member counted it (the metric is the group's, whichever definition runs in it).
  await waitFor('the delivery counted', async () => (await (await fetch(`${url}/metrics`)).text()).includes(`ce_gateway_subscription_records_total{subscription="${GROUP}",outcome="handled"} 1`), 30_000, 200);

  const status = await fetchJson(`${url}/subscriptions/${NAME}/status`);
  expect(status.status).toBe(200);
  expect(status.body).toMatchObject({ name: NAME, group: GROUP, origin: 'api', shadowedBy: { name: NAME, owner: 'anonymous', group: GROUP } });
  expect(status.body).toMatchObject({ running: false, delivered: 0, retried: 0, deadLettered: 0, lastError: null, lastDeliveryTime: null });
  // The lag is the group's, from Kafka: where the stored one resumes once the clash is gone.
  expect((status.body.lag as { partitions: unknown[] }).partitions.length).toBeGreaterThan(0);
});
