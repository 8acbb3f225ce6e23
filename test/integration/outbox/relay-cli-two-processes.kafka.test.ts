/**
 * Two `outbox relay` commands — two processes, two pools — on one table while rows are being
 * written: every row is published, and per key the first occurrences on the topic are in id order
 * (duplicates are allowed by design, none is expected without a crash).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, readTopic, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
});
afterAll(async () => {
  await f?.close();
});

describe('two outbox relay processes on one table', () => {
  it('publish every row, first occurrences in order per key', async () => {
    const s = stackEnv();
    const children: ChildProcess[] = [];
    let stderr = '';
    const keys = ['A1', 'B2', 'C3', 'D4', 'E5', 'F6'];
    const per = 30;
    try {
      for (const n of [1, 2]) {
        const port = await freePort();
        const child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
          env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: f.table, OUTBOX_BATCH_SIZE: '4', OUTBOX_POLL_INTERVAL_MS: '50', LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: `${f.run}-r${n}` },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        children.push(child);
      }
      for (let i = 1; i <= per; i++) for (const k of keys) await writeCommitted(f, k, i);
      await waitFor('every row sent', async () => {
        for (const c of children) if (c.exitCode !== null) throw new Error(`relay exited ${String(c.exitCode)}: ${stderr}`);
        const r = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${f.table} WHERE sent_at IS NULL`);
        return Number(r.rows[0]!.n) === 0;
      }, 60_000, 100);
    } finally {
      for (const c of children) c.kill('SIGTERM');
      await Promise.all(children.map((c) => (c.exitCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once('exit', () => r())))));
    }
    const seen = await readTopic(f, f.topic, keys.length * per);
    const first = new Map<string, number[]>();
    const ids = new Set<string>();
    for (const e of seen) {
      if (ids.has(e.id)) continue;
      ids.add(e.id);
      const l = first.get(e.key) ?? [];
      l.push(e.seq);
      first.set(e.key, l);
    }
    expect(ids.size).toBe(keys.length * per);
    for (const k of keys) expect(first.get(`${k}_H4`)).toEqual(Array.from({ length: per }, (_, j) => j + 1));
    expect(seen.length - ids.size).toBe(0);
  });
});
