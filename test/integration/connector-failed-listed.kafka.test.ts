/**
 * A short-form connector whose member stopped on a failure is listed as its status says it:
 * `state: failed` in `GET /subscriptions` and `GET /subscriptions/{name}`, with the failure as
 * `stateReason` (until 2026-12-07 the listing said `active` while `…/status` said `failed`).
 * The gateway runs on the real broker (this run's client); its member's failure is injected at the
 * transport port (the real member is stopped and its `done` rejects with a refusal that is not
 * retriable, as a broker refusing the login would end it). Until 2026-12-07 the failure was a real
 * one, the connector's kind topic deleted under a running kafkajs member; kafkajs members now go on
 * without a deleted topic as the @platformatic/kafka ones do (src/transport/kafka/missing-topics.ts),
 * and a connector's subscription, which reads its redrive topic too, no longer ends that way on
 * either client. The kind's topic is of this run's own catalog; the definitions topic is this run's own.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConnectors, startConnectors } from '../../src/connectors/index.js';
import type { ConnectorsHandle } from '../../src/connectors/index.js';
import { GatewayError } from '../../src/core/errors.js';
import { createLogger } from '../../src/observability/index.js';
import type { Consumption, Transport } from '../../src/transport/index.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { fetchJson } from '../http/helpers.js';
import { transportOn } from '../helpers/kafka-client.js';
import { stackEnv } from '../helpers/stack.js';
import { ownCatalog, rawKafka } from './consumer/members.js';
import type { OwnCatalog } from './consumer/members.js';

let cat: OwnCatalog;
let gw: TestGateway;
let connectors: ConnectorsHandle | undefined;
let dir: string;
let transport: Transport;
const subscription = uniqueName('it-conn-failed');
/** Ends the connector's member with `err` (it stops, then its `done` rejects): set once it runs. */
const failMember: { fail?: (err: Error) => Promise<void> } = {};

/**
 * `real`, whose consumptions of the connector's group can be ended with a failure by the test
 * (failMember): the real member stops, then `done` rejects as a member ended by a failure does.
 */
function failable(real: Transport): Transport {
  return new Proxy(real, {
    get(target, prop) {
      if (prop !== 'consume') {
        // The transports keep private fields: their methods run on the transport itself.
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      }
      return async (...args: Parameters<Transport['consume']>): Promise<Consumption> => {
        const c = await target.consume(...args);
        if (args[0].group !== subscription) return c;
        let injected: Error | undefined;
        // Settles once the real member stopped, as a failed member's `done` does.
        const done = c.done.then(() => {
          if (injected !== undefined) throw injected;
        });
        done.catch(() => undefined);
        failMember.fail = async (err) => {
          injected = err;
          await c.stop();
        };
        return { group: c.group, assignments: () => c.assignments(), joins: () => c.joins(), stop: () => c.stop(), done };
      };
    },
  });
}

beforeAll(async () => {
  cat = ownCatalog('it-conn-failed');
  dir = mkdtempSync(join(tmpdir(), 'ceg-conn-failed-'));
  writeFileSync(join(dir, 'drop.yaml'), `kind: file-drop\nsubscription: ${subscription}\nkinds: [PriceLoadingCompleted]\nsink: { directory: ${join(dir, 'out')} }\n`);
  transport = failable(transportOn({ clientId: uniqueName('it-conn-failed'), brokers: stackEnv().kafkaBrokers }));
  gw = await startGateway({ stack: true, env: { ...cat.env(), SUBSCRIPTIONS_TOPIC: `${subscription}.subscriptions` }, overrides: { transport } });
  await gw.gateway.subscriptionsLoaded();
  connectors = await startConnectors(gw.gateway, loadConnectors(dir, { environment: {} }), createLogger({ level: 'silent' }));
}, 120_000);

afterAll(async () => {
  await connectors?.stop({ withinMs: 1000 });
  await gw?.close();
  await transport?.close();
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

  await waitFor('the connector\'s member to run', () => failMember.fail !== undefined, 30_000, 50);
  await failMember.fail!(new GatewayError('CEG_BROKER_UNAVAILABLE', 'consume: the broker refused the login', { retriable: false, details: { reason: 'sasl-authentication' } }));
  await waitFor('the status to say failed', async () => (await fetchJson(`${gw.url}/subscriptions/${subscription}/status`)).body.state === 'failed', 30_000, 200);
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
