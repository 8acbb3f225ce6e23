/**
 * A row whose topic the broker does not have is reported as what it is: CEG_UNKNOWN_TOPIC,
 * retriable (the row waits and is retried until the topic exists), in the relay's `lastError`
 * (what `/healthz` shows as `lastError`) and its warning line, with the row's `last_error` naming
 * the topic (walkthrough gap: the relay said CEG_INVALID_NAME, a code for names a request gets
 * wrong and that are never retried). Once the topic exists the row goes out. Real Kafka and PostgreSQL.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { createLogger } from '../../../src/observability/index.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, rowStates, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';

let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 1 });
});
afterAll(async () => {
  await f?.close();
});

describe('outbox relay on a topic that does not exist', () => {
  it('says CEG_UNKNOWN_TOPIC (retriable) in lastError, its log line and the row, and publishes once the topic exists', async () => {
    const t = f.writer.table.sql;
    const missing = `${f.run}.not-there`;
    // A well-formed row, as the writer writes them, moved to a topic the broker does not have
    // before the relay starts (a catalog topic deleted, or a table shared with another catalog).
    await writeCommitted(f, 'K1', 1);
    await f.pool.query(`UPDATE ${t} SET topic = $1`, [missing]);
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({ level: 'warn', destination: new Writable({ write(chunk: Buffer, _e, cb) { for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>); cb(); } }) });
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 50, publishTimeoutMs: 5000, log, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 100, factor: 2, maxDelayMs: 400, jitter: 0 }) });
    try {
      // The attempt is written to the row after it is counted: wait for both.
      await waitFor('a failed look-up of the missing topic, written to the row', async () => relay.stats().failedAttempts >= 1 && (await f.pool.query(`SELECT 1 FROM ${t} WHERE topic = $1 AND last_error IS NOT NULL`, [missing])).rowCount === 1, 30_000);
      expect(relay.stats().lastError).toMatchObject({ code: 'CEG_UNKNOWN_TOPIC' });
      expect(relay.stats().lastError!.message).toMatch(new RegExp(`^topic ${missing.replace(/\./g, '\\.')} does not exist `));
      const warned = lines.find((l) => l.topic === missing && l.topicMissing === true);
      expect(warned).toMatchObject({ code: 'CEG_UNKNOWN_TOPIC' });
      const row = (await f.pool.query<{ last_error: string; sent_at: Date | null }>(`SELECT last_error, sent_at FROM ${t} WHERE topic = $1`, [missing])).rows[0]!;
      expect(row.sent_at).toBeNull();
      expect(row.last_error).toContain(`topic ${missing} does not exist`);
      // Retriable, as the code says: created, the row goes out without a restart.
      await f.transport.ensureTopics([{ ...f.catalog.topics[0]!, name: missing }]);
      await waitFor('the row sent', async () => (await rowStates(f)).unsent === 0, 60_000, 200);
    } finally {
      await relay.stop();
    }
  }, 120_000);
});
