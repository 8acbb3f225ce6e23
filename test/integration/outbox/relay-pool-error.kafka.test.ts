/**
 * The relay on a pool the caller owns, with no 'error' listener of the caller's: a database
 * connection of the pool that dies while idle (pg_terminate_backend) is counted, not fatal.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
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

describe('outbox relay on a caller pool without an error listener', () => {
  it('counts an idle connection killed by pg_terminate_backend in dbErrors and keeps relaying; removes its listener on stop', async () => {
    const app = `${f.run}-bare`;
    // As a caller might build it: no pool.on('error').
    const pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 3, application_name: app });
    const relay = await startOutboxRelay({ pool, transport: f.transport, table: f.table, pollIntervalMs: 100, listen: false });
    try {
      await writeCommitted(f, 'EUR/USD', 1);
      await waitFor('the first row', () => relay.stats().published === 1, 15_000);
      // Between two polls (every 100 ms) a connection is back in the pool; at the instant of the
      // publish the relay may still hold it (CI saw 0 there on a loaded machine).
      await waitFor('an idle connection in the pool', () => pool.idleCount > 0, 10_000, 10);
      const dbErrors = relay.stats().dbErrors;
      // Kill the pool's connections; one at least is idle (the relay polls every 100 ms).
      await waitFor('an idle connection killed', async () => {
        const r = await f.pool.query<{ n: string }>(`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle'`, [app]);
        return Number(r.rows[0]!.n) > 0;
      });
      await waitFor('the lost connection counted', () => relay.stats().dbErrors > dbErrors, 10_000);
      await writeCommitted(f, 'EUR/USD', 2);
      await waitFor('the next row', () => relay.stats().published === 2, 15_000);
    } finally {
      await relay.stop();
    }
    expect(pool.listenerCount('error')).toBe(0);
    await pool.end();
  });
});
