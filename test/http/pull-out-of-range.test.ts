/**
 * A pull subscription whose position is past the end of its partitions: its topic was deleted and
 * created again by an operator, so offsets started over (2026-12-06). Before, `available()` read
 * only positions below the end: every pull answered [] until the new topic grew past the old
 * position, and the events written meanwhile waited (or, with records deleted later, were lost).
 * Now such a position goes on from the log start, as a push subscription does
 * (src/transport/out-of-range.ts), and the cursor handed out is in the log again. On the in-memory
 * adapters (the rule is the bus's; both Kafka adapters read the positions it hands them).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PRICE_TOPIC, structuredPriceEvent, priceLoaded } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, post } from './helpers.js';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway({ stack: false });
  await gw.gateway.subscriptionsLoaded();
});
afterAll(async () => {
  await gw?.close();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; headers: Headers; body: unknown }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

it('a committed position past the end of the topic (created again) hands out the events of the new topic from its log start', async () => {
  const name = `pull-oor-${randomUUID().slice(0, 8)}`;
  expect((await call('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
  const group = `ce-gateway.sub.anonymous.${name}`;
  const events = Array.from({ length: 3 }, (_, i) => structuredPriceEvent({}, priceLoaded(`R${i}/USD`, 'H1', String(i).padStart(8, '0'))));
  expect((await post(gw.url, events, BATCH)).status).toBe(202);
  // What the group holds once its topic was deleted and created again: its old, higher positions.
  const ends = await gw.gateway.transport.endOffsets(PRICE_TOPIC);
  await gw.gateway.transport.commitOffsets(group, PRICE_TOPIC, ends.map((e) => ({ partition: e.partition, offset: e.offset + 1_000n })));
  const r = await call('GET', `/subscriptions/${name}/events?max=10&wait=1`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect((r.body as { id: string }[]).map((e) => e.id).sort()).toEqual(events.map((e) => e.id as string).sort());
  // Its cursor is in the log again: committed, nothing comes back.
  expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: r.headers.get('ce-gateway-cursor') })).status).toBe(204);
  const after = await call('GET', `/subscriptions/${name}/events?max=10&wait=0.3`);
  expect(after.body).toEqual([]);
  const committed = await gw.gateway.transport.committedOffsets(group, PRICE_TOPIC);
  expect(committed.map((c) => c.offset)).toEqual(ends.map((e) => e.offset));
});
