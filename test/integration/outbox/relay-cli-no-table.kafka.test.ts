/**
 * The `outbox relay` command on a table that does not exist (`outbox migrate` forgotten; break
 * report: /healthz said the database was up and not degraded while `ce_gateway_outbox_database_up`
 * was 0, and SQLSTATE 42P01 was retried like an outage without saying what to do). Now the signals
 * agree (database down, degraded, database_up 0, no backlog sample), and one error line — not one
 * per retry — names the table and `ce-gateway outbox migrate`. The real command in a child process
 * on the stack's database, on a schema that no test creates.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { runName } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

describe('the outbox relay command without its table', () => {
  it('reports the database down and degraded, names the table and the migrate command, once', async () => {
    const s = stackEnv();
    const table = `${runName('ob_notable')}.outbox`;
    const port = await freePort();
    let child: ChildProcess | undefined;
    let stderr = '';
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: table, OUTBOX_POLL_INTERVAL_MS: '100', LOG_LEVEL: 'info', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: `ob-notable-${Date.now().toString(36)}` },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      // Several failed cycles (the default backoff starts at 200 ms), so "once" means something.
      await waitFor('a few failed cycles', async () => {
        if (child!.exitCode !== null) throw new Error(`relay exited ${String(child!.exitCode)}: ${stderr}`);
        const r = await fetch(`${url}/metrics`).catch(() => undefined);
        if (r === undefined) return false;
        const m = /^ce_gateway_outbox_database_errors_total (\d+)/m.exec(await r.text());
        return m !== null && Number(m[1]) >= 4;
      }, 60_000, 200);
      const r = await fetch(`${url}/healthz`);
      const health = (await r.json()) as Record<string, unknown>;
      expect(r.status).toBe(200); // waited out (the table may be created), not a reason to restart
      expect(health).toMatchObject({ status: 'ok', database: 'down', degraded: true });
      expect(String(health.databaseError)).toContain(table);
      expect(String(health.databaseError)).toContain('ce-gateway outbox migrate');

      const text = await (await fetch(`${url}/metrics`)).text();
      const samples = new Map(text.split('\n').filter((l) => l.startsWith('ce_gateway_outbox_')).map((l) => l.split(' ') as [string, string]));
      expect(samples.get('ce_gateway_outbox_database_up')).toBe('0');
      expect(samples.has('ce_gateway_outbox_backlog_rows')).toBe(false);

      const lines = stderr.split('\n').filter((l) => l.includes(table) && /"level":(40|50)/.test(l));
      expect(lines, stderr.slice(-3000)).toHaveLength(1);
      expect(lines[0]).toContain('ce-gateway outbox migrate');
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((res) => child!.once('exit', res));
        child.kill('SIGTERM');
        await exited;
      }
    }
  }, 90_000);
});
