/**
 * A topic deleted while the relay publishes to it: the rows written after are held (their key
 * only), keep failing with a clear `last_error` that names the topic, `ce-gateway outbox stuck`
 * lists the row that holds its key, and once the topic exists again every row goes out, in order
 * per key, without a restart.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawKafka } from '../consumer/members.js';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { outboxFixture, rowStates, writeCommitted } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const run = promisify(execFile);
let f: OutboxFixture;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 2 });
});
afterAll(async () => {
  await f?.close();
});

describe('outbox relay whose topic is deleted meanwhile', () => {
  it('holds the rows with a clear last_error, lists the holding row in `outbox stuck`, and resumes when the topic is back', async () => {
    const relay = await startOutboxRelay({ pool: f.pool, transport: f.transport, table: f.table, pollIntervalMs: 50, publishTimeoutMs: 5000, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 100, factor: 2, maxDelayMs: 400, jitter: 0 }) });
    const admin = rawKafka().admin();
    await admin.connect();
    try {
      await writeCommitted(f, 'AAA', 1);
      await waitFor('the first row', () => relay.stats().published === 1, 15_000);
      await admin.deleteTopics({ topics: [f.topic], timeout: 30_000 });
      await waitFor('the topic gone', async () => !(await admin.listTopics()).includes(f.topic), 30_000, 200);
      for (let i = 2; i <= 4; i++) await writeCommitted(f, 'AAA', i);
      await writeCommitted(f, 'BBB', 1);
      const holder = (await f.pool.query<{ id: string }>(`SELECT id::text AS id FROM ${f.writer.table.sql} WHERE sent_at IS NULL ORDER BY id LIMIT 1`)).rows[0]!.id;
      await waitFor('3 failed attempts on the oldest unsent row of each key', async () => {
        const r = await f.pool.query<{ attempts: number }>(`SELECT DISTINCT ON (partition_key) attempts FROM ${f.writer.table.sql} WHERE sent_at IS NULL ORDER BY partition_key, id`);
        return r.rows.length === 2 && r.rows.every((x) => x.attempts >= 3);
      }, 60_000, 200);
      expect(await admin.listTopics()).not.toContain(f.topic); // not auto-created by the relay
      const { stdout } = await run(process.execPath, [...CLI_ENTRY, 'outbox', 'stuck', '--min-attempts', '3'], {
        env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', OUTBOX_DATABASE_URL: stackEnv().databaseUrl, OUTBOX_TABLE: f.table, LOG_LEVEL: 'error' },
      });
      const listed = stdout.trim().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as Record<string, unknown>);
      // One line per held key: the row that holds it (AAA's row 2, BBB's row 1), not the key's later rows.
      const bHolder = (await f.pool.query<{ id: string }>(`SELECT id::text AS id FROM ${f.writer.table.sql} WHERE partition_key = 'BBB_H4' ORDER BY id LIMIT 1`)).rows[0]!.id;
      expect(listed.map((l) => [l.id, l.partitionKey])).toEqual([[holder, 'AAA_H4'], [bHolder, 'BBB_H4']]);
      expect(listed[0]).toMatchObject({ topic: f.topic });
      expect(String(listed[0]!.lastError)).toContain(`topic ${f.topic} does not exist`);
      // Said as a missing topic, the produce call's failure and the look-ups after it alike (not CEG_INVALID_NAME).
      expect(relay.stats().lastError).toMatchObject({ code: 'CEG_UNKNOWN_TOPIC' });
      // The topic back: every row goes, without a restart.
      await f.transport.ensureTopics(f.catalog.topics);
      await waitFor('every row sent', async () => (await rowStates(f)).unsent === 0, 60_000, 200);
      expect(relay.stats().heldKeys).toBe(0);
    } finally {
      await relay.stop();
      await admin.disconnect();
    }
    const sent = (await f.pool.query<{ partition_key: string; sent_offset: string; sent_partition: number; id: string }>(`SELECT partition_key, sent_offset, sent_partition, id::text AS id FROM ${f.writer.table.sql} ORDER BY id`)).rows;
    const a = sent.filter((r) => r.partition_key === 'AAA_H4').slice(1).map((r) => BigInt(r.sent_offset));
    expect(a).toEqual([...a].sort((x, y) => (x < y ? -1 : 1)));
  }, 180_000);
});
