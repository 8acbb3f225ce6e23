/**
 * The relay's key-picking and claiming SQL against held (topic, partition key) pairs, on the real
 * PostgreSQL: a pair held on one topic leaves the same key, and keyless rows (key ''), of other
 * topics free; and a NULL among the held pairs holds nothing (with `(topic, key) <> ALL (…)` it
 * made the condition NULL for every row: nothing at all was picked).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOutboxSchema } from '../../../src/bus/outbox/index.js';
import { claimRowsSql, lockKeysSql } from '../../../src/bus/outbox/table.js';
import type { OutboxTable } from '../../../src/bus/outbox/index.js';
import { stackEnv } from '../../helpers/stack.js';
import { runName } from './fixture.js';

let pool: pg.Pool;
let schema: string;
let t: OutboxTable;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
  pool.on('error', () => undefined);
  schema = runName('obheld');
  const c = await pool.connect();
  try {
    t = await ensureOutboxSchema(c, { table: `${schema}.outbox` });
  } finally {
    c.release();
  }
  // (topic, key) rows, in id order: keyless rows on A and B, key K on A and B.
  for (const [topic, key] of [['A', ''], ['B', ''], ['A', 'K'], ['B', 'K'], ['A', ''], ['B', 'K']] as const) {
    await pool.query(`INSERT INTO ${t.sql} (topic, partition_key, header_names, header_values, value, event_id, event_source, event_type) VALUES ($1, $2, '{}', '{}', '\\x00', gen_random_uuid()::text, 's', 'x')`, [topic, key]);
  }
});
afterAll(async () => {
  await pool?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  await pool?.end();
});

/** lockKeys then claim in one transaction (rolled back), as a cycle runs them: the (topic, key) of each claimed row. */
async function cycle(topics: (string | null)[], keys: (string | null)[], maxBytes = 1_000_000): Promise<{ locked: string[]; claimed: string[] }> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    const locked = (await c.query<{ partition_key: string }>(lockKeysSql(t), [100, 100, t.name, topics, keys])).rows.map((r) => r.partition_key);
    const claimed = (await c.query<{ topic: string; partition_key: string }>(claimRowsSql(t), [locked, 100, topics, keys, maxBytes])).rows.map((r) => `${r.topic}/${r.partition_key}`);
    return { locked, claimed };
  } finally {
    await c.query('ROLLBACK');
    c.release();
  }
}

describe('held (topic, partition key) pairs in the relay SQL', () => {
  it('nothing held: every row', async () => {
    expect(await cycle([], [])).toEqual({ locked: ['', 'K'], claimed: ['A/', 'B/', 'A/K', 'B/K', 'A/', 'B/K'] });
  });

  it('keyless rows held on A: the keyless rows of B and key K go on', async () => {
    expect((await cycle(['A'], [''])).claimed).toEqual(['B/', 'A/K', 'B/K', 'B/K']);
  });

  it('key K held on B: K on A and the keyless rows go on', async () => {
    expect((await cycle(['B'], ['K'])).claimed).toEqual(['A/', 'B/', 'A/K', 'A/']);
  });

  it('a byte bound cuts the claim to a prefix in id order, never below one row', async () => {
    expect((await cycle([], [], 1)).claimed).toEqual(['A/']);
    const one = (await pool.query<{ n: number }>(`SELECT coalesce(octet_length(value), 0) + coalesce(octet_length(record_key), 0) + pg_column_size(header_names) + pg_column_size(header_values) AS n FROM ${t.sql} ORDER BY id LIMIT 1`)).rows[0]!.n;
    expect((await cycle([], [], one + 1)).claimed).toEqual(['A/', 'B/']);
  });

  it('a NULL among the held pairs holds nothing (the other pairs still are)', async () => {
    expect((await cycle(['A', null], ['', 'K'])).claimed).toEqual(['B/', 'A/K', 'B/K', 'B/K']);
    expect((await cycle(['A', 'B'], ['', null])).claimed).toEqual(['B/', 'A/K', 'B/K', 'B/K']);
  });
});
