/**
 * The relay while another session holds a row lock on the outbox (an operator's `SELECT … FOR
 * UPDATE`): the cycle gives up after lockTimeoutMs (counted, retried), and stop() is bounded by
 * stopGraceMs even while a cycle waits on the lock, on a connection of the caller's pool that
 * the caller's own work holds, or on a read of the topic's max.message.bytes that does not answer
 * (that read is also bounded by publishTimeoutMs).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackEnv } from '../../helpers/stack.js';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { waitFor } from '../../helpers/wait.js';
import type { Transport } from '../../../src/transport/index.js';
import { outboxFixture, rowStates, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
});
afterAll(async () => {
  await f?.close();
});

async function lockSecondRow(): Promise<() => Promise<void>> {
  const op = await f.pool.connect();
  await op.query('BEGIN');
  await op.query(`SELECT id FROM ${f.writer.table.sql} WHERE sent_at IS NULL ORDER BY id OFFSET 1 LIMIT 1 FOR UPDATE`);
  let held = true;
  return async () => {
    if (!held) return;
    held = false;
    await op.query('ROLLBACK');
    op.release();
  };
}

/** The stop tests' stopGraceMs. Units: ms. */
const STOP_GRACE_MS = 1000;
/**
 * How long a stop test waits for stop(). Far above STOP_GRACE_MS (a loaded CI machine has room),
 * below every wrong outcome: stopGraceMs ignored (its default, 10 s), the lock wait (60 s), the
 * limit read (120 s), the connection that is never given back (never). Timers do not fire early,
 * so a stop() that waits for any of those is still pending here. Units: ms.
 */
const STOP_WAIT_MS = 8000;

