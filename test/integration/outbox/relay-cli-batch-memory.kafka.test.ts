/**
 * The `outbox relay` command with OUTBOX_BATCH_SIZE=10000 (the largest allowed) on rows of 100 KB:
 * a cycle must not read the whole 10,000-row batch — 1 GB — into the relay's memory at once. The
 * relay's peak RSS (VmHWM of the process) may grow by a bounded amount, not by the batch's size.
 * A private PostgreSQL of this test's own holds the rows (1 GB of values, compressed on disk);
 * their topic does not exist, so nothing is sent to the shared broker: the claim alone is measured.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOutboxSchema } from '../../../src/bus/outbox/index.js';
import { freePort } from '../../helpers/ports.js';
import { startPrivatePostgres } from '../../helpers/private-postgres.js';
import type { PrivatePostgres } from '../../helpers/private-postgres.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { runName } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

let db: PrivatePostgres | undefined;
beforeAll(async () => {
  db = await startPrivatePostgres('batchmem');
});
afterAll(async () => {
  await db?.stop();
});

/** A process's peak resident set, bytes (VmHWM in /proc/<pid>/status). */
function peakRss(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`no VmHWM for pid ${pid}`);
  return Number(kb) * 1024;
}

const ROWS = 10_000;
const ROW_BYTES = 100 * 1024;

describe('the outbox relay command with 10,000-row batches of 100 KB rows', () => {
  it('does not hold a whole batch of values in memory at once', async () => {
    const s = stackEnv();
    const run = runName('obmem');
    const table = `${run}.outbox`;
    const pool = new pg.Pool({ connectionString: db!.url, max: 2 });
    pool.on('error', () => undefined);
    const c0 = await pool.connect();
    try {
      await ensureOutboxSchema(c0, { table });
    } finally {
      c0.release();
    }
    const port = await freePort();
    let out = '';
    let child: ChildProcess | undefined;
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: db!.url, OUTBOX_TABLE: table, OUTBOX_BATCH_SIZE: String(ROWS), OUTBOX_POLL_INTERVAL_MS: '200', OUTBOX_QUERY_TIMEOUT_MS: '60000', LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: `${run}-relay` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      const pid = child.pid!;
      // Before any row exists: the process's baseline once it serves /healthz.
      const baseline = await waitFor('the relay serving /healthz', async () => {
        if (child!.exitCode !== null) throw new Error(`relay exited ${String(child!.exitCode)}: ${out.slice(-3000)}`);
        const r = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
        return r?.status === 200 ? peakRss(pid) : undefined;
      }, 60_000, 100);
      // Written after the baseline, in one transaction: 10,000 rows of 100 keys, 100 KB each, on a topic that does not exist (nothing reaches Kafka).
      await pool.query(
        `INSERT INTO ${table} (topic, partition_key, record_key, header_names, header_values, value, timestamp_ms, event_id, event_source, event_type)
         SELECT $1, 'k' || (g % 100), convert_to('k' || (g % 100), 'UTF8'), ARRAY['ce_id'], ARRAY[convert_to(g::text, 'UTF8')], decode(repeat('ab', $2), 'hex'), 0, 'e' || g, 'urn:test', 'test.big'
         FROM generate_series(1, $3) AS g`,
        [`${run}.missing`, ROW_BYTES, ROWS],
      );
      // The first cycle claimed rows and their topic's look-up failed: an attempt on them.
      await waitFor('a failed attempt on the claimed rows', async () => {
        if (child!.exitCode !== null) throw new Error(`relay exited ${String(child!.exitCode)}: ${out.slice(-3000)}`);
        const r = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE attempts > 0`);
        return Number(r.rows[0]!.n) > 0;
      }, 120_000, 200);
      const grown = peakRss(pid) - baseline;
      // The batch holds 1,000 MB of values; a bounded claim reads a small part of it.
      expect(grown, `peak RSS grew by ${Math.round(grown / 2 ** 20)} MiB`).toBeLessThan(256 * 2 ** 20);
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await pool.end();
    }
  }, 300_000);
});
