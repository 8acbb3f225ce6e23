/**
 * `ce-gateway outbox migrate` ends within OUTBOX_QUERY_TIMEOUT_MS when the database does not
 * answer (break report hE, 2026-12-07): it connected and ran its statements without a bound, so a
 * database that accepts connections and never answers, or a migration lock held by another
 * session, held a deploy job's migrate step for ever (`outbox stuck` and the relay were bounded).
 * The real command in a child process: once against a loopback listener that accepts and never
 * answers (a hung postmaster), once on the stack's PostgreSQL while another session holds the
 * migration's advisory lock (a migrate stuck elsewhere), then with the lock released.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackEnv } from '../../helpers/stack.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';
import { runName } from './fixture.js';

const run = promisify(execFile);
const schema = runName('ob_migrate');
const table = `${schema}.outbox`;
let pool: pg.Pool;
let silent: Server;
const held: Socket[] = [];

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
  silent = createServer((s) => {
    held.push(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise((resolve) => silent.close(resolve));
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

/**
 * `ce-gateway outbox migrate` with `env` on top; how it ended. The child is killed after 60 s
 * (the old command never ended by itself): then `signal` is set and `code` is not 2.
 */
function migrate(env: Record<string, string>): Promise<{ code?: number | null; signal?: string | null; stdout: string; stderr: string }> {
  return run(process.execPath, [...CLI_ENTRY, 'outbox', 'migrate'], {
    timeout: 60_000,
    env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', OUTBOX_TABLE: table, OUTBOX_QUERY_TIMEOUT_MS: '1000', LOG_LEVEL: 'error', ...env },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: unknown) => e as { code?: number | null; signal?: string | null; stdout: string; stderr: string },
  );
}

describe('ce-gateway outbox migrate on a database that does not answer', () => {
  it('a listener that accepts and never answers: exit 2, CEG_STORE_UNAVAILABLE', async () => {
    const port = (silent.address() as AddressInfo).port;
    const r = await migrate({ OUTBOX_DATABASE_URL: `postgres://u:p@127.0.0.1:${port}/cegw` });
    expect([r.code, r.signal ?? null]).toEqual([2, null]);
    expect(r.stderr).toMatch(/^ce-gateway outbox migrate: outbox database \(table .*\): .*\[CEG_STORE_UNAVAILABLE\]$/m);
  }, 90_000);

  it('the migration lock held by another session: exit 2; once released, the table is made', async () => {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      // The lock ensureOutboxSchema takes (src/bus/outbox/schema.ts), as another migrate would hold it.
      await holder.query('SELECT pg_advisory_xact_lock(hashtext($1), 0)', [table]);
      const r = await migrate({ OUTBOX_DATABASE_URL: stackEnv().databaseUrl });
      expect([r.code, r.signal ?? null]).toEqual([2, null]);
      expect(r.stderr).toMatch(/^ce-gateway outbox migrate: outbox database \(table .*\): .*\[CEG_STORE_UNAVAILABLE\]$/m);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const ok = await migrate({ OUTBOX_DATABASE_URL: stackEnv().databaseUrl });
    expect([ok.code, ok.stdout]).toEqual([0, `outbox table ready: ${table}\n`]);
  }, 150_000);
});
