/**
 * Replay (issue 9) on the in-memory adapters, through the HTTP routes of one gateway and through
 * the library's `replay` (a subscription of this process): dry run and real replay agree, the
 * redelivered events are exactly those at or after the reset position, the audit log lists each
 * replay with `to` verbatim, and bad requests are problem+json naming the field.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConnectors, startConnectors } from '../../src/connectors/index.js';
import { tempDir } from '../unit/connectors/helpers.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/observability/index.js';
import { ReplayLog, SubscriptionStore, replayAuditTopicOf } from '../../src/bus/subscriptions/index.js';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { waitFor } from '../helpers/wait.js';
import { BATCH, post } from './helpers.js';
import { listening } from '../helpers/gateway.js';

let gw: Gateway;
let url: string;
let sink: TestSink;

interface Report {
  at: string;
  by: string;
  to: unknown;
  dryRun: boolean;
  outcome: string;
  partitions: Record<string, { from: string; to: string; events: number; skipped: number }>;
  events: number;
  skipped: number;
}

async function call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; type: string; body: unknown }> {
  const res = await fetch(`${url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': contentType }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: text === '' ? undefined : JSON.parse(text) };
}

/** 12 events over several keys (so over several partitions); their ids in order. */
async function batch(tag: string): Promise<string[]> {
  const events = Array.from({ length: 12 }, (_, i) => structuredPriceEvent({ subject: tag }, priceLoaded(`K${i}/USD`, 'H1', String(i).padStart(8, '0'))));
  expect((await post(url, events, BATCH)).status).toBe(202);
  return events.map((e) => String(e.id));
}

const ids = (from = 0): string[] => sink.deliveries().slice(from).map((r) => String(r.headers['ce-id']));

beforeAll(async () => {
  sink = await startSink();
  gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }), silentLogger());
  url = await listening(gw);
});

afterAll(async () => {
  await gw?.close();
  await sink?.close();
});