/** 'stopped' when relay.stop() settled within STOP_WAIT_MS, else 'pending'. */
async function stopsWithinGrace(relay: { stop(): Promise<void> }): Promise<'stopped' | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([relay.stop().then(() => 'stopped' as const), new Promise<'pending'>((r) => (timer = setTimeout(() => r('pending'), STOP_WAIT_MS)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe('outbox relay and a row lock held by another session', () => {
  it('a cycle waiting on the lock gives up after lockTimeoutMs (dbErrors, lastError 55P03) and the rows go once the lock is gone', async () => {
    await f.pool.query(`TRUNCATE ${f.writer.table.sql}`);
    for (let i = 1; i <= 3; i++) await writeCommitted(f, 'EUR/USD', i);
    const unlock = await lockSecondRow();
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100, lockTimeoutMs: 300 });
    try {
      await waitFor('the lock wait counted', () => relay.stats().dbErrors >= 1, 5000);
      expect(relay.stats().lastError?.code).toBe('55P03');
      expect(relay.stats().published).toBe(0);
      await unlock();
      await waitFor('the rows published', () => relay.stats().published === 3, 30_000);
      expect((await rowStates(f)).unsent).toBe(0);
    } finally {
      await unlock();
      await relay.stop();
    }
  });

  it('stop() returns within about stopGraceMs while a cycle waits on the lock', async () => {
    await f.pool.query(`TRUNCATE ${f.writer.table.sql}`);
    for (let i = 1; i <= 3; i++) await writeCommitted(f, 'EUR/USD', i);
    const unlock = await lockSecondRow();
    try {
      // The lock timeout is longer than the test: only stop() itself can end the wait.
      const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100, stopGraceMs: STOP_GRACE_MS, lockTimeoutMs: 60_000 });
      await waitFor('a cycle blocked on the lock', async () => {
        const r = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%' AND query LIKE $1`, [`%${f.schema}%`]);
        return Number(r.rows[0]!.n) > 0;
      });
      expect(await stopsWithinGrace(relay)).toBe('stopped');
      expect(relay.stats().published).toBe(0);
    } finally {
      await unlock();
    }
    // The abandoned transaction was rolled back: nothing marked, the rows still unsent.
    expect((await rowStates(f)).unsent).toBe(3);
  });

  it('stop() returns within about stopGraceMs while a cycle waits for a connection of the caller\'s full pool, and gives that connection back', async () => {
    const pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 1 });
    pool.on('error', () => undefined);
    const busy = await pool.connect(); // the caller's own work holds the pool's only connection
    let released = false;
    try {
      const relay = await startOutboxRelay({ pool, transport: f.transport, table: f.table, pollIntervalMs: 100, stopGraceMs: STOP_GRACE_MS });
      await waitFor('a cycle waiting for a connection', () => pool.waitingCount > 0);
      expect(await stopsWithinGrace(relay)).toBe('stopped');
      expect(relay.stats().cycles).toBeGreaterThan(0);
      busy.release();
      released = true;
      // The connection the abandoned cycle was waiting for is not kept by the stopped relay.
      await waitFor('the pool idle again', () => pool.idleCount === 1 && pool.waitingCount === 0 && pool.totalCount === 1);
    } finally {
      if (!released) busy.release();
      await pool.end();
    }
  });

  /** The fixture's transport whose max.message.bytes reads do not answer while `hang.on` (each call counted). */
  function hangingLimitReads(): { transport: Transport; hang: { on: boolean; calls: number } } {
    const hang = { on: true, calls: 0 };
    const transport = new Proxy(f.transport, {
      get(target, prop) {
        if (prop === 'maxMessageBytes') {
          return (topic: string): Promise<number> => {
            hang.calls++;
            return hang.on ? new Promise<number>(() => undefined) : target.maxMessageBytes(topic);
          };
        }
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    return { transport, hang };
  }

  it('stop() returns within about stopGraceMs while a cycle waits on a read of max.message.bytes that does not answer, and the rows stay unsent', async () => {
    await f.pool.query(`TRUNCATE ${f.writer.table.sql}`);
    for (let i = 1; i <= 3; i++) await writeCommitted(f, 'EUR/USD', i);
    const { transport, hang } = hangingLimitReads();
    // publishTimeoutMs is longer than the test: only stop() itself can end the wait.
    const relay = await startOutboxRelay({ pool: f.pool, transport, table: f.table, pollIntervalMs: 100, stopGraceMs: STOP_GRACE_MS, publishTimeoutMs: 120_000 });
    await waitFor('a cycle reading the limit', () => hang.calls > 0);
    expect(await stopsWithinGrace(relay)).toBe('stopped');
    expect(relay.stats().published).toBe(0);
    expect((await rowStates(f)).unsent).toBe(3);
  });

  it('a read of max.message.bytes that does not answer fails the attempt after publishTimeoutMs (retried), and the rows go once reads answer', async () => {
    await f.pool.query(`TRUNCATE ${f.writer.table.sql}`);
    for (let i = 1; i <= 3; i++) await writeCommitted(f, 'EUR/USD', i);
    const { transport, hang } = hangingLimitReads();
    // 2 s: the hung read is still cut by it, and a real read on a loaded machine (kafkajs's admin
    // connects at its first DescribeConfigs) is not — at 400 ms one was, again and again, and the rows
    // stayed unsent past the wait below.
    const relay = await startOutboxRelay({ pool: f.pool, transport, table: f.table, pollIntervalMs: 100, publishTimeoutMs: 2_000 });
    try {
      await waitFor('the timed-out read counted', () => relay.stats().failedAttempts >= 1, 20_000);
      expect(relay.stats().lastError?.code).toBe('CEG_DELIVERY_TIMEOUT');
      expect(relay.stats().lastError?.message).toContain('max.message.bytes');
      expect(relay.stats().published).toBe(0);
      hang.on = false;
      await waitFor('the rows published', () => relay.stats().published === 3, 30_000);
      expect((await rowStates(f)).unsent).toBe(0);
    } finally {
      await relay.stop();
    }
  });
});
