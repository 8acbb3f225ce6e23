/**
 * The idempotency contract on PostgreSQL (the dev stack's DATABASE_URL; tables unique to this
 * run, dropped at the end), plus what only PostgreSQL does: the table's layout and name rule, and
 * idempotentPg, where the handler's effect and the record commit in one transaction.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgIdempotencyStore, ensureIdempotencyTable, idempotentPg } from '../../src/bus/idempotency/index.js';
import type { PgIdempotencyStore } from '../../src/bus/idempotency/index.js';
import { deadLetter, duplicate, retry } from '../../src/bus/subscriber/index.js';
import type { DeliveryContext } from '../../src/bus/subscriber/index.js';
import type { Envelope } from '../../src/envelope/types.js';
import { stackEnv } from '../helpers/stack.js';
import { idempotencyContract } from './idempotency.contract.js';
import { caughtAsync as failure } from '../helpers/errors.js';

const run = `ceg_idem_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
let pool: pg.Pool;
const tables = new Set<string>();
let n = 0;
const table = (): string => {
  const t = `${run}_${++n}`;
  tables.add(t);
  return t;
};

beforeAll(() => {
  pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 12 });
});
afterAll(async () => {
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS "${t}"`);
  await pool.end();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

idempotencyContract('pg', () => Promise.resolve(createPgIdempotencyStore({ pool, table: table(), cleanupIntervalMs: 0 })), {
  durable: true,
  reopen: (s) => Promise.resolve(createPgIdempotencyStore({ pool, table: (s as PgIdempotencyStore).table, cleanupIntervalMs: 0 })),
});

describe('PostgreSQL idempotency table', () => {
  it('refuses a table name outside the strict identifier rule before any SQL runs', async () => {
    for (const bad of ['', 'Upper', '1abc', 'a-b', 'a.b', 'a"; drop table x; --', 'x'.repeat(49), 'tab le']) {
      const err = await failure(Promise.resolve().then(() => createPgIdempotencyStore({ pool, table: bad })));
      expect([err.code, err.retriable, err.details['field']]).toEqual(['CEG_INVALID_OPTIONS', false, 'table']);
      const err2 = await failure(Promise.resolve().then(() => idempotentPg(pool, () => Promise.resolve(), { table: bad, windowMs: 1000 })));
      expect(err2.code).toBe('CEG_INVALID_OPTIONS');
    }
    const r = await pool.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('Upper', 'a-b', 'tab le')`);
    expect(r.rows[0].n).toBe(0);
  });

  it('creates the table idempotently, also from concurrent pools, with the documented layout', async () => {
    const t = table();
    const other = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
    try {
      await Promise.all([ensureIdempotencyTable(pool, t), ensureIdempotencyTable(other, t), createPgIdempotencyStore({ pool: other, table: t, cleanupIntervalMs: 0 }).ready()]);
      await ensureIdempotencyTable(pool, t);
    } finally {
      await other.end();
    }
    const cols = await pool.query(`SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`, [t]);
    expect(cols.rows.map((c) => [c.column_name, c.data_type, c.is_nullable])).toEqual([
      ['key_sha256', 'bytea', 'NO'],
      ['scope', 'text', 'NO'],
      ['source', 'text', 'NO'],
      ['id', 'text', 'NO'],
      ['outcome', 'text', 'NO'],
      ['done_at', 'timestamp with time zone', 'NO'],
      ['expires_at', 'timestamp with time zone', 'NO'],
    ]);
    const idx = await pool.query(`SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname`, [t]);
    expect(idx.rows.map((i) => i.indexname)).toEqual([`${t}_expires_at_idx`, `${t}_pkey`]);
  });

  it('writes readable rows whose expiry is the window after the database clock', async () => {
    const t = table();
    const s = createPgIdempotencyStore({ pool, table: t, cleanupIntervalMs: 0 });
    await s.markDone({ scope: 'sub', source: 'urn:a', id: 'e-1' }, 'dead-lettered', 90_000);
    const r = await pool.query(`SELECT scope, source, id, outcome, extract(epoch FROM expires_at - done_at) * 1000 AS window_ms, length(key_sha256) AS hash_len FROM "${t}"`);
    expect(r.rows).toEqual([{ scope: 'sub', source: 'urn:a', id: 'e-1', outcome: 'dead-lettered', window_ms: '90000.000000', hash_len: 32 }]);
    await s.close();
  });

  it('deletes expired rows on its own with a cleanup interval', async () => {
    const t = table();
    const s = createPgIdempotencyStore({ pool, table: t, cleanupIntervalMs: 100 });
    await s.markDone({ scope: 'sub', source: 'urn:a', id: 'short' }, 'handled', 50);
    await s.markDone({ scope: 'sub', source: 'urn:a', id: 'long' }, 'handled', 60_000);
    const deadline = Date.now() + 5000;
    let ids: string[] = [];
    while (Date.now() < deadline) {
      ids = (await pool.query(`SELECT id FROM "${t}" ORDER BY id`)).rows.map((x) => x.id as string);
      if (ids.length === 1) break;
      await sleep(50);
    }
    expect(ids).toEqual(['long']);
    await s.close();
  });

  it('maps an unreachable database to a retriable store error naming the table', async () => {
    const down = new pg.Pool({ connectionString: 'postgres://nobody:x@127.0.0.1:1/none', connectionTimeoutMillis: 2000 });
    try {
      const t = table();
      const s = createPgIdempotencyStore({ pool: down, table: t, cleanupIntervalMs: 0 });
      const err = await failure(s.lookup({ scope: 's', source: 'urn:a', id: 'x' }));
      expect([err.retriable, err.details['store'], err.details['table']]).toEqual([true, 'pg', t]);
      let called = 0;
      const h = idempotentPg(down, () => Promise.resolve(void called++), { table: t, windowMs: 1000 });
      const err2 = await failure(h(ev('urn:a', 'x'), ctx('sub')));
      expect([err2.retriable, called]).toEqual([true, 0]);
    } finally {
      await down.end();
    }
  });
});

function ev(source: string, id: string): Envelope {
  return { attributes: { specversion: '1.0', id, source, type: 'pg.contract' } };
}
function ctx(subscription: string, attempt = 1): DeliveryContext {
  return { subscription, topic: 'pg.contract', partition: 0, offset: 1n, attempt };
}

describe('idempotentPg: effect and record in one transaction', () => {
  let idem: string;
  let effects: string;
  beforeAll(async () => {
    idem = table();
    effects = table();
    await pool.query(`CREATE TABLE "${effects}" (event_id text NOT NULL, subscription text NOT NULL)`);
  });
  const effectCount = async (id: string): Promise<number> => (await pool.query(`SELECT count(*)::int AS n FROM "${effects}" WHERE event_id = $1`, [id])).rows[0].n;
  const recorded = async (sub: string, source: string, id: string): Promise<string | undefined> =>
    createPgIdempotencyStore({ pool, table: idem, cleanupIntervalMs: 0 }).lookup({ scope: sub, source, id });
  const insertEffect = (e: Envelope, c: DeliveryContext, client: pg.PoolClient): Promise<unknown> =>
    client.query(`INSERT INTO "${effects}" (event_id, subscription) VALUES ($1, $2)`, [e.attributes.id, c.subscription]);

  it('commits the effect once; redeliveries are skipped and counted', async () => {
    const h = idempotentPg(pool, async (e, c, client) => void (await insertEffect(e, c, client)), { table: idem, windowMs: 60_000 });
    const e = ev('urn:pg:once', randomUUID());
    expect(await h(e, ctx('sub-1', 1))).toBeUndefined();
    for (let i = 2; i <= 3; i++) expect(await h(e, ctx('sub-1', i))).toEqual(duplicate);
    expect(await effectCount(e.attributes.id)).toBe(1);
    expect(h.stats()).toEqual({ handled: 1, skipped: 2, markFailed: 0 });
    expect(await recorded('sub-1', 'urn:pg:once', e.attributes.id)).toBe('handled');
  });

  it('rolls back the effect and records nothing when the handler throws, returns retry or deadLetter', async () => {
    const results = [() => Promise.reject(new Error('boom')), () => Promise.resolve(retry('later')), () => Promise.resolve(deadLetter('bad'))];
    let call = 0;
    const skips: string[] = [];
    const h = idempotentPg(
      pool,
      async (e, c, client) => {
        await insertEffect(e, c, client);
        const next = results[call++];
        return next ? next() : undefined;
      },
      { table: idem, windowMs: 60_000, onSkip: (e) => skips.push(e.attributes.id) },
    );
    const e = ev('urn:pg:rollback', randomUUID());
    await expect(h(e, ctx('sub-1', 1))).rejects.toThrow('boom');
    expect(await h(e, ctx('sub-1', 2))).toEqual({ kind: 'retry', reason: 'later' });
    expect(await h(e, ctx('sub-1', 3))).toEqual({ kind: 'deadLetter', reason: 'bad' });
    expect(await effectCount(e.attributes.id)).toBe(0);
    expect(await recorded('sub-1', 'urn:pg:rollback', e.attributes.id)).toBeUndefined();
    expect(await h(e, ctx('sub-1', 4))).toBeUndefined();
    expect(await h(e, ctx('sub-1', 5))).toEqual(duplicate);
    expect(await effectCount(e.attributes.id)).toBe(1);
    expect([call, skips]).toEqual([4, [e.attributes.id]]);
  });

  it('rolls back a handler whose own SQL failed and keeps the pool usable', async () => {
    const h = idempotentPg(pool, async (e, c, client) => {
      await insertEffect(e, c, client);
      await client.query('SELECT * FROM no_such_table_ceg_idem');
    }, { table: idem, windowMs: 60_000 });
    const e = ev('urn:pg:sqlfail', randomUUID());
    await expect(h(e, ctx('sub-1'))).rejects.toThrow(/no_such_table_ceg_idem/);
    expect(await effectCount(e.attributes.id)).toBe(0);
    expect(await recorded('sub-1', 'urn:pg:sqlfail', e.attributes.id)).toBeUndefined();
  });

  it('runs the effect once when the same event is delivered concurrently', async () => {
    const h = idempotentPg(
      pool,
      async (e, c, client) => {
        await insertEffect(e, c, client);
        await sleep(100); // hold the transaction open while the others arrive
      },
      { table: idem, windowMs: 60_000 },
    );
    const e = ev('urn:pg:race', randomUUID());
    await Promise.all(Array.from({ length: 6 }, (_, i) => h(e, ctx('sub-1', i + 1))));
    expect(await effectCount(e.attributes.id)).toBe(1);
    expect(h.stats()).toEqual({ handled: 1, skipped: 5, markFailed: 0 });
  });

  it('runs again after the window, and separately per subscription', async () => {
    const h = idempotentPg(pool, async (e, c, client) => void (await insertEffect(e, c, client)), { table: idem, windowMs: 200 });
    const e = ev('urn:pg:window', randomUUID());
    await h(e, ctx('sub-1'));
    await h(e, ctx('sub-2'));
    await h(e, ctx('sub-1'));
    expect(await effectCount(e.attributes.id)).toBe(2);
    await sleep(350);
    await h(e, ctx('sub-1'));
    expect(await effectCount(e.attributes.id)).toBe(3);
    expect(h.stats()).toEqual({ handled: 3, skipped: 1, markFailed: 0 });
  });

  it('shares its table with the store: idempotent() on the store skips what idempotentPg recorded', async () => {
    const e = ev('urn:pg:shared', randomUUID());
    const h = idempotentPg(pool, async (ev1, c, client) => void (await insertEffect(ev1, c, client)), { table: idem, windowMs: 60_000 });
    await h(e, ctx('sub-1'));
    const store = createPgIdempotencyStore({ pool, table: idem, cleanupIntervalMs: 0 });
    expect(await store.lookup({ scope: 'sub-1', source: 'urn:pg:shared', id: e.attributes.id })).toBe('handled');
  });
});
