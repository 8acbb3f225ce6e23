/**
 * T4 and T9 with real processes: subscribers are `ce-gateway subscribe` child processes, so the
 * durable name and the group membership are exercised exactly as separate services would.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/app/index.js';
import { priceLoaded } from '../fixtures/events.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { kafkaHarness } from './harness.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

interface Subscriber {
  readonly ids: string[];
  readonly exited: Promise<number | null>;
  readonly child: ChildProcessWithoutNullStreams;
}

const children: ChildProcessWithoutNullStreams[] = [];
const h = kafkaHarness();
let gw: Gateway;
beforeAll(async () => {
  gw = await h.member();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await h.close();
});

/** Starts `ce-gateway subscribe` and resolves once it has joined its group. Keeps only events of `prefix`. */
async function subscriber(name: string, prefix: string, extra: string[] = []): Promise<Subscriber> {
  const s = stackEnv();
  const child = spawn(process.execPath, [...CLI_ENTRY, 'subscribe', '--subscription', name, '--kind', 'PriceLoadingCompleted', ...extra], {
    env: { ...process.env, KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, LOG_LEVEL: 'warn' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  const ids: string[] = [];
  createInterface({ input: child.stdout }).on('line', (l) => {
    const e = JSON.parse(l) as { attributes: { id: string }; data: { instrument: string } };
    if (e.data.instrument.startsWith(prefix)) ids.push(e.attributes.id);
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await waitFor(`subscriber ${name} joined`, () => {
    if (child.exitCode !== null) throw new Error(`subscriber exited: ${stderr}`);
    return stderr.includes(`subscribed ${name}`);
  }, 60_000);
  return { ids, exited, child };
}

async function publish(instrument: string): Promise<string> {
  const r = gw.publisher().publish('PriceLoadingCompleted', priceLoaded(instrument, 'H1'))!;
  await r.delivered;
  return r.id;
}

describe('T4 and T9 across processes', () => {
  it('T4 a subscriber process is stopped, events are published, a new process under the same name receives exactly those events', async () => {
    const name = uniqueName('t4p');
    const prefix = uniqueName('T4P');
    const first = await subscriber(name, prefix, ['--max-events', '1']);
    const e1 = await publish(`${prefix}/a`);
    expect(await first.exited).toBe(0);
    const e2 = await publish(`${prefix}/b`);
    const e3 = await publish(`${prefix}/a`);
    const second = await subscriber(name, prefix, ['--max-events', '2']);
    expect(await second.exited).toBe(0);
    expect(first.ids).toEqual([e1]);
    expect(new Set(second.ids)).toEqual(new Set([e2, e3]));
    expect(second.ids).toHaveLength(2);
  });

  it('T9 two processes, one name, six partitions: both handle some, each event is handled once, total distinct = total published', async () => {
    const name = uniqueName('t9p');
    const prefix = uniqueName('T9P');
    const a = await subscriber(name, prefix);
    const b = await subscriber(name, prefix);
    const sent = await Promise.all(Array.from({ length: 30 }, (_, i) => publish(`${prefix}/${i}`)));
    await waitFor('all 30 events handled by the pair', () => a.ids.length + b.ids.length >= 30, 60_000);
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    const all = [...a.ids, ...b.ids];
    expect(all).toHaveLength(30);
    expect(new Set(all)).toEqual(new Set(sent));
    expect(a.ids.length).toBeGreaterThan(0);
    expect(b.ids.length).toBeGreaterThan(0);
  });
});
