/**
 * A subscription's record counters never go down while the process runs, also when its consumer
 * stops on a failure and the reconciler starts a new member (issue 15 "Metrics"; Prometheus reads
 * a counter that goes down as a reset, and with GATEWAY_WORKERS the pod's sum would fall by what
 * this worker counted). The subscription is a connector file's (file-drop sink); the failure is
 * the transport's own: the in-memory transport, with the consumption of its group made to end in
 * an error on demand. (A library subscription's counters start again with a new `subscribe()`, as
 * after an `unsubscribe()`.) A failed member of a subscription that is then deleted or paused no
 * longer holds /readyz at not ready: no member is expected any more.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConnectors } from '../../src/connectors/index.js';
import { tempDir } from '../unit/connectors/helpers.js';
import type { Gateway } from '../../src/app/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { Consumption, Transport } from '../../src/transport/port.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startSink } from '../helpers/sink.js';
import { waitFor } from '../helpers/wait.js';
import { post } from './helpers.js';

const GROUP = 'ce-gateway.sub.ops.counted';
/** Per consumer group, ends its current consumption in an error. */
const failers = new Map<string, (err: Error) => void>();
const failCurrent = (err: Error, group = GROUP): void => failers.get(group)!(err);
/** Members GROUP had so far (consumptions started). */
let members = 0;

