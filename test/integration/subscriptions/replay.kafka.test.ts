/**
 * Issue 9 "Done when" for replay, on the real stack: two gateway processes (`ce-gateway serve`
 * children) on a catalog and a definitions topic of this run's own, a real HTTP sink on 127.0.0.1.
 * - A replay to a time delivers exactly the events written at or after it, once each (by event
 *   id), and as many as its dry run counted; the same for earliest, explicit offsets and latest
 *   (a forward move over a paused subscription's backlog: skipped, nothing delivered); the audit
 *   log, read on the other gateway, lists each replay with `to` verbatim.
 * - A replay while both gateways deliver under load: every event is delivered, nothing before the
 *   reset position is delivered again, and the records between it and the old position are.
 * - `ce-gateway replay` (not a terminal): a dry run prints the answer as a JSON line; a real
 *   replay prints JSON-lines progress until the backlog drained.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { priceLoaded } from '../../fixtures/events.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import type { Responder, TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ROOT, api, startGatewayPair } from './gateway-pair.js';
import type { GatewayPair } from './gateway-pair.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';
import { rawKafka } from '../consumer/members.js';

const run = promisify(execFile);

interface Stored {
  readonly id: string;
  readonly partition: number;
  readonly offset: number;
}
interface Report {
  at: string;
  by: string;
  to: unknown;
  dryRun: boolean;
  partitions: Record<string, { from: string; to: string; events: number; skipped: number }>;
  events: number;
  skipped: number;
}

let pair: GatewayPair;
let a: GatewayProcess;
let b: GatewayProcess;
let env: Readonly<Record<string, string>>;
let priceType = '';
/** The topic of PriceLoadingCompleted in the pair's own catalog, and an admin client for its groups' commits. */
let priceTopic = '';
let admin: ReturnType<ReturnType<typeof rawKafka>['admin']> | undefined;
const sinks: TestSink[] = [];
/** Every event this file wrote, with where it landed. */
const written: Stored[] = [];

/** Posts `n` events over 12 keys (so every partition gets some); resolves with their positions. */
async function post(gw: GatewayProcess, n: number, tag: string): Promise<Stored[]> {
  const events = Array.from({ length: n }, (_, i) => ({
    specversion: '1.0',
    id: randomUUID(),
    source: 'urn:partner:it-replay',
    type: priceType,
    time: '2026-12-01T10:00:00.000Z',
    subject: tag,
    data: priceLoaded(`R${i % 12}/USD`, 'H1', String(i).padStart(8, '0')),
  }));
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
  const body = (await res.json()) as { events: { id: string; partition: number; offset: string }[] };
  expect(res.status, JSON.stringify(body)).toBe(202);
  const out = body.events.map((e) => ({ id: e.id, partition: e.partition, offset: Number(e.offset) }));
  written.push(...out);
  return out;
}

const idsOf = (s: TestSink, from = 0): string[] => s.deliveries().slice(from).map((r) => String(r.headers['ce-id']));
const sorted = (xs: readonly string[]): string[] => [...xs].sort();
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Events written at positions in [to, from) of the report's partitions. */
function between(report: Report): string[] {
  return written.filter((w) => {
    const p = report.partitions[String(w.partition)];
    return p !== undefined && w.offset >= Number(p.to) && w.offset < Number(p.from);
  }).map((w) => w.id);
}

/** Waits for `n` more deliveries after `from`, then a while longer (a duplicate would show); the new ids. */
async function delivered(s: TestSink, from: number, n: number): Promise<string[]> {
  await waitFor(`${n} deliveries`, () => s.deliveries().length >= from + n, 30_000, 100);
  await pause(1500);
  return idsOf(s, from);
}

/**
 * Waits until `group` has committed past every one of `events` (the members commit what they
 * delivered every 250 ms): what a replay or its dry run counts from. A fixed second was slept instead.
 */
