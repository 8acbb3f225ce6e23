/**
 * The `outbox relay` command while its database cannot be reached (break report finding 3: the
 * backlog gauges read 0 and /healthz said nothing): the backlog gauges have no sample,
 * `ce_gateway_outbox_database_up` is 0, the database errors are counted, and /healthz (still 200:
 * an outage is waited out, not a reason to restart) says `database: "down"`, `degraded: true`.
 * The real command in a child process; OUTBOX_DATABASE_URL a closed loopback port.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

describe('the outbox relay command without its database', () => {
  it('shows the database down in /metrics (no backlog sample) and /healthz', async () => {
    const s = stackEnv();
    const [port, closed] = [await freePort(), await freePort()];
    let child: ChildProcess | undefined;
    let stderr = '';
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: `postgres://relay:relay@127.0.0.1:${closed}/outbox`, OUTBOX_POLL_INTERVAL_MS: '100', LOG_LEVEL: 'error', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: `ob-dbdown-${Date.now().toString(36)}` },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      const health = await waitFor('/healthz to say the database is down', async () => {
        if (child!.exitCode !== null) throw new Error(`relay exited ${String(child!.exitCode)}: ${stderr}`);
        const r = await fetch(`${url}/healthz`).catch(() => undefined);
        if (r === undefined) return undefined;
        const body = (await r.json()) as Record<string, unknown>;
        return r.status === 200 && body.database === 'down' ? body : undefined;
      }, 60_000, 200).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      expect(health).toMatchObject({ status: 'ok', degraded: true, database: 'down' });
      const text = await (await fetch(`${url}/metrics`)).text();
      const samples = new Map(text.split('\n').filter((l) => l.startsWith('ce_gateway_outbox_')).map((l) => l.split(' ') as [string, string]));
      expect(samples.has('ce_gateway_outbox_backlog_rows')).toBe(false);
      expect(samples.has('ce_gateway_outbox_oldest_row_age_seconds')).toBe(false);
      expect(samples.get('ce_gateway_outbox_database_up')).toBe('0');
      expect(Number(samples.get('ce_gateway_outbox_database_errors_total'))).toBeGreaterThan(0);
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
