/**
 * A short-form connector whose member stopped on a failure is listed as its status says it:
 * `state: failed` in `GET /subscriptions` and `GET /subscriptions/{name}`, with the failure as
 * `stateReason` (until 2026-12-07 the listing said `active` while `…/status` said `failed`). The
 * failure is a real one: the connector's kind topic deleted under a running kafkajs member, which
 * the transport reports as a missing topic (CEG_INVALID_NAME, `details.topicMissing`, not
 * retriable) and which ends the member. Pinned to kafkajs: the @platformatic/kafka member waits for
 * the topic instead of stopping (no failure to list). The kind's topic is of this run's own
 * catalog; the definitions topic is this run's own.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConnectors, startConnectors } from '../../src/connectors/index.js';
import type { ConnectorsHandle } from '../../src/connectors/index.js';
import { createLogger } from '../../src/observability/index.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { fetchJson } from '../http/helpers.js';
import { ownCatalog, rawKafka } from './consumer/members.js';
import type { OwnCatalog } from './consumer/members.js';

let cat: OwnCatalog;
let gw: TestGateway;
let connectors: ConnectorsHandle | undefined;
let dir: string;
const subscription = uniqueName('it-conn-failed');

beforeAll(async () => {
  cat = ownCatalog('it-conn-failed', 'kafkajs');
  dir = mkdtempSync(join(tmpdir(), 'ceg-conn-failed-'));
  writeFileSync(join(dir, 'drop.yaml'), `kind: file-drop\nsubscription: ${subscription}\nkinds: [PriceLoadingCompleted]\nsink: { directory: ${join(dir, 'out')} }\n`);
  gw = await startGateway({ stack: true, env: { ...cat.env(), SUBSCRIPTIONS_TOPIC: `${subscription}.subscriptions` } });
  await gw.gateway.subscriptionsLoaded();
  connectors = await startConnectors(gw.gateway, loadConnectors(dir, { environment: {} }), createLogger({ level: 'silent' }));
}, 120_000);

afterAll(async () => {
  await connectors?.stop({ withinMs: 1000 });
  await gw?.close();
  await cat?.close();
  const admin = rawKafka().admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [`${subscription}.dlq`, `${subscription}.redrive`, `${subscription}.retry`, `${subscription}.subscriptions`] }).catch(() => undefined);
  await admin.disconnect();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

it('a connector whose member stopped on a failure is listed failed, as its status says', { timeout: 120_000 }, async () => {
  const listed = async (): Promise<Record<string, unknown> | undefined> => ((await fetchJson(`${gw.url}/subscriptions`)).body.items as Record<string, unknown>[]).find((i) => i.name === subscription);
  expect(await listed()).toMatchObject({ state: 'active', origin: 'file', connector: { kind: 'file-drop' } });
  expect(await listed()).not.toHaveProperty('stateReason');

  const admin = rawKafka().admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [cat.priceTopic] });
  } finally {
    await admin.disconnect();
  }
  // No bound on how soon: the member stops when its client meets the missing topic.
  await waitFor('the status to say failed', async () => (await fetchJson(`${gw.url}/subscriptions/${subscription}/status`)).body.state === 'failed', 90_000, 200);
  const status = (await fetchJson(`${gw.url}/subscriptions/${subscription}/status`)).body;
  expect(status).toMatchObject({ state: 'failed', running: false, origin: 'file' });

  // The listing, and GET by name, say what the status says.
  const item = await listed();
  expect(item).toMatchObject({ state: 'failed', origin: 'file', connector: { kind: 'file-drop' } });
  expect(String(item?.stateReason)).toBe((status.lastError as { reason: string }).reason);
  const one = await fetchJson(`${gw.url}/subscriptions/${subscription}`);
  expect(one.status).toBe(200);
  expect(one.body).toEqual(item);
});
