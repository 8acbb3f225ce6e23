/**
 * The `outbox relay` command starts and publishes without a schema registry (break report finding
 * 2: it ran the full gateway start-up, which waits for the registry, so a registry outage kept it
 * from ever starting): the rows are already encoded; it needs only Kafka and its database.
 * The real command in a child process, SCHEMA_REGISTRY_URL a closed loopback port.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, readTopic, seqByKey, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
});
afterAll(async () => {
  await f?.close();
});

describe('the outbox relay command without a schema registry', () => {
  it('serves /healthz and publishes the committed rows while SCHEMA_REGISTRY_URL does not answer', async () => {
    const s = stackEnv();
    for (let i = 1; i <= 5; i++) await writeCommitted(f, 'NOREG', i);
    const [port, closed] = [await freePort(), await freePort()];
    let child: ChildProcess | undefined;
    let stderr = '';
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: `http://127.0.0.1:${closed}`, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: f.table, OUTBOX_POLL_INTERVAL_MS: '100', LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: f.run.replace(/_/g, '-') },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      await waitFor('the relay to serve /healthz', async () => child!.exitCode === null && (await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false)), 60_000, 200).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      await waitFor('the rows published', async () => / ?ce_gateway_outbox_published_total 5\n/.test(await (await fetch(`${url}/metrics`)).text()), 30_000, 100).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      const unsent = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${f.writer.table.sql} WHERE sent_at IS NULL`);
      expect(Number(unsent.rows[0]!.n)).toBe(0);
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
    expect(seqByKey(await readTopic(f, f.topic, 5)).get('NOREG_H4')).toEqual([1, 2, 3, 4, 5]);
  });
});