async function committedPast(group: string, events: readonly Stored[]): Promise<void> {
  const due = new Map<number, number>();
  for (const e of events) due.set(e.partition, Math.max(due.get(e.partition) ?? 0, e.offset + 1));
  await waitFor(`${group} to commit what it delivered`, async () => {
    const [committed] = await admin!.fetchOffsets({ groupId: group, topics: [priceTopic] });
    return [...due].every(([p, next]) => Number(committed?.partitions.find((c) => c.partition === p)?.offset ?? -1) >= next);
  }, 30_000, 100);
}

/** Both gateways hold a share of the group's partitions. */
async function onBoth(group: string): Promise<void> {
  const parts = async (gw: GatewayProcess): Promise<number> => {
    const line = (await (await fetch(`${gw.url}/metrics`)).text()).split('\n').find((l) => l.startsWith('ce_gateway_subscription_partitions{') && l.includes(`subscription="${group}"`));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  await waitFor(`${group} on both gateways`, async () => (await parts(a)) > 0 && (await parts(b)) > 0, 30_000, 300);
}

async function create(body: Record<string, unknown>, responder?: Responder): Promise<{ name: string; group: string; sink: TestSink }> {
  const sink = await startSink(responder);
  sinks.push(sink);
  const name = uniqueName('rp').replace(/\./g, '-');
  const r = await api(a, 'POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], concurrency: 6, delivery: { mode: 'push', url: sink.url }, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const group = r.body.group as string;
  await onBoth(group);
  return { name, group, sink };
}

beforeAll(async () => {
  pair = await startGatewayPair('it-replay');
  ({ a, b, env } = pair);
  priceType = pair.eventIds.get('PriceLoadingCompleted')!;
  priceTopic = pair.cat.priceTopic;
  admin = rawKafka().admin();
  await admin.connect();
}, 200_000);

afterAll(async () => {
  await admin?.disconnect();
  await pair?.stop();
  await Promise.allSettled(sinks.map((s) => s.close()));
});

describe('replay on two gateways', () => {
  it('to a time, earliest, explicit offsets and latest: exactly the events from there, once each, as many as the dry run said; the audit log lists each', async () => {
    const { name, group, sink } = await create({ start: 'earliest' });
    const first = await post(a, 36, 'first');
    await waitFor('the first batch', () => sink.deliveries().length >= 36, 30_000, 100);
    await pause(50);
    const middle = new Date().toISOString();
    await pause(50);
    const second = await post(b, 36, 'second');
    await waitFor('the second batch', () => sink.deliveries().length >= 72, 30_000, 100);
    await committedPast(group, written);
    expect(sorted(idsOf(sink))).toEqual(sorted([...first, ...second].map((e) => e.id)));

    // To a time: the dry run on one gateway, the replay on the other.
    const dry = await api<Report>(b, 'POST', `/subscriptions/${name}/replay`, { to: middle, dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body).toMatchObject({ to: middle, dryRun: true, events: 36, skipped: 0, by: 'anonymous' });
    let before = sink.deliveries().length;
    const real = await api<Report>(a, 'POST', `/subscriptions/${name}/replay`, { to: middle });
    expect(real.status, JSON.stringify(real.body)).toBe(200);
    expect(real.body.partitions).toEqual(dry.body.partitions);
    expect(real.body.events).toBe(36);
    expect(sorted(await delivered(sink, before, 36))).toEqual(sorted(second.map((e) => e.id)));
    expect(sorted(between(real.body))).toEqual(sorted(second.map((e) => e.id)));

    // Earliest.
    await committedPast(group, written);
    const dryEarliest = (await api<Report>(a, 'POST', `/subscriptions/${name}/replay`, { to: 'earliest', dryRun: true })).body;
    expect(dryEarliest.events).toBe(72);
    before = sink.deliveries().length;
    const earliest = (await api<Report>(b, 'POST', `/subscriptions/${name}/replay`, { to: 'earliest' })).body;
    expect(earliest.partitions).toEqual(dryEarliest.partitions);
    expect(sorted(await delivered(sink, before, 72))).toEqual(sorted(written.map((w) => w.id)));

    // Explicit offsets on two partitions.
    await committedPast(group, written);
    const [[k1, p1], [k2, p2]] = Object.entries(earliest.partitions).filter(([, p]) => Number(p.from) >= 3) as [[string, Report['partitions'][string]], [string, Report['partitions'][string]]];
    const to = { [k1]: Number(p1.from) - 3, [k2]: String(Number(p2.from) - 1) };
    const dryOffsets = (await api<Report>(b, 'POST', `/subscriptions/${name}/replay`, { to, dryRun: true })).body;
    expect(dryOffsets.events).toBe(4);
    before = sink.deliveries().length;
    const offsets = (await api<Report>(a, 'POST', `/subscriptions/${name}/replay`, { to })).body;
    expect(offsets.partitions).toEqual(dryOffsets.partitions);
    expect(sorted(await delivered(sink, before, 4))).toEqual(sorted(between(offsets)));

    // Latest over a paused subscription's backlog: skipped, never delivered.
    expect((await api(b, 'PATCH', `/subscriptions/${name}`, { state: 'paused' })).status).toBe(200);
    await pause(2000);
    await post(a, 12, 'skipped');
    const dryLatest = (await api<Report>(a, 'POST', `/subscriptions/${name}/replay`, { to: 'latest', dryRun: true })).body;
    expect(dryLatest).toMatchObject({ events: 0, skipped: 12 });
    const latest = (await api<Report>(b, 'POST', `/subscriptions/${name}/replay`, { to: 'latest' })).body;
    expect(latest.partitions).toEqual(dryLatest.partitions);
    before = sink.deliveries().length;
    expect((await api(a, 'PATCH', `/subscriptions/${name}`, { state: 'active' })).status).toBe(200);
    await onBoth(`ce-gateway.sub.anonymous.${name}`);
    await pause(1500);
    expect(sink.deliveries().length).toBe(before);

    // The audit log, read on either gateway.
    const log = await api<Report[]>(b, 'GET', `/subscriptions/${name}/replays`);
    expect(log.status).toBe(200);
    expect(log.body.map((e) => [e.dryRun, e.to, e.events])).toEqual([
      [true, middle, 36],
      [false, middle, 36],
      [true, 'earliest', 72],
      [false, 'earliest', 72],
      [true, to, 4],
      [false, to, 4],
      [true, 'latest', 0],
      [false, 'latest', 0],
    ]);
    expect((await api<Report[]>(a, 'GET', `/subscriptions/${name}/replays`)).body).toEqual(log.body);
    const view = await api<{ replay: { phase: string; instance: string } }>(a, 'GET', `/subscriptions/${name}`);
    expect(view.body.replay).toMatchObject({ phase: 'done', instance: 'gw-b' });
  });

  it('under load on both gateways: nothing lost, nothing before the reset position again, everything after it again', async () => {
    const { name, sink } = await create({ start: 'latest' });
    const mine: Stored[] = [];
    let cut = '';
    let atCut = 0;
    let loaded = false;
    const load = (async () => {
      for (let i = 0; i < 60; i++) {
        mine.push(...(await post(i % 2 === 0 ? a : b, 12, `load-${i}`)));
        if (i === 12) {
          atCut = mine.length;
          cut = new Date().toISOString();
        }
        await pause(100);
      }
      loaded = true;
    })();
    // Replay once the subscription has delivered well past the cut, while the load goes on.
    await waitFor('deliveries past the cut', () => cut !== '' && sink.deliveries().length >= atCut + 48, 30_000, 50);
    const r = await api<Report>(b, 'POST', `/subscriptions/${name}/replay`, { to: cut });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const report = r.body;
    expect(loaded, 'the replay ended while the load went on').toBe(false);
    await load;
    expect(report.events, JSON.stringify(report)).toBeGreaterThan(0);
    const mineIds = new Set(mine.map((m) => m.id));
    await waitFor('every event delivered', () => new Set(idsOf(sink).filter((id) => mineIds.has(id))).size === mine.length, 60_000, 200);
    await pause(1500);
    const count = new Map<string, number>();
    for (const id of idsOf(sink)) count.set(id, (count.get(id) ?? 0) + 1);
    const again = new Set(between(report));
    for (const m of mine) {
      const p = report.partitions[String(m.partition)]!;
      if (m.offset < Number(p.to)) expect(count.get(m.id), `${m.id} before the reset position`).toBe(1);
      else if (again.has(m.id)) expect(count.get(m.id), `${m.id} between the reset and the old position`).toBeGreaterThanOrEqual(2);
      else expect(count.get(m.id), `${m.id} after the old position`).toBeGreaterThanOrEqual(1);
    }
    expect(again.size).toBe(report.events);
  });

  it('ce-gateway replay: a dry run prints the answer as a JSON line; a replay prints JSON-lines progress until drained', async () => {
    // A slow sink (150 ms per delivery, one partition at a time per gateway), so the replayed backlog takes seconds to drain.
    // Held shut while the CLI starts (below), so the backlog cannot drain before the CLI first looks.
    let sinkGate: Promise<void> = Promise.resolve();
    const slow: Responder = async (req, nth) => (req.method === 'OPTIONS' ? acceptAll(req, nth) : (await sinkGate, await pause(150), { status: 200 }));
    const { name, group, sink } = await create({ start: 'latest', concurrency: 1 }, slow);
    await pause(50);
    const since = new Date().toISOString();
    await pause(50);
    const mine = await post(b, 24, 'cli');
    // Every one of them, not 24 deliveries: a rebalance while members start may deliver one twice (at-least-once).
    const mineIds = new Set(mine.map((m) => m.id));
    await waitFor('the CLI test\'s events delivered', () => new Set(idsOf(sink).filter((id) => mineIds.has(id))).size === 24, 60_000, 200);
    await committedPast(group, mine);
    const cli = async (...args: string[]): Promise<Record<string, unknown>[]> => {
      const { stdout } = await run(process.execPath, [...CLI_ENTRY, 'replay', name, '--gateway', a.url, ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 });
      return stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    };
    const dry = await cli('--to-time', since, '--dry-run');
    expect(dry).toHaveLength(1);
    expect(dry[0]).toMatchObject({ type: 'replay', dryRun: true, to: since, events: 24 });

    const before = sink.deliveries().length;
    // The replayed events wait at the sink until the CLI printed its answer: on a loaded machine a
    // CLI child slow to poll found the backlog drained already and printed no progress line.
    let openSink!: () => void;
    sinkGate = new Promise<void>((resolve) => (openSink = resolve));
    const child = spawn(process.execPath, [...CLI_ENTRY, 'replay', name, '--gateway', a.url, '--to-time', since], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'], timeout: 60_000 });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) openSink();
    });
    const [code] = (await once(child, 'close')) as [number | null];
    openSink();
    expect(code, out).toBe(0);
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ type: 'replay', dryRun: false, to: since, events: 24 });
    expect(lines.at(-1)).toEqual({ type: 'done', drained: 24, events: 24 });
    expect(lines.length, 'at least one progress line between the answer and the end').toBeGreaterThanOrEqual(3);
    for (const l of lines.slice(1, -1)) {
      expect(l.type).toBe('progress');
      expect(l.events).toBe(24);
      expect(l.drained as number).toBeLessThan(24);
    }
    // Every replayed event again, at least once: a member that restarts or rebalances around the
    // replay may deliver the one in flight twice (at-least-once; concurrency 1 on two gateways →
    // at most 2 in flight).
    const replayed = idsOf(sink, before);
    expect(sorted([...new Set(replayed)])).toEqual(sorted(mine.map((w) => w.id)));
    expect(replayed.length - 24, 'duplicates ≤ the deliveries in flight').toBeLessThanOrEqual(2);

    // On a terminal (a pseudo-terminal from util-linux `script`): a progress bar, not JSON lines.
    await committedPast(group, mine);
    const shellQuote = (x: string): string => `'${x.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, ...CLI_ENTRY, 'replay', name, '--gateway', a.url, '--to-time', since].map(shellQuote).join(' ');
    const tty = await run('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 });
    expect(tty.stdout).toContain(`replayed ${name}: 24 events again`);
    expect(tty.stdout).toContain('24/24 events | 100%');
    expect(tty.stdout).not.toContain('"type"');
  });
});
