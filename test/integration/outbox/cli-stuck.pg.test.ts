/**
 * `ce-gateway outbox stuck`: the operator's view of rows that keep failing (a missing topic, a row
 * too large or invalid) — unsent rows with at least --min-attempts failed attempts, oldest first,
 * one JSON object a line. The real command in a child process on the stack's PostgreSQL.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ensureOutboxSchema, startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { runName } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const run = promisify(execFile);
let pool: pg.Pool;
const schema = runName('ob_stuck');
const table = `${schema}.outbox`;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
  const c = await pool.connect();
  try {
    await ensureOutboxSchema(c, { table });
  } finally {
    c.release();
  }
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

/** `ce-gateway outbox stuck` on the stack's database with `env` on top; how it failed (undefined: it did not). */
function stuck(env: Record<string, string>): Promise<{ code?: number; stdout: string; stderr: string } | undefined> {
  return run(process.execPath, [...CLI_ENTRY, 'outbox', 'stuck'], {
    env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', OUTBOX_DATABASE_URL: stackEnv().databaseUrl, LOG_LEVEL: 'error', ...env },
  }).then(() => undefined, (e: unknown) => e as { code?: number; stdout: string; stderr: string });
}

describe('ce-gateway outbox stuck', () => {
  it('lists the unsent rows with at least --min-attempts failed attempts, oldest first', async () => {
    const insert = `INSERT INTO "${schema}"."outbox" (topic, partition_key, header_names, header_values, event_id, event_source, event_type, attempts, last_error, sent_at)
      VALUES ($1, $2, '{}', '{}', $3, 'urn:test', 't', $4, $5, $6) RETURNING id::text AS id`;
    const stuck = (await pool.query<{ id: string }>(insert, ['gone.topic', 'K1', 'e1', 5, 'topic gone.topic does not exist', null])).rows[0]!.id;
    await pool.query(insert, ['ok.topic', 'K2', 'e2', 0, null, null]); // never failed
    await pool.query(insert, ['ok.topic', 'K3', 'e3', 1, 'timeout', null]); // failed once only
    await pool.query(insert, ['ok.topic', 'K4', 'e4', 7, null, new Date()]); // sent at last
    // A later row of the held key K1 that also failed (it was in the same failed produce call):
    // not listed, only the row that holds the key is.
    await pool.query(insert, ['gone.topic', 'K1', 'e5', 5, 'topic gone.topic does not exist', null]);
    const { stdout } = await run(process.execPath, [...CLI_ENTRY, 'outbox', 'stuck', '--min-attempts', '3'], {
      env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', OUTBOX_DATABASE_URL: stackEnv().databaseUrl, OUTBOX_TABLE: table, LOG_LEVEL: 'error' },
    });
    const rows = stdout.trim().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: stuck, topic: 'gone.topic', partitionKey: 'K1', eventId: 'e1', attempts: 5, lastError: 'topic gone.topic does not exist' });
  }, 60_000);

  it('on a table that does not exist names it and `ce-gateway outbox migrate`, exit 2', async () => {
    const missing = `${runName('ob_stuck_none')}.outbox`;
    const err = await run(process.execPath, [...CLI_ENTRY, 'outbox', 'stuck'], {
      env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', OUTBOX_DATABASE_URL: stackEnv().databaseUrl, OUTBOX_TABLE: missing, LOG_LEVEL: 'error' },
    }).then(() => undefined, (e: unknown) => e as { code?: number; stdout: string; stderr: string });
    expect(err?.code).toBe(2);
    expect(err?.stdout).toBe('');
    expect(err?.stderr).toContain(missing);
    expect(err?.stderr).toContain('ce-gateway outbox migrate');
    // Named by its command and ending with its code, as every CLI failure (until 2026-12-07: `ce-gateway: …` without either).
    expect(err?.stderr).toMatch(/^ce-gateway outbox stuck: outbox table .* \[CEG_STORE_UNAVAILABLE\]$/m);
  }, 60_000);

  it('says a missing table as the relay says it (one classification, bus/outbox/store-error.ts)', async () => {
    const missing = `${runName('ob_stuck_none')}.outbox`;
    const relay = await startOutboxRelay({ pool, transport: createMemoryTransport(), table: missing, listen: false, pollIntervalMs: 50 });
    let said: { message: string; code: string | undefined } | undefined;
    try {
      await waitFor('the relay to fail on the missing table', () => (said = relay.stats().lastError) !== undefined, 30_000, 50);
    } finally {
      await relay.stop();
    }
    const err = await stuck({ OUTBOX_TABLE: missing });
    expect(err?.code).toBe(2);
    expect(said?.code).toBe('CEG_STORE_UNAVAILABLE');
    expect(err?.stderr.trim()).toBe(`ce-gateway outbox stuck: ${said!.message} [CEG_STORE_UNAVAILABLE]`);
  }, 60_000);

  it('says any other database failure as CEG_STORE_UNAVAILABLE, not the pg error\'s own code', async () => {
    // A table of another layout (OUTBOX_TABLE naming someone else's table): SQLSTATE 42703.
    await pool.query(`CREATE TABLE "${schema}"."other" (x int)`);
    const layout = await stuck({ OUTBOX_TABLE: `${schema}.other` });
    expect(layout?.code).toBe(2);
    expect(layout?.stderr).toMatch(/^ce-gateway outbox stuck: outbox database \(table .*other\): .*\(SQLSTATE 42703\) \[CEG_STORE_UNAVAILABLE\]$/m);
    // Nothing listening where OUTBOX_DATABASE_URL points: ECONNREFUSED.
    const port = await new Promise<number>((resolve) => {
      const srv = createServer();
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const refused = await stuck({ OUTBOX_DATABASE_URL: `postgres://127.0.0.1:${port}/cegw`, OUTBOX_TABLE: table });
    expect(refused?.code).toBe(2);
    expect(refused?.stderr).toMatch(/^ce-gateway outbox stuck: outbox database \(table .*\): .*\(ECONNREFUSED\) \[CEG_STORE_UNAVAILABLE\]$/m);
  }, 60_000);
});
