/**
 * `POST /subscriptions/{name}/replay` when a write or the broker fails (issue 9), through one
 * gateway's HTTP routes on the in-memory adapters (its transport failing on demand):
 * - A finished replay whose audit entry cannot be written: `200` with the report and
 *   `auditFailure`, the events delivered again, the failure counted in
 *   `ce_gateway_replay_audit_write_failures_total`. Before: `503`, though the offsets had moved —
 *   the operator would replay again.
 * - The group's coordinator moves at the commit (`NOT_COORDINATOR`: the broker unavailable,
 *   retriable): `503` with `Retry-After`, and the same request sent again at once is `200` and
 *   delivers the events again (not `409` as a replay under way).
 * - A library replay (`gateway.replay`) whose entry cannot be written: the report with
 *   `auditFailure`, counted alike (before: the error, though the offsets had moved).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { OutboundRecord, PartitionOffset, Position, ProduceOptions, Transport } from '../../src/transport/index.js';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { waitFor } from '../helpers/wait.js';
import { BATCH, post } from './helpers.js';

let failAudit = false;
let moveCoordinator = false;

/** `t`, its produce to the replay audit topic refused while `failAudit`, its next commit of a replay's target refused once `moveCoordinator` is set. */
function failingOnDemand(t: Transport): Transport {
  return new Proxy(t, {
    get(target, prop, receiver) {
      if (prop === 'produce') {
        return async (topic: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> => {
          if (failAudit && topic === 'ce-gateway.subscriptions.replays') throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'kafka: connect ECONNREFUSED', { retriable: true });
          return await target.produce(topic, records, opts);
        };
      }
      if (prop === 'commitOffsets') {
        return async (group: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> => {
          if (moveCoordinator && offsets.every((o) => o.offset === 0n)) {
            moveCoordinator = false;
            throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'kafka: This is not the correct coordinator for this group (NOT_COORDINATOR)', { retriable: true });
          }
          await target.commitOffsets(group, topic, offsets);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

let gw: TestGateway;
let sink: TestSink;

beforeAll(async () => {
  sink = await startSink();
  gw = await startGateway({ stack: false, env: { LOG_LEVEL: 'silent', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }, overrides: { transport: failingOnDemand(createMemoryTransport()) } });
  const created = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'faulty', kinds: ['PriceLoadingCompleted'], start: 'earliest', delivery: { mode: 'push', url: sink.url } }) });
  expect(created.status).toBe(201);
  const events = Array.from({ length: 6 }, (_, i) => structuredPriceEvent({ subject: `f${i}` }, priceLoaded(`F${i}/USD`, 'H1', String(i).padStart(8, '0'))));
  expect((await post(gw.url, events, BATCH)).status).toBe(202);
  await waitFor('the events delivered', () => sink.deliveries().length === 6, 10_000);
});

afterAll(async () => {
  await gw?.close();
  await sink?.close();
});

async function replay(): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}/subscriptions/faulty/replay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ to: 'earliest' }) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const failures = async (): Promise<number | undefined> => {
  const line = (await gw.gateway.metrics.render()).body.split('\n').find((l) => l.startsWith('ce_gateway_replay_audit_write_failures_total '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
};

describe('a replay when a write or the broker fails', () => {
  it('its audit entry cannot be written: 200 with the report and auditFailure, the events delivered again, counted', async () => {
    expect(await failures()).toBe(0);
    const before = sink.deliveries().length;
    failAudit = true;
    const r = await replay().finally(() => (failAudit = false));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ outcome: 'done', events: 6, auditFailure: { code: 'CEG_BROKER_UNAVAILABLE', message: 'kafka: connect ECONNREFUSED' } });
    expect(await failures()).toBe(1);
    await waitFor('the replayed events', () => sink.deliveries().length >= before + 6, 10_000);
    // The audit log lacks it (that is what the answer said).
    const log = (await (await fetch(`${gw.url}/subscriptions/faulty/replays`)).json()) as unknown[];
    expect(log).toEqual([]);
  });

  it('the group coordinator moves at the commit: 503 with Retry-After; the same request again at once: 200, delivered again', async () => {
    const before = sink.deliveries().length;
    moveCoordinator = true;
    const failed = await replay();
    expect(failed.status, JSON.stringify(failed.body)).toBe(503);
    expect(failed.body).toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE' });
    expect(failed.headers.get('retry-after')).not.toBeNull();
    const again = await replay();
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ outcome: 'done', events: 6 });
    expect(again.body).not.toHaveProperty('auditFailure');
    await waitFor('the replayed events', () => sink.deliveries().length >= before + 6, 10_000);
    await waitFor('both in the audit log', async () => ((await (await fetch(`${gw.url}/subscriptions/faulty/replays`)).json()) as unknown[]).length === 2, 5000);
    const log = (await (await fetch(`${gw.url}/subscriptions/faulty/replays`)).json()) as { outcome: string }[];
    expect(log.map((e) => e.outcome)).toEqual(['failed', 'done']);
  });

  it('a library replay whose entry cannot be written: the report with auditFailure, counted alike', async () => {
    const seen: string[] = [];
    const sub = await gw.gateway.subscribe({ subscription: 'lib-faulty', kinds: ['PriceLoadingCompleted'], startFrom: 'latest', handler: async (e) => void seen.push(e.attributes.id) });
    const events = Array.from({ length: 4 }, (_, i) => structuredPriceEvent({ subject: `l${i}` }, priceLoaded(`L${i}/USD`, 'H1', String(i).padStart(8, '0'))));
    await waitFor('the library member assigned', () => sub.assignments().length > 0, 10_000);
    expect((await post(gw.url, events, BATCH)).status).toBe(202);
    await waitFor('the library member handled them', () => seen.length === 4, 10_000);
    const counted = (await failures())!;
    failAudit = true;
    const report = await gw.gateway.replay('lib-faulty', 'earliest').finally(() => (failAudit = false));
    expect(report).toMatchObject({ outcome: 'done', by: 'library', auditFailure: { code: 'CEG_BROKER_UNAVAILABLE' } });
    expect(await failures()).toBe(counted + 1);
    await waitFor('handled again', () => seen.length >= 8, 10_000);
    await sub.unsubscribe();
  });
});
