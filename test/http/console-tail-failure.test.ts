/**
 * The console's live tail when its broker read fails after the 200 (hD's new-user pass: the
 * answer just ended, and the page tailed again every second without a word): the stream now ends
 * with an `event: error` message carrying the problem object (code, detail, retriable), as a pull
 * stream does, and the slot comes back. On the router alone, on the in-memory transport, whose
 * read is made to fail the way a Kafka read does (CEG_BROKER_UNAVAILABLE, retriable).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Server } from 'node:http';
import { PRICE_LOADING_COMPLETED } from '../../src/catalog/generated/index.js';
import { GatewayError } from '../../src/core/errors.js';
import { PullSlots } from '../../src/http/api/subscriptions/pull-slots.js';
import { ANONYMOUS } from '../../src/http/auth/index.js';
import { silentLogger } from '../../src/observability/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { Read, Transport } from '../../src/transport/index.js';
import { codecFixture } from '../unit/bus/helpers.js';
import { listenConsoleRouter } from '../helpers/console-router.js';

const topic = PRICE_LOADING_COMPLETED.topic;
const slots = new PullSlots(1);
let transport: Transport;
let server: Server;
let base: string;
/** Fails the reads started since: their `done` rejects as a Kafka read whose broker went away. */
let failReads: (() => void) | undefined;

beforeAll(async () => {
  const f = await codecFixture();
  transport = createMemoryTransport();
  await transport.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
  const failing = new Proxy(transport, {
    get(target, prop) {
      if (prop === 'read') {
        return async (...args: Parameters<Transport['read']>): Promise<Read> => {
          const read = await target.read(...args);
          const failure = new Promise<never>((_, reject) => {
            failReads = () => reject(new GatewayError('CEG_BROKER_UNAVAILABLE', 'kafka: the broker went away mid-read', { retriable: true }));
          });
          failure.catch(() => undefined);
          return { stop: () => read.stop(), done: Promise.race([read.done, failure]).finally(() => read.stop()) };
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const view = { name: 'tailed', kinds: [PRICE_LOADING_COMPLETED.eventId] };
  ({ server, base } = await listenConsoleRouter({ catalog: f.catalog, transport: failing, codec: () => f.codec, subscriptions: () => ({ get: () => view }) as never, traceTimeoutMs: 5_000, log: silentLogger() }, slots));
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await transport?.close();
});

describe('a live tail whose read fails', () => {
  it('ends with an event: error message naming the failure (problem object), after the records it read, and gives its slot back', async () => {
    const res = await fetch(`${base}/console/api/tail/tailed`, { headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    await transport.produce(topic, [{ key: null, value: Buffer.from('not avro'), headers: [] }]);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"valid":false')) text += decoder.decode((await reader.read()).value, { stream: true });
    failReads!();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
    const messages = text.split('\n\n').filter((m) => m !== '');
    const last = messages.at(-1)!.split('\n');
    expect(last[0]).toBe('event: error');
    expect(JSON.parse(last[1]!.slice('data: '.length))).toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE', retriable: true, detail: 'kafka: the broker went away mid-read', status: 503, instance: '/console/api/tail/tailed' });
    expect(messages.some((m) => m.startsWith('data: ') && m.includes('"valid":false'))).toBe(true);
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(0), { timeout: 5_000, interval: 20 });
  }, 20_000);
});
