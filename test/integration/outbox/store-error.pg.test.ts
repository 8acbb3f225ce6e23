/**
 * One classification of the outbox database's failures for the relay and `ce-gateway outbox stuck`
 * (bus/outbox/store-error.ts outboxStoreError), on errors the stack's PostgreSQL really gives, in a
 * schema of this test's own: a missing table is CEG_STORE_UNAVAILABLE and retriable (until
 * 2026-12-07 the CLI said not retriable while the relay retried it); a refused connection and a
 * lock wait given up are retriable; a table of another layout is not; every one is
 * CEG_STORE_UNAVAILABLE with the SQLSTATE (or the socket's errno) in its details.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboxStoreError, outboxTable } from '../../../src/bus/outbox/index.js';
import { stackEnv } from '../../helpers/stack.js';
import { runName } from './fixture.js';

let pool: pg.Pool;
const schema = runName('ob_class');

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 3 });
  await pool.query(`CREATE SCHEMA "${schema}"`);
  // A table of the outbox's name but another layout (OUTBOX_TABLE pointing at someone else's table).
  await pool.query(`CREATE TABLE "${schema}"."other" (x int PRIMARY KEY)`);
  await pool.query(`INSERT INTO "${schema}"."other" VALUES (1)`);
});
afterAll(async () => {
  await pool?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool?.end();
});

/** What `pool.query(sql)` rejects with. */
const failureOf = (sql: string): Promise<unknown> => pool.query(sql).then(() => expect.fail(`${sql} did not fail`), (e: unknown) => e);

describe('outboxStoreError on the real PostgreSQL', () => {
  it('a missing table: CEG_STORE_UNAVAILABLE, retriable, naming the table and `ce-gateway outbox migrate`', async () => {
    const t = outboxTable(`${schema}.missing`);
    const raw = await failureOf(`SELECT id FROM ${t.sql} WHERE sent_at IS NULL`);
    const e = outboxStoreError(raw, t);
    expect(e).toMatchObject({ code: 'CEG_STORE_UNAVAILABLE', retriable: true, details: { table: t.name, sqlstate: '42P01' } });
    expect(e.message).toContain(t.name);
    expect(e.message).toContain('ce-gateway outbox migrate');
    expect(e.cause).toBe(raw);
  });

  it('a table of another layout: CEG_STORE_UNAVAILABLE, not retriable, with its SQLSTATE', async () => {
    const t = outboxTable(`${schema}.other`);
    const raw = await failureOf(`SELECT id, sent_at FROM ${t.sql}`);
    expect(outboxStoreError(raw, t)).toMatchObject({ code: 'CEG_STORE_UNAVAILABLE', retriable: false, details: { table: t.name, sqlstate: '42703' } });
  });

  it('a lock wait given up (lock_timeout, 55P03): retriable', async () => {
    const t = outboxTable(`${schema}.other`);
    const holder = await pool.connect();
    const waiter = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT x FROM ${t.sql} FOR UPDATE`);
      await waiter.query('BEGIN');
      await waiter.query('SET LOCAL lock_timeout = 50');
      const raw = await waiter.query(`SELECT x FROM ${t.sql} FOR UPDATE`).then(() => expect.fail('not refused'), (e: unknown) => e);
      expect(outboxStoreError(raw, t)).toMatchObject({ code: 'CEG_STORE_UNAVAILABLE', retriable: true, details: { sqlstate: '55P03' } });
    } finally {
      await waiter.query('ROLLBACK').catch(() => undefined);
      await holder.query('ROLLBACK').catch(() => undefined);
      waiter.release();
      holder.release();
    }
  });

  it('a refused connection: retriable, the errno in its details', async () => {
    // A port that was free a moment ago: nothing listens there now.
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const client = new pg.Client({ connectionString: `postgres://127.0.0.1:${port}/cegw`, connectionTimeoutMillis: 5000 });
    const raw = await client.connect().then(() => expect.fail('connected'), (e: unknown) => e);
    await client.end().catch(() => undefined);
    const t = outboxTable();
    expect(outboxStoreError(raw, t)).toMatchObject({ code: 'CEG_STORE_UNAVAILABLE', retriable: true, details: { table: t.name, errno: 'ECONNREFUSED' } });
  });
});