/** The in-memory transport; a group's consumption also ends in an error when `failCurrent` is called for it. */
function failingOnDemand(inner: Transport): Transport {
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'consume') {
        return async (...args: Parameters<Transport['consume']>): Promise<Consumption> => {
          const c = await target.consume(...args);
          if (args[0].group === GROUP) members++;
          // Once failed, the member stops (its own `done` then resolves) and this `done` rejects.
          let failing = false;
          const done = new Promise<void>((resolve, reject) => {
            c.done.then(() => (failing ? undefined : resolve()), reject);
            failers.set(args[0].group, (err) => {
              failing = true;
              void c.stop().finally(() => reject(err));
            });
          });
          done.catch(() => undefined);
          return { group: c.group, assignments: () => c.assignments(), joins: () => c.joins(), stop: () => c.stop(), done };
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

let gw: Gateway;
let url: string;
let started: TestGateway;
const dir = tempDir('ceg-counted-');

beforeAll(async () => {
  writeFileSync(join(dir.dir, 'counted.yaml'), 'kind: subscription\nname: counted\nowner: ops\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: file-drop, sink: { directory: out } }\n');
  started = await startGateway({
    stack: false,
    env: { LOG_LEVEL: 'silent', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
    overrides: { transport: failingOnDemand(createMemoryTransport()) },
    subscriptions: loadConnectors(dir.dir, { environment: {} }).flatMap((d) => (d.kind === 'subscription' ? [d.runtime] : [])),
  });
  ({ gateway: gw, url } = started);
});

afterAll(async () => {
  await started?.close();
  dir.remove();
});

const figure = async (series: string): Promise<number | undefined> => {
  const line = (await gw.metrics.render()).body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const HANDLED = `ce_gateway_subscription_records_total{subscription="${GROUP}",outcome="handled"}`;
const UP = `ce_gateway_subscription_up{subscription="${GROUP}"}`;

async function publish(n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await post(url, structuredPriceEvent({ subject: `counted-${i}` }))).status).toBe(202);
}

it('a failed member\'s counted records stay in the counter while it is down, and the next member adds to them', async () => {
  await waitFor('the connector subscription running', async () => (await figure(UP)) === 1 || undefined, 10_000);
  await publish(3);
  await waitFor('3 records handled', async () => (await figure(HANDLED)) === 3 || undefined, 10_000);
  expect(members).toBe(1);

  failCurrent(new Error('the consumer stopped on a failure'));
  // Down until new records arrive: on demand, the reconciler starts a member again (after its
  // backoff) only for a group with lag.
  await waitFor('the subscription reported down', async () => (await figure(UP)) === 0 || undefined, 10_000);
  expect(await figure(HANDLED)).toBe(3);

  await publish(2);
  await waitFor('a new member', async () => (members === 2 && (await figure(UP)) === 1) || undefined, 30_000);
  await waitFor('5 records handled in all', async () => (await figure(HANDLED)) === 5 || undefined, 10_000);
}, 60_000);

it('a library subscription\'s delivery-duration series go when it is unsubscribed (label sets stay bounded)', async () => {
  const name = 'svc.short-lived';
  const series = `ce_gateway_delivery_duration_seconds_count{subscription="${name}"}`;
  const sub = await gw.subscribe({ subscription: name, kinds: ['PriceLoadingCompleted'], startFrom: 'latest', handler: () => Promise.resolve() });
  await publish(1);
  await waitFor('its delivery timed', async () => (await figure(series)) === 1 || undefined, 10_000);
  await sub.unsubscribe();
  await waitFor('its series gone', async () => ((await gw.metrics.render()).body.includes(`subscription="${name}"`) ? undefined : true), 10_000);
  // The connector subscription that still exists keeps its series.
  expect(await figure(`ce_gateway_delivery_duration_seconds_count{subscription="${GROUP}"}`)).toBeGreaterThan(0);
});

it('a paused subscription keeps its figures (a pause, a replay or a 410 is not a deletion); a deleted one loses them', async () => {
  const sink = await startSink();
  try {
    const call = async (method: string, path: string, body?: unknown): Promise<Response> => fetch(`${url}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    expect((await call('POST', '/subscriptions', { name: 'paused-later', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url, handshake: false } })).status).toBe(201);
    const group = 'ce-gateway.sub.anonymous.paused-later';
    const handled = `ce_gateway_subscription_records_total{subscription="${group}",outcome="handled"}`;
    const timed = `ce_gateway_delivery_duration_seconds_count{subscription="${group}"}`;
    await publish(1);
    await waitFor('one delivery', async () => ((await figure(handled)) === 1 && (await figure(timed)) === 1) || undefined, 10_000);
    expect((await call('PATCH', '/subscriptions/paused-later', { state: 'paused' })).status).toBe(200);
    await waitFor('its member stopped', async () => ((await (await call('GET', '/subscriptions/paused-later/status')).json()) as { running?: boolean }).running === false || undefined, 10_000);
    expect(await figure(handled)).toBe(1);
    expect(await figure(timed)).toBe(1);
    expect((await call('DELETE', '/subscriptions/paused-later')).status).toBe(204);
    await waitFor('its series gone', async () => ((await gw.metrics.render()).body.includes(`subscription="${group}"`) ? undefined : true), 10_000);
  } finally {
    await sink.close();
  }
}, 40_000);

it('a failed member of a subscription then deleted or paused no longer holds /readyz at not ready; a deleted one\'s figures go, a paused one keeps its counters', async () => {
  const sink = await startSink();
  const call = async (method: string, path: string, body?: unknown): Promise<Response> => fetch(`${url}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const readiness = async (): Promise<{ status: number; subscriptions: unknown }> => {
    const r = await call('GET', '/readyz');
    return { status: r.status, subscriptions: ((await r.json()) as { checks?: { subscriptions?: unknown } }).checks?.subscriptions };
  };
  try {
    for (const [name, then] of [['fails-deleted', 'delete'], ['fails-paused', 'pause']] as const) {
      const group = `ce-gateway.sub.anonymous.${name}`;
      const handled = `ce_gateway_subscription_records_total{subscription="${group}",outcome="handled"}`;
      expect((await call('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url, handshake: false } })).status).toBe(201);
      await publish(1);
      await waitFor(`${name}: one delivery`, async () => ((await figure(handled)) === 1 && failers.has(group)) || undefined, 10_000);
      expect(await readiness()).toEqual({ status: 200, subscriptions: true });

      failCurrent(new Error('the consumer stopped on a failure'), group);
      await waitFor(`${name}: /readyz not ready`, async () => (await readiness()).status === 503 || undefined, 10_000);
      expect((await readiness()).subscriptions).toBe(false);

      if (then === 'delete') {
        expect((await call('DELETE', `/subscriptions/${name}`)).status).toBe(204);
        await waitFor(`${name}: ready again`, async () => (await readiness()).status === 200 || undefined, 10_000);
        await waitFor(`${name}: its series gone`, async () => ((await gw.metrics.render()).body.includes(`subscription="${group}"`) ? undefined : true), 10_000);
      } else {
        expect((await call('PATCH', `/subscriptions/${name}`, { state: 'paused' })).status).toBe(200);
        await waitFor(`${name}: ready again`, async () => (await readiness()).status === 200 || undefined, 10_000);
        expect(await figure(handled)).toBe(1);
        expect((await call('DELETE', `/subscriptions/${name}`)).status).toBe(204);
      }
    }
  } finally {
    await sink.close();
  }
}, 60_000);
