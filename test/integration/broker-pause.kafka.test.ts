/**
 * Fault test: the broker process is paused (SIGSTOP) during `POST /events`. No 202 may be given
 * while it is paused; after the deadline the answer is 503 with Retry-After; /readyz turns 503.
 * After SIGCONT the partner's retry of the same event is answered 202 and /readyz returns to 200.
 * A second copy from the timed-out attempt may exist (same id): counted and printed, not forbidden.
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

let gw: TestGateway;
let brokerPid: number;
// Topics of this run only: counting copies reads a whole partition from its start.
const catalog = catalogWithOwnTopics(uniqueName('pause'));
let topic: string;

function resume(): void {
  try {
    process.kill(brokerPid, 'SIGCONT');
  } catch {
    /* not paused or gone */
  }
}

beforeAll(async () => {
  const pidFile = stackEnv().kafkaPidFile;
  if (!pidFile) throw new Error('this fault test needs the project stack (STACK_KAFKA_PID_FILE): it pauses the broker process');
  brokerPid = Number(readFileSync(pidFile, 'utf8').trim());
  gw = await startGateway({ stack: true, env: { INGRESS_ACK_TIMEOUT_MS: '3000', READINESS_TIMEOUT_MS: '1000', CATALOG_DIR: catalog.dir } });
  topic = gw.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
});
afterAll(async () => {
  resume();
  await gw?.close();
  catalog.cleanup();
});

describe('broker paused during POST /events', () => {
  it('answers 503 with Retry-After while paused, /readyz 503; 202 on the retry after SIGCONT', async () => {
    const event = structuredPriceEvent({ id: randomUUID() }, priceLoaded('NZD/USD', 'H1'));
    const body = JSON.stringify(event);
    const post = (): Promise<Response> => fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body });

    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
    process.kill(brokerPid, 'SIGSTOP');
    try {
      const started = Date.now();
      const res = await post();
      const elapsed = Date.now() - started;
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await res.json()) as { code: string; notStored: { id: string }[] };
      expect(problem.code).toBe('CEG_DELIVERY_TIMEOUT');
      expect(problem.notStored.map((e) => e.id)).toEqual([event.id]);
      expect(elapsed).toBeGreaterThanOrEqual(2900); // no early answer: it waited for the broker until the deadline
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(503);
    } finally {
      resume();
    }
    const retry = await waitFor('202 on retry after SIGCONT', async () => {
      const r = await post();
      return r.status === 202 ? ((await r.json()) as { events: { id: string; partition: number }[] }) : undefined;
    }, 60_000, 500);
    expect(retry.events[0]!.id).toBe(event.id);
    await waitFor('/readyz 200 after SIGCONT', async () => (await fetch(`${gw.url}/readyz`)).status === 200, 30_000, 250);

    // Count copies of the event on its partition (the timed-out attempt may have landed too).
    const codec = gw.gateway.codec();
    let copies = 0;
    const partition = retry.events[0]!.partition;
    let highest = -1n;
    const end = (await gw.gateway.transport.endOffsets(topic)).find((p) => p.partition === partition)!.offset;
    const sub = await gw.gateway.transport.consume({ group: `pause-count-${randomUUID()}`, topics: [topic], startFrom: 'earliest' }, async (record) => {
      if (record.partition !== partition) return;
      const env = await codec.fromRecord(record);
      if (env.attributes.id === event.id) copies++;
      highest = record.offset;
    });
    await waitFor('the whole partition read', () => highest >= end - 1n, 30_000);
    await sub.stop();
    process.stdout.write(`broker-pause: ${copies} cop${copies === 1 ? 'y' : 'ies'} of event ${String(event.id)} stored (1 = the retry only; 2 = the timed-out attempt landed too)\n`);
    expect(copies).toBeGreaterThanOrEqual(1);
    expect(copies).toBeLessThanOrEqual(2);
  });
});
