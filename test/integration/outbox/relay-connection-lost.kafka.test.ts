/**
 * The relay's cycle connection killed while the cycle is idle in its transaction (the produce
 * phase, between queries): one incident is one warning — the driver's 'error' of the checked-out
 * connection and the cycle's failed query then are one database failure, logged once until the
 * database works again, as every other database failure of the relay (the connection's 'error'
 * was a warning of its own, beside the incident's). No row is lost.
 */
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import type { Transport } from '../../../src/transport/index.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
});
afterAll(async () => {
  await f?.close();
});

/** The fixture's real transport, whose produce waits for `release()` once (the cycle's produce phase). */
function heldOnce(transport: Transport): { transport: Transport; producing: Promise<void>; release: () => void } {
  let release!: () => void;
  let entered!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const producing = new Promise<void>((r) => (entered = r));
  let held = false;
  const wrapped = new Proxy(transport, {
    get(target, prop, receiver) {
      if (prop !== 'produce') {
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      }
      return async (...args: Parameters<Transport['produce']>) => {
        if (!held) {
          held = true;
          entered();
          await gate;
        }
        return target.produce(...args);
      };
    },
  });
  return { transport: wrapped, producing, release };
}

describe('outbox relay whose cycle connection dies during the produce phase', () => {
  it('logs the incident once (warn), keeps relaying, loses no row', async () => {
    const app = `${f.run}-lost`;
    const pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 3, application_name: app });
    pool.on('error', () => undefined);
    const lines: { level: number; msg: string }[] = [];
    const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) });
    const held = heldOnce(f.transport);
    const relay = await startOutboxRelay({ pool, transport: held.transport, table: f.table, pollIntervalMs: 100, listen: false, log });
    try {
      await writeCommitted(f, 'EUR/USD', 1);
      await held.producing;
      const killed = await f.pool.query<{ n: string }>(`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'`, [app]);
      expect(Number(killed.rows[0]!.n)).toBe(1);
      await waitFor('the lost connection seen', () => lines.some((l) => l.msg.includes('database connection lost')), 10_000);
      held.release();
      await writeCommitted(f, 'EUR/USD', 2);
      await waitFor('both rows published', () => relay.stats().published >= 2, 20_000);
    } finally {
      held.release();
      await relay.stop();
      await pool.end();
    }
    const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/logged once until the database works again/);
    expect(lines.some((l) => l.msg === 'outbox relay: the database works again')).toBe(true);
    expect(relay.stats().dbErrors).toBeGreaterThan(0);
  });
});
