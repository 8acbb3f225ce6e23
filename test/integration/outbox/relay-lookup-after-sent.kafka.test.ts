/**
 * A topic look-up that fails after its rows were published by another relay: the failure must not
 * be written onto rows that are sent by then (an attempt and a `last_error` on a row that went
 * out, a false trail for an operator reading the table). The look-up runs off the cycle, outside
 * any transaction or key lock, so the rows can change meanwhile. Here the relay's broker accepts
 * connections and never answers (the look-up fails after the client's timeouts) and the row is marked
 * sent meanwhile, as another relay would mark it.
 */
import { createServer } from 'node:net';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../../src/bus/outbox/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { transportOn } from '../../helpers/kafka-client.js';
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

describe('outbox relay whose topic look-up fails after the rows were sent elsewhere', () => {
  it('leaves the sent row as it was marked', async () => {
    // A "broker" that accepts connections and never answers.
    const sockets = new Set<Socket>();
    const silent = createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    const transport = transportOn({ brokers: [`127.0.0.1:${port}`], clientId: `${f.run}-silent`, connectionTimeoutMs: 1000, requestTimeoutMs: 1000 });
    const receipt = await writeCommitted(f, 'AAA', 1);
    // A row of another key in the same cycle: still unsent when the look-up fails, so it gets the
    // attempt — the sign that the failure was written.
    const other = await writeCommitted(f, 'BBB', 1);
    const relay = await startOutboxRelay({ pool: f.pool, transport, table: f.table, pollIntervalMs: 50, publishTimeoutMs: 3000, retry: retryPolicy({ maxAttempts: 1000, initialDelayMs: 60_000, factor: 1, maxDelayMs: 60_000, jitter: 0 }) });
    try {
      // The rows were claimed and their topic's look-up is in flight (their keys wait for it).
      await waitFor('the look-up in flight', () => relay.stats().heldKeys === 2, 15_000, 10);
      expect(relay.stats().failedAttempts).toBe(0);
      // Meanwhile another relay publishes the row and marks it.
      await f.pool.query(`UPDATE ${f.writer.table.sql} SET sent_at = now(), attempts = attempts + 1, sent_partition = 0, sent_offset = 0 WHERE id = $1`, [receipt.rowId]);
      await waitFor('the look-up failed', () => relay.stats().failedAttempts === 1, 30_000, 20);
      await waitFor('its failure written to the rows', async () => {
        const r = await f.pool.query<{ attempts: number; last_error: string | null }>(`SELECT attempts, last_error FROM ${f.writer.table.sql} WHERE id = $1`, [other.rowId]);
        return r.rows[0]!.attempts === 1 && r.rows[0]!.last_error !== null;
      }, 15_000, 20);
    } finally {
      await relay.stop();
      await transport.close().catch(() => undefined);
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
    const row = (await f.pool.query<{ attempts: number; last_error: string | null }>(`SELECT attempts, last_error FROM ${f.writer.table.sql} WHERE id = $1`, [receipt.rowId])).rows[0]!;
    expect(row).toEqual({ attempts: 1, last_error: null });
  }, 60_000);
});
