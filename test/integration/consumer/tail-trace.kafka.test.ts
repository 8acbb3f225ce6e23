/**
 * Issue 7: `tail` and `trace` decode and validate exactly as a subscription does, say so when an
 * answer may be incomplete, and leave nothing behind (no consumer group, no topic, no schema).
 * Both run as real `ce-gateway` processes on a catalog of this run's own topics.
 */
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app/index.js';
import { runHandling } from '../../../src/bus/correlation/index.js';
import type { ChainNode } from '../../../src/bus/trace/index.js';
import type { Attributes } from '../../../src/envelope/types.js';
import { PRICE_LOADING_COMPLETED, indicatorsComputed, priceLoaded, seriesUpdated, strategySignal } from '../../fixtures/events.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { testKafkaClient } from '../../helpers/kafka-client.js';
import { ownCatalog, rawKafka } from './members.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';
import { createTopicWithLeaders } from '../../helpers/stack-topics.js';

const run = promisify(execFile);
const cat = ownCatalog('it-tail-trace');
const raw = rawKafka();
const producer = raw.producer({ allowAutoTopicCreation: false });
const admin = raw.admin();
let gw: Gateway;
beforeAll(async () => {
  gw = await cat.member();
  await Promise.all([producer.connect(), admin.connect()]);
});
afterAll(async () => {
  await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
  await cat.close();
});

const cli = (args: string[], env: Record<string, string> = cat.env()): Promise<{ stdout: string; stderr: string; code: number }> =>
  run(process.execPath, [...CLI_ENTRY, ...args], { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 }).then(
    (r) => ({ ...r, code: 0 }),
    (err: { stdout: string; stderr: string; code: number }) => ({ stdout: err.stdout, stderr: err.stderr, code: err.code }),
  );

/** Groups whose name says they are throw-away reads. */
async function readGroups(): Promise<string[]> {
  const { groups } = await admin.listGroups();
  return groups.map((g) => g.groupId).filter((g) => g.startsWith('ce-gateway.read.'));
}

/**
 * Read groups that appeared since `before`. Running gateways hold read groups of their own (they
 * follow the subscription definitions topic), and a gateway another test killed leaves its read
 * group to expire: only new ones count.
 */
async function newReadGroups(before: readonly string[]): Promise<string[]> {
  return (await readGroups()).filter((g) => !before.includes(g));
}

/** A valid binary-mode record of PriceLoadingCompleted, with one header replaced. */
function binaryWith(name: string, value: string): { key: string; value: Buffer; headers: Record<string, Buffer> } {
  const codec = gw.codec();
  const binding = codec.binding(PRICE_LOADING_COMPLETED)!;
  const attrs: Attributes = { specversion: '1.0', id: randomUUID(), source: 'urn:raw', type: PRICE_LOADING_COMPLETED, time: '2022-03-15T12:00:02Z', partitionkey: 'TAIL-X_H1' };
  const r = codec.toRecord(attrs, codec.encodeData(binding, priceLoaded('TAIL/X', 'H1')));
  const headers: Record<string, Buffer> = {};
  for (const [n, v] of r.headers) headers[n] = Buffer.from(v);
  headers[name] = Buffer.from(value);
  return { key: 'TAIL-X_H1', value: Buffer.from(r.value!), headers };
}

