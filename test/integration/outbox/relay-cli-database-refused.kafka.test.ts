/**
 * The `outbox relay` command on a database that refuses the relay itself (break report hE,
 * 2026-12-07): a wrong password (28P01, after a credential rotation, say) or a database that does
 * not exist (3D000). Every cycle failed, nothing was published, `ce_gateway_outbox_database_up`
 * was 0 — yet /healthz said `database: "up"`, `degraded: false`, because only a database that
 * could not be reached counted as down. Now /healthz says `database: "down"`, `degraded: true`,
 * with the SQLSTATE, as for an unreachable one. The real command in a child process, on the stack's
 * PostgreSQL (scram-sha-256 authentication).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

/** The stack's database URL with a wrong password, or naming a database that does not exist. */
function refusedUrl(how: 'password' | 'database'): string {
  const u = new URL(stackEnv().databaseUrl);
  if (how === 'password') u.password = 'not-the-password';
  else u.pathname = `/no_such_db_${Date.now().toString(36)}`;
  return u.toString();
}

describe('the outbox relay command on a database that refuses it', () => {
  it.each([
    ['a wrong password', 'password', '28P01'],
    ['a database that does not exist', 'database', '3D000'],
  ] as const)('%s: /healthz says the database is down once a cycle failed, /metrics database_up 0', async (_what, how, sqlstate) => {
    const s = stackEnv();
    const port = await freePort();
    let child: ChildProcess | undefined;
    let stderr = '';
    try {
      child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: refusedUrl(how), OUTBOX_POLL_INTERVAL_MS: '100', LOG_LEVEL: 'error', PORT: String(port), HOST: '127.0.0.1', INSTANCE_ID: `ob-dbrefused-${Date.now().toString(36)}` },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      // Two failed cycles: the state after a cycle met the refusal, whatever /healthz said before.
      const health = await waitFor('a cycle to fail on the database', async () => {
        if (child!.exitCode !== null) throw new Error(`relay exited ${String(child!.exitCode)}: ${stderr}`);
        const r = await fetch(`${url}/healthz`).catch(() => undefined);
        if (r === undefined) return undefined;
        const body = (await r.json()) as Record<string, unknown>;
        return r.status === 200 && typeof body.consecutiveFailures === 'number' && body.consecutiveFailures >= 2 ? body : undefined;
      }, 60_000, 200).catch((err: unknown) => {
        throw new Error(`${String(err)}; relay stderr: ${stderr}`);
      });
      expect(health).toMatchObject({ status: 'ok', degraded: true, database: 'down', lastError: sqlstate });
      expect(String(health.databaseError)).toContain(sqlstate === '28P01' ? 'password authentication failed' : 'does not exist');
      const text = await (await fetch(`${url}/metrics`)).text();
      const samples = new Map(text.split('\n').filter((l) => l.startsWith('ce_gateway_outbox_')).map((l) => l.split(' ') as [string, string]));
      expect(samples.get('ce_gateway_outbox_database_up')).toBe('0');
      expect(samples.has('ce_gateway_outbox_backlog_rows')).toBe(false);
    } finally {
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  }, 90_000);
});
