/**
 * T3 (bus spec): the producer's transaction rolls back → no message is published (P3). The
 * outbox row and the business row share one transaction; a relay is running throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../src/bus/outbox/index.js';
import type { OutboxRelay } from '../../src/bus/outbox/index.js';
import { KIND, outboxFixture, readTopic, recordCount, rowStates, seriesUpdate } from '../integration/outbox/fixture.js';
import type { OutboxFixture } from '../integration/outbox/fixture.js';
import { waitFor } from '../helpers/wait.js';

let f: OutboxFixture;
let relay: OutboxRelay | undefined;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
  await f.pool.query(`CREATE TABLE "${f.schema}".series (instrument text PRIMARY KEY, bars integer NOT NULL)`);
});
afterAll(async () => {
  await relay?.stop();
  await f?.close();
});

/** One producer transaction: the business row, then the event rows; `end` decides its fate. */
async function produce(instrument: string, events: number, end: 'commit' | 'rollback' | 'fail'): Promise<string[]> {
  const c = await f.pool.connect();
  const ids: string[] = [];
  try {
    await c.query('BEGIN');
    await c.query(`INSERT INTO "${f.schema}".series (instrument, bars) VALUES ($1, $2)`, [instrument, events]);
    for (let seq = 1; seq <= events; seq++) ids.push((await f.writer.write(c, KIND, seriesUpdate(instrument, seq)))!.id);
    if (end === 'fail') await c.query(`INSERT INTO "${f.schema}".series (instrument, bars) VALUES ($1, 0)`, [instrument]); // duplicate key: the transaction aborts
    await c.query(end === 'commit' ? 'COMMIT' : 'ROLLBACK');
  } catch {
    await c.query('ROLLBACK');
  } finally {
    c.release();
  }
  return ids;
}

describe('T3 rollback publishes nothing', () => {
  it('T3 rolled-back and failed transactions publish nothing; only the committed one is published', async () => {
    relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 100 });
    const before = await recordCount(f.transport, f.topic);

    const rolledBack = await produce('EUR/USD', 3, 'rollback');
    const failed = await produce('USD/JPY', 2, 'fail');
    expect(rolledBack).toHaveLength(3);
    expect(failed).toHaveLength(2);
    // The committed marker is written after the rolled-back ones: once it is on the topic, the
    // relay has had every chance to publish the others.
    const [committed] = await produce('XAU/USD', 1, 'commit');

    await waitFor('the committed event to be published', () => relay!.stats().published === 1, 15_000);
    const cycles = relay.stats().cycles;
    await waitFor('two more relay cycles', () => relay!.stats().cycles >= cycles + 2, 5_000);

    expect(await recordCount(f.transport, f.topic)).toBe(before + 1);
    const seen = await readTopic(f, f.topic, before + 1);
    expect(seen.map((s) => s.id)).toEqual([committed]);
    expect(relay.stats().published).toBe(1);
    expect(await rowStates(f)).toMatchObject({ total: 1, unsent: 0 });
    const business = await f.pool.query<{ instrument: string }>(`SELECT instrument FROM "${f.schema}".series`);
    expect(business.rows.map((r) => r.instrument)).toEqual(['XAU/USD']);
  });
});