describe('tail', () => {
  it('marks as INVALID, with the reason, the records a subscription dead-letters (specversion 0.3, time without offset, control character in an extension, structured data off the schema), and leaves no consumer group', async () => {
    const before = await readGroups();
    const tail = spawn(process.execPath, [...CLI_ENTRY, 'tail', 'PriceLoadingCompleted', '--from-beginning', '--json'], { env: { ...process.env, ...cat.env() }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: { valid: boolean; reason?: string; attributes?: { id: string } }[] = [];
    createInterface({ input: tail.stdout }).on('line', (l) => lines.push(JSON.parse(l) as (typeof lines)[number]));
    let stderr = '';
    tail.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => tail.once('exit', (c) => r(c)));
    try {
      await producer.send({
        topic: cat.priceTopic,
        messages: [
          binaryWith('ce_specversion', '0.3'),
          binaryWith('ce_time', '2022-03-15T12:00:02'),
          binaryWith('ce_comment', 'a\u0001b'),
          {
            key: 'TAIL-X_H1',
            value: JSON.stringify({ specversion: '1.0', id: randomUUID(), source: 'urn:raw', type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/json', data: { ...priceLoaded('TAIL/X', 'H1'), barsLoaded: 'many' } }),
            headers: { 'content-type': 'application/cloudevents+json' },
          },
        ],
      });
      const valid = gw.publisher().publish('PriceLoadingCompleted', priceLoaded('TAIL/X', 'H1'))!;
      await valid.delivered;
      await waitFor('five lines from tail', () => lines.length >= 5 || (tail.exitCode !== null && Promise.reject(new Error(stderr))), 60_000);
      const invalid = lines.filter((l) => !l.valid).map((l) => l.reason ?? '');
      expect(invalid).toHaveLength(4);
      expect(invalid[0]).toMatch(/specversion/);
      expect(invalid[1]).toMatch(/time/);
      expect(invalid[2]).toMatch(/comment/);
      expect(invalid[3]).toMatch(/barsLoaded/);
      expect(lines.filter((l) => l.valid).map((l) => l.attributes?.id)).toEqual([valid.id]);
      // Its own throw-away read group while it runs on kafkajs; @platformatic/kafka reads fetch without joining any group.
      expect(await newReadGroups(before)).toHaveLength(testKafkaClient() === 'kafkajs' ? 1 : 0);
    } finally {
      tail.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(await newReadGroups(before)).toEqual([]);
  }, 90_000);

  it('ends with exit 0 and no stack trace when its reader goes away (`tail … | head -1`)', async () => {
    const first = gw.publisher().publish('PriceLoadingCompleted', priceLoaded('TAIL/PIPE', 'H1'))!;
    await first.delivered;
    const tail = spawn(process.execPath, [...CLI_ENTRY, 'tail', 'PriceLoadingCompleted', '--from-beginning'], { env: { ...process.env, ...cat.env() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    tail.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => tail.once('exit', (c) => r(c)));
    try {
      await new Promise<void>((resolve, reject) => {
        tail.stdout.once('data', () => resolve());
        tail.once('exit', () => reject(new Error(`tail exited before printing: ${stderr}`)));
      });
      tail.stdout.destroy(); // the reader closes its end, as head does after its first line
      // Written after the reader is gone: tail's next write fails with EPIPE.
      const later = await waitFor('tail to exit once a write found the reader gone', async () => {
        if (tail.exitCode !== null) return true;
        await gw.publisher().publish('PriceLoadingCompleted', priceLoaded('TAIL/PIPE', 'H1'))!.delivered;
        return false;
      }, 60_000, 500);
      expect(later).toBe(true);
    } finally {
      if (tail.exitCode === null) tail.kill('SIGKILL');
    }
    expect(await exited, stderr).toBe(0);
    expect(stderr).not.toMatch(/EPIPE|at .*\.(js|ts):\d+/);
  }, 90_000);

  it('creates no topic and registers no schema (read-only credentials suffice)', async () => {
    const fresh = ownCatalog('it-readonly');
    const groupsBefore = await readGroups();
    try {
      await createTopicWithLeaders(admin, fresh.priceTopic, 6);
      const before = new Set(await admin.listTopics());
      const s = stackEnv();
      const subjects = async (): Promise<string[]> => ((await (await fetch(`${s.schemaRegistryUrl}/subjects`)).json()) as string[]).filter((x) => x.includes('it-readonly'));
      const r = await cli(['trace', randomUUID(), '--json', '--timeout', '20000'], { ...fresh.env(), CATALOG_DIR: fresh.dir });
      // Only the price topic exists, so the read of the others fails: trace names it and exits non-zero; nothing was created.
      expect(r.code).not.toBe(0);
      expect(new Set(await admin.listTopics())).toEqual(before);
      expect(await subjects()).toEqual([]);
      expect(await newReadGroups(groupsBefore)).toEqual([]);
    } finally {
      await fresh.close();
    }
  }, 60_000);
});

describe('trace', () => {
  it('on a topic holding 100,000 unrelated records returns the whole chain, or exits non-zero saying it may be incomplete', async () => {
    const startedAt = new Date(Date.now() - 1000).toISOString();
    const before = await readGroups();
    const p = gw.publisher();
    const e1 = p.publish('PriceLoadingCompleted', priceLoaded('TRACE/X', 'H4'))!;
    await e1.delivered;
    const next = async (parent: { id: string; correlationid: string }, kind: string, data: Parameters<typeof p.publish>[1]) =>
      runHandling({ correlationid: parent.correlationid, eventId: parent.id }, async () => {
        const r = p.publish(kind, data)!;
        await r.delivered;
        return r;
      });
    const e2 = await next(e1, 'SeriesUpdateCompleted', seriesUpdated('TRACE/X', 'H4'));
    const e3 = await next(e2, 'IndicatorsComputed', indicatorsComputed('TRACE/X', 'H4'));
    await next(e3, 'StrategySignal', strategySignal('TRACE/X', 'H4'));
    // 100,000 unrelated records after the chain.
    const filler = Array.from({ length: 1000 }, (_, i) => ({ key: `K${i % 50}`, value: 'x', headers: { ce_correlationid: 'unrelated' } }));
    for (let i = 0; i < 100; i++) await producer.send({ topic: cat.priceTopic, messages: filler });

    const whole = await cli(['trace', e1.correlationid, '--json']);
    expect(whole.code).toBe(0);
    const t = JSON.parse(whole.stdout) as { complete: boolean; events: number; scanned: number; roots: ChainNode[] };
    expect(t).toMatchObject({ complete: true, events: 4 });
    expect(t.scanned).toBeGreaterThanOrEqual(100_004);
    expect(t.roots).toHaveLength(1);
    let depth = 0;
    for (let n: ChainNode | undefined = t.roots[0]; n; n = n.children[0]) depth++;
    expect(depth).toBe(4);

    const cut = await cli(['trace', e1.correlationid, '--json', '--timeout', '1']);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/may be incomplete/);
    expect((JSON.parse(cut.stdout) as { complete: boolean }).complete).toBe(false);

    const since = await cli(['trace', e1.correlationid, '--json', '--since', startedAt]);
    expect(since.code).toBe(0);
    expect((JSON.parse(since.stdout) as { events: number }).events).toBe(4);
    const recent = await cli(['trace', e1.correlationid, '--json', '--since', '2s']);
    expect(recent.code).toBe(1); // the chain is older than 2 s: nothing found

    expect(await newReadGroups(before)).toEqual([]);
  }, 180_000);
});
