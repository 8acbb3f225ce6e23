/**
 * The `outbox relay` command's own /metrics show the relay's too-large rows (a counter) and the
 * (topic, partition key) pairs it holds back (a gauge), next to the backlog families: the real
 * command in a child process, on the real PostgreSQL and Kafka, with a row too large for its topic.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const LIMIT = 4096;
let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
});
afterAll(async () => {
  await f?.close();
});

/** The text format's samples and # TYPE lines. */
async function scrape(url: string): Promise<{ values: Map<string, number>; types: Map<string, string> }> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  const values = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of (await res.text()).split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type !== null) types.set(type[1]!, type[2]!);
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*) (\S+)$/.exec(line);
    if (sample !== null) values.set(sample[1]!, Number(sample[2]));
  }
  return { values, types };
}

describe('the outbox relay command\'s /metrics', () => {
  it('counts too-large rows and shows the held (topic, key) pairs', async () => {
    const s = stackEnv();
    const tight = `${f.run}.tight`;
    await f.transport.ensureTopics([{ name: tight, partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete', maxMessageBytes: LIMIT }]);
    // Key BIG on `tight`, its first row too large for it; key OK on the fixture's topic.
    for (let i = 1; i <= 2; i++) await writeCommitted(f, 'BIG', i);
    await f.pool.query(`UPDATE ${f.writer.table.sql} SET topic = $1 WHERE partition_key = 'BIG_H4'`, [tight]);
    await f.pool.query(`UPDATE ${f.writer.table.sql} SET value = value || decode(repeat('00', $1), 'hex') WHERE id = (SELECT min(id) FROM ${f.writer.table.sql} WHERE partition_key = 'BIG_H4')`, [LIMIT]);
    await writeCommitted(f, 'OK', 1);

    const port = await freePort();
    let child: ChildProcess | undefined;
    let stderr = '';
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: f.table, OUTBOX_POLL_INTERVAL_MS: '100', LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: f.run.replace(/_/g, '-') },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      await waitFor('the relay to serve /healthz', async () => child!.exitCode === null && (await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false)), 60_000, 200).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      // The other key's row may go out in a later round than the one that met the too-large row.
      const m = await waitFor('the too-large row counted while its key is held, and the other key published', async () => {
        const now = await scrape(url);
        return (now.values.get('ce_gateway_outbox_too_large_rows_total') ?? 0) >= 1 && now.values.get('ce_gateway_outbox_held_keys') === 1 && (now.values.get('ce_gateway_outbox_published_total') ?? 0) >= 1 ? now : undefined;
      }, 30_000, 100);
      expect(m.types.get('ce_gateway_outbox_too_large_rows_total')).toBe('counter');
      expect(m.types.get('ce_gateway_outbox_held_keys')).toBe('gauge');
      // The other key went out; BIG's two rows stay (the second behind the first, in order).
      expect(m.values.get('ce_gateway_outbox_published_total')).toBe(1);
      expect(m.values.get('ce_gateway_outbox_backlog_rows')).toBe(2);
      // A counter: it grows as the row is met again after its backoff (200 ms, doubling).
      await waitFor('the row met again', async () => ((await scrape(url)).values.get('ce_gateway_outbox_too_large_rows_total') ?? 0) >= 2, 30_000, 100);
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
