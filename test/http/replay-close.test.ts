/**
 * A gateway closing while a failed replay's `failed` state is still being written behind its
 * answer (issue 9, issue 15 "A shutdown that drains"), on the in-memory adapters: the state's
 * write to the definitions topic is held until close() is called. close() waits for it before the
 * definitions store stops, so the state is stored and read back (before: the store stopped under
 * it, the write failed — "could not store the failure" — and the pause held until its lease ran
 * out); a write that does not end within the shutdown budget is given up, said in the log, and
 * close() ends anyway.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { SubscriptionStore } from '../../src/bus/subscriptions/index.js';
import type { StoredSubscription } from '../../src/bus/subscriptions/index.js';
import { loadConfig } from '../../src/config/index.js';
import { GatewayError } from '../../src/core/errors.js';
import { createLogger, silentLogger } from '../../src/observability/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { OutboundRecord, PartitionOffset, Position, ProduceOptions, Transport } from '../../src/transport/index.js';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { caughtAsync } from '../helpers/errors.js';
import { listening } from '../helpers/gateway.js';
import { BATCH, post } from './helpers.js';

const DEFINITIONS = 'ce-gateway.subscriptions';
const dec = new TextDecoder();

interface Closing {
  readonly gw: Gateway;
  readonly transport: Transport;
  readonly logs: () => string;
  /** Resolves once the `failed` state's write is held. */
  readonly held: Promise<void>;
  /** Lets the held write go through. */
  readonly release: () => void;
}

const open: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const done of open.splice(0)) await done();
});

/**
 * A gateway on a memory transport whose commits of the subscription's group are refused (so a
 * replay fails, non-retriable) and whose first produce of a `failed` replay state to the
 * definitions topic is held until `release()`; a pull subscription `closing` with two events.
 */
async function closingGateway(env: Record<string, string> = {}): Promise<Closing> {
  const memory = createMemoryTransport();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const held = new Promise<void>((resolve) => (entered = resolve));
  let holding = false;
  const transport: Transport = new Proxy(memory, {
    get(target, prop, receiver) {
      if (prop === 'produce') {
        return async (topic: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> => {
          const failed = (): boolean => records.some((r) => r.value !== null && (JSON.parse(dec.decode(r.value)) as Partial<StoredSubscription>).replay?.phase === 'failed');
          if (topic === DEFINITIONS && !holding && failed()) {
            holding = true;
            entered();
            await gate;
          }
          return await target.produce(topic, records, opts);
        };
      }
      if (prop === 'commitOffsets') {
        return async (group: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> => {
          if (group.endsWith('.closing') && offsets.every((o) => o.offset === 0n)) throw new GatewayError('CEG_FORBIDDEN', 'Kafka refused the commit: GROUP_AUTHORIZATION_FAILED', { retriable: false });
          await target.commitOffsets(group, topic, offsets);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const lines: string[] = [];
  const out = new PassThrough();
  out.on('data', (c: Buffer) => lines.push(c.toString('utf8')));
  const gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'debug', ...env }), createLogger({ level: 'debug', destination: out }), { transport });
  open.push(async () => {
    release();
    await gw.close();
    await memory.close();
  });
  const url = await listening(gw);
  await gw.ready;
  const created = await fetch(`${url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'closing', kinds: ['PriceLoadingCompleted'], start: 'latest', delivery: { mode: 'pull' } }) });
  expect(created.status, await created.clone().text()).toBe(201);
  const events = [0, 1].map((i) => structuredPriceEvent({ subject: `c${i}` }, priceLoaded(`C${i}/USD`, 'H1', String(i).padStart(8, '0'))));
  expect((await post(url, events, BATCH)).status).toBe(202);
  return { gw, transport: memory, logs: () => lines.join(''), held, release };
}

/** A replay of `closing` that fails at the commit: answered at once, its `failed` state written behind (held). */
async function failedReplay(c: Closing): Promise<void> {
  const err = await caughtAsync(c.gw.replayCoordinator()!.replay('closing', { to: 'earliest' }, 'ops'));
  expect(err).toMatchObject({ code: 'CEG_FORBIDDEN' });
  await c.held;
  expect(c.gw.replayCoordinator()!.ending).toBe(1);
}

/** The subscription's replay state as an instance starting now reads it from the definitions topic. */
async function storedPhase(transport: Transport): Promise<string | undefined> {
  const store = new SubscriptionStore(transport, DEFINITIONS, silentLogger());
  await store.start();
  try {
    return store.get('ce-gateway.sub.anonymous.closing')?.replay?.phase;
  } finally {
    await store.stop();
  }
}

describe('closing while a failed replay\'s state is written behind its answer', () => {
  it('close() waits for the write before the definitions store stops: the `failed` state is stored', async () => {
    const c = await closingGateway();
    await failedReplay(c);
    const closed = c.gw.close();
    c.release();
    await closed;
    expect(c.gw.replayCoordinator()!.ending).toBe(0);
    expect(c.logs()).not.toContain('could not store the failure');
    expect(await storedPhase(c.transport)).toBe('failed');
  });

  it('a write that does not end within the shutdown budget is given up, said in the log; close() ends', async () => {
    const c = await closingGateway({ SHUTDOWN_TIMEOUT_MS: '2000' });
    await failedReplay(c);
    await c.gw.close();
    expect(c.logs()).toContain('closing: failed replays\' states still being written are given up; their pause ends with the lease');
    expect(c.logs()).toContain('"pending":1');
  });
});