describe('POST /subscriptions/{name}/replay', () => {
  let first: string[];
  let second: string[];
  let middle: string;
  /** `middle` as RFC 3339 §5.6 also writes it: lower-case t/z, 10 fraction digits (truncated to ms). */
  let spelled: string;

  beforeAll(async () => {
    const created = await call('POST', '/subscriptions', { name: 'replayed', kinds: ['PriceLoadingCompleted'], start: 'earliest', delivery: { mode: 'push', url: sink.url } });
    expect(created.status).toBe(201);
    first = await batch('first');
    await waitFor('the first batch delivered', () => sink.deliveries().length === 12, 5000);
    await sleep(5);
    middle = new Date().toISOString();
    spelled = middle.replace('T', 't').replace('Z', '0000000z');
    await sleep(5);
    second = await batch('second');
    await waitFor('the second batch delivered', () => sink.deliveries().length === 24, 5000);
  });

  it('to a time: the dry run counts what the replay then delivers again, exactly the events written at or after it', async () => {
    const dry = await call('POST', '/subscriptions/replayed/replay', { to: spelled, dryRun: true });
    expect(dry.status).toBe(200);
    const plan = dry.body as Report;
    expect(plan).toMatchObject({ by: 'anonymous', to: spelled, dryRun: true, events: 12, skipped: 0 });
    const before = sink.deliveries().length;
    expect(before).toBe(24); // the dry run moved nothing

    const real = await call('POST', '/subscriptions/replayed/replay', { to: middle });
    expect(real.status).toBe(200);
    const done = real.body as Report;
    expect(done).toMatchObject({ dryRun: false, events: 12 });
    expect(done.partitions).toEqual(plan.partitions);
    await waitFor('the replayed events', () => sink.deliveries().length >= before + 12, 5000);
    await sleep(200);
    expect(ids(before).sort()).toEqual([...second].sort());
  });

  it('to earliest, to explicit offsets and to latest', async () => {
    let before = sink.deliveries().length;
    const earliest = (await call('POST', '/subscriptions/replayed/replay', { to: 'earliest' })).body as Report;
    expect(earliest.events).toBe(24);
    await waitFor('everything again', () => sink.deliveries().length >= before + 24, 5000);
    await sleep(200);
    expect(ids(before).sort()).toEqual([...first, ...second].sort());

    const [key, part] = Object.entries(earliest.partitions).find(([, p]) => Number(p.from) >= 2)!;
    before = sink.deliveries().length;
    const to = { [key]: Number(part.from) - 2 };
    const offsets = (await call('POST', '/subscriptions/replayed/replay', { to })).body as Report;
    expect(offsets).toMatchObject({ to, events: 2, partitions: { [key]: { from: part.from, to: String(Number(part.from) - 2), events: 2, skipped: 0 } } });
    expect(Object.keys(offsets.partitions)).toEqual([key]);
    await waitFor('two again', () => sink.deliveries().length >= before + 2, 5000);
    await sleep(200);
    expect(ids(before)).toHaveLength(2);

    before = sink.deliveries().length;
    const latest = (await call('POST', '/subscriptions/replayed/replay', { to: 'latest' })).body as Report;
    expect(latest).toMatchObject({ events: 0, skipped: 0 });
    await sleep(300);
    expect(sink.deliveries().length).toBe(before);
  });

  it('moving forward reports skipped records, not negative events', async () => {
    const back = (await call('POST', '/subscriptions/replayed/replay', { to: 'earliest', dryRun: true })).body as Report;
    expect(back.events).toBe(24);
    const [key, part] = Object.entries(back.partitions).find(([, p]) => Number(p.from) >= 1)!;
    // A dry run from the end to the start of one partition, then the other way round.
    const forward = (await call('POST', '/subscriptions/replayed/replay', { to: { [key]: '0' }, dryRun: true })).body as Report;
    expect(forward.partitions[key]).toEqual({ from: part.from, to: '0', events: Number(part.from), skipped: 0 });
  });

  it('lists every replay in the audit log, oldest first, with `to` verbatim', async () => {
    const log = await call('GET', '/subscriptions/replayed/replays');
    expect(log.status).toBe(200);
    const entries = log.body as Report[];
    expect(entries.map((e) => [e.dryRun, typeof e.to === 'object' ? 'offsets' : e.to])).toEqual([
      [true, spelled],
      [false, middle],
      [false, 'earliest'],
      [false, 'offsets'],
      [false, 'latest'],
      [true, 'earliest'],
      [true, 'offsets'],
    ]);
    expect(typeof entries[0]!.to).toBe('string');
    for (const e of entries) expect(Object.keys(e).sort()).toEqual(['at', 'by', 'dryRun', 'events', 'outcome', 'partitions', 'skipped', 'to']);
    expect(entries.every((e) => e.outcome === 'done')).toBe(true);
  });

  it('refuses bad requests with problem+json naming the field', async () => {
    const cases: [unknown, string][] = [
      [{}, 'to'],
      [{ to: 'yesterday' }, 'to'],
      [{ to: '2026-12-01T10:00:00' }, 'to'],
      [{ to: '2026-02-30T00:00:00Z' }, 'to'],
      [{ to: '2026-12-31T23:59:60Z' }, 'to'],
      [{ to: '2026-12-01T24:00:00Z' }, 'to'],
      [{ to: '2026-12-01T10:00:00+24:00' }, 'to'],
      [{ to: '2026-12-01 10:00:00Z' }, 'to'],
      [{ to: { 99: 1 } }, 'to.99'],
      [{ to: { 0: -1 } }, 'to.0'],
      [{ to: { 0: 1e12 } }, 'to.0'],
      [{ to: 'latest', dryRun: 'yes' }, 'dryRun'],
      [{ to: 'latest', dry: true }, 'dry'],
      [[], 'body'],
    ];
    for (const [body, field] of cases) {
      const r = await call('POST', '/subscriptions/replayed/replay', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.type).toContain('application/problem+json');
      expect(r.body).toMatchObject({ code: 'CEG_INVALID_REPLAY', violations: [{ field }] });
    }
    expect((await call('POST', '/subscriptions/nothing/replay', { to: 'latest' })).status).toBe(404);
    expect((await call('GET', '/subscriptions/nothing/replays')).status).toBe(404);
    expect((await call('POST', '/subscriptions/replayed/replay', { to: 'latest' }, 'text/plain')).status).toBe(415);
    const wrong = await fetch(`${url}/subscriptions/replayed/replay`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
  });

  it('shows the last replay on the subscription, delivery not paused', async () => {
    const view = (await call('GET', '/subscriptions/replayed')).body as { replay?: { phase: string } };
    expect(view.replay?.phase).toBe('done');
  });
});

describe('a coordinating instance that dies mid-way', () => {
  it('leaves a pause that holds delivery only until its lease runs out; the subscription then shows it expired', async () => {
    // What a coordinator writes before it waits for the group to empty, written here by "another instance" that then dies.
    const other = new SubscriptionStore(gw.transport, 'ce-gateway.subscriptions', silentLogger());
    await other.start();
    const group = 'ce-gateway.sub.anonymous.replayed';
    const current = other.get(group)!;
    const leaseMs = 1500;
    await other.put({ ...current, replay: { id: 'dead', phase: 'pausing', requestedAt: new Date().toISOString(), leaseUntil: new Date(Date.now() + leaseMs).toISOString(), instance: 'gone-instance' } });
    await other.stop();
    await sleep(200); // this gateway reads the pause and stops its member
    const before = sink.deliveries().length;
    const held = await batch('held');
    await sleep(600);
    expect(sink.deliveries().length).toBe(before); // paused
    const view = (await call('GET', '/subscriptions/replayed')).body as { replay: { phase: string } };
    expect(view.replay.phase).toBe('pausing');
    await waitFor('delivery after the lease', () => sink.deliveries().length >= before + 12, 10_000);
    expect(ids(before).sort()).toEqual([...held].sort());
    expect(((await call('GET', '/subscriptions/replayed')).body as { replay: { phase: string } }).replay.phase).toBe('expired');
    // A new replay is taken at once.
    expect((await call('POST', '/subscriptions/replayed/replay', { to: 'latest' })).status).toBe(200);
  });
});

describe('bus.replay of a subscription this process runs', () => {
  it('stops the member, moves the offsets, and the same handle receives the events again', async () => {
    const seen: string[] = [];
    const sub = await gw.subscribe({ subscription: 'lib-replayed', kinds: ['PriceLoadingCompleted'], startFrom: 'latest', handler: async (e) => void seen.push(e.attributes.id) });
    await sleep(20);
    const t0 = new Date();
    await sleep(5);
    const mine = await batch('lib');
    await waitFor('the library member handled the batch', () => seen.length === 12, 5000);
    const dry = await gw.replay('lib-replayed', t0, { dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, events: 12, to: t0.toISOString(), by: 'library' });
    const real = await gw.replay('lib-replayed', t0);
    expect(real.partitions).toEqual(dry.partitions);
    await waitFor('the batch again', () => seen.length === 24, 5000);
    expect(seen.slice(12).sort()).toEqual([...mine].sort());
    await waitFor('24 handled across the restart', () => sub.stats().handled === 24, 5000); // counted after the handler returns
    await sub.unsubscribe();
    await sub.done;
    await expect(gw.replay('lib-replayed', 'latest')).rejects.toMatchObject({ code: 'CEG_NOT_FOUND' });
    // Audited as an HTTP replay is: the same log, keyed by the group; the refused one is not in it
    // (before, library replays were never written).
    const log = new ReplayLog(gw.transport, replayAuditTopicOf(gw.config.subscriptions.topic), silentLogger());
    await log.start();
    try {
      const entries = await log.list('lib-replayed');
      expect(entries).toEqual([
        { ...dry, outcome: 'done' },
        { ...real, outcome: 'done' },
      ]);
      expect(entries.map((e) => [e.by, e.dryRun])).toEqual([['library', true], ['library', false]]);
    } finally {
      await log.stop();
    }
  });

  it('a library replay that fails (a member elsewhere stays) is in the audit log as failed, written behind its error', async () => {
    const sub = await gw.subscribe({ subscription: 'lib-replay-fails', kinds: ['PriceLoadingCompleted'], startFrom: 'latest', handler: async () => undefined });
    // A member of the same group this process does not stop (another process's, as far as the replay knows).
    const other = await gw.transport.consume({ group: 'lib-replay-fails', topics: [...sub.topics], startFrom: 'latest' }, async () => undefined);
    const log = new ReplayLog(gw.transport, replayAuditTopicOf(gw.config.subscriptions.topic), silentLogger());
    await log.start();
    try {
      const err = await gw.replay('lib-replay-fails', 'earliest', { waitMs: 200, by: 'ops-script' }).then(() => undefined, (e: unknown) => e);
      expect(err).toMatchObject({ code: 'CEG_REPLAY_FAILED', retriable: true });
      const entries = await waitFor('the failed replay in the audit log', async () => {
        const l = await log.list('lib-replay-fails');
        return l.length > 0 ? l : undefined;
      }, 5000);
      expect(entries).toEqual([expect.objectContaining({ by: 'ops-script', to: 'earliest', dryRun: false, outcome: 'failed', partitions: {}, events: 0, error: { code: 'CEG_REPLAY_FAILED', message: (err as Error).message } })]);
    } finally {
      await log.stop();
      await other.stop();
      await sub.unsubscribe();
    }
  });
});

describe('a connector replays the same way', () => {
  it('a shell-hook connector started on the gateway: replay to a time runs the hook again for exactly the events from there', async () => {
    const dir = tempDir('ceg-replay-hook-');
    const out = join(dir.dir, 'seen.txt');
    writeFileSync(join(dir.dir, 'hook.sh'), `#!/bin/sh\nprintf '%s\\n' "$CE_ID" >> ${JSON.stringify(out)}\n`);
    chmodSync(join(dir.dir, 'hook.sh'), 0o755);
    writeFileSync(join(dir.dir, 'hook.yaml'), 'kind: shell-hook\nsubscription: ops.replay-hook\nkinds: [PriceLoadingCompleted]\nstartFrom: latest\nsink:\n  command: [./hook.sh]\n');
    const handle = await startConnectors(gw, loadConnectors(dir.dir), silentLogger());
    try {
      const seen = (): string[] => (existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter((l) => l !== '') : []);
      await sleep(20);
      const t0 = new Date();
      await sleep(5);
      const mine = await batch('hooked');
      await waitFor('the hook ran for the batch', () => seen().length === 12, 10_000);
      const report = await gw.replay('ops.replay-hook', t0);
      expect(report.events).toBe(12);
      await waitFor('the hook ran again', () => seen().length === 24, 10_000);
      expect(seen().slice(12).sort()).toEqual([...mine].sort());
      // The hook writes its line before the subscriber counts the event handled.
      await waitFor('24 handled across the restart', () => handle.running[0]!.subscription.stats().handled === 24, 5000);
    } finally {
      await handle.stop();
      dir.remove();
    }
  });
});

describe('a pull subscription replays the same way', () => {
  it('moves its committed positions: a pull without a cursor gets the events again', async () => {
    const created = await call('POST', '/subscriptions', { name: 'pulled', kinds: ['PriceLoadingCompleted'], start: 'latest', delivery: { mode: 'pull' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const mine = await batch('pulled');
    const pull = async (): Promise<{ ids: string[]; cursor: string }> => {
      const res = await fetch(`${url}/subscriptions/pulled/events?max=100&wait=1`);
      expect(res.status).toBe(200);
      return { ids: ((await res.json()) as { id: string }[]).map((e) => e.id), cursor: res.headers.get('ce-gateway-cursor') ?? '' };
    };
    const first = await pull();
    expect(first.ids.sort()).toEqual([...mine].sort());
    expect((await call('POST', '/subscriptions/pulled/cursors', { cursor: first.cursor })).status).toBe(204);
    expect((await pull()).ids).toEqual([]);
    const report = (await call('POST', '/subscriptions/pulled/replay', { to: 'earliest' })).body as Report;
    expect(report.events).toBeGreaterThanOrEqual(12);
    expect((await pull()).ids.filter((id) => mine.includes(id)).sort()).toEqual([...mine].sort());
  });
});
