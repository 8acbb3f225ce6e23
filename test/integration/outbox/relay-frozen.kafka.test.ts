/**
 * A relay frozen mid-cycle (SIGSTOP, a partition that keeps TCP up) does not hold its keys for
 * ever (break report finding 4): its transaction sets idle_in_transaction_session_timeout (3 ×
 * publishTimeoutMs + 1 s), so the server ends it and a second relay takes the keys. The freeze is
 * a produce call that never settles and ignores its abort signal: the first relay never sends its
 * next statement.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import type { Transport } from '../../../src/transport/index.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, readTopic, seqByKey, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
});
afterAll(async () => {
  await f?.close();
});

describe('outbox relay frozen mid-cycle', () => {
  it('loses its keys after the idle-in-transaction bound: a second relay publishes them', async () => {
    for (let i = 1; i <= 3; i++) await writeCommitted(f, 'FROZEN', i);
    let calls = 0;
    let thaw: (err: Error) => void = () => undefined;
    const thawed = new Promise<never>((_, reject) => (thaw = reject));
    thawed.catch(() => undefined);
    // The real transport, but produce never settles (whatever its signal says) until thawed.
    const frozen: Transport = new Proxy(f.transport, {
      get(target, prop, receiver) {
        if (prop === 'produce') {
          return () => {
            calls++;
            return thawed;
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const publishTimeoutMs = 500; // idle bound: 3 × 500 + 1000 = 2.5 s
    const a = await startOutboxRelay({ pool: f.pool, transport: frozen, table: f.table, pollIntervalMs: 100, publishTimeoutMs, stopGraceMs: 100, listen: false, name: 'frozen' });
    let b: Awaited<ReturnType<typeof startOutboxRelay>> | undefined;
    try {
      await waitFor('the frozen relay to claim the rows', () => calls > 0, 20_000, 20);
      const t0 = Date.now();
      b = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100, publishTimeoutMs: 5000, listen: false, name: 'second' });
      await waitFor('the second relay to publish the frozen relay\'s key', () => b!.stats().published === 3, 20_000, 50);
      // Not before the bound: the frozen relay held the key until the server ended its transaction.
      expect(Date.now() - t0).toBeGreaterThan(1000);
    } finally {
      thaw(new Error('thawed'));
      await b?.stop();
      await a.stop();
    }
    expect(seqByKey(await readTopic(f, f.topic, 3)).get('FROZEN_H4')).toEqual([1, 2, 3]);
    const unsent = await f.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${f.writer.table.sql} WHERE sent_at IS NULL`);
    expect(Number(unsent.rows[0]!.n)).toBe(0);
  });
});
