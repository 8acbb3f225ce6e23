/**
 * T2 (bus spec): publish with the bus down → the producer completes, the message waits in the
 * outbox, and it is delivered on recovery (P3). The relay's broker is unreachable first (its
 * bootstrap address is a closed port), then that port starts forwarding to the real broker: the
 * same relay and transport recover without a restart. The shared broker is never stopped.
 */
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../src/bus/outbox/index.js';
import type { OutboxRelay } from '../../src/bus/outbox/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import type { Transport } from '../../src/transport/index.js';
import { transportOn } from '../helpers/kafka-client.js';
import { IDENTITY, outboxFixture, readTopic, recordCount, rowStates, seqByKey, writeCommitted } from '../integration/outbox/fixture.js';
import type { OutboxFixture } from '../integration/outbox/fixture.js';
import { stackEnv } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

/** A loopback port nothing listens on (bound once by us, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Forwards `port` to `target` (host:port), byte for byte. */
async function forward(port: number, target: string): Promise<{ server: Server; close(): Promise<void> }> {
  const [host, tport] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  const server = createServer((down) => {
    const up = connect(tport, host);
    sockets.add(down).add(up);
    const end = (): void => {
      down.destroy();
      up.destroy();
    };
    down.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    down.pipe(up).pipe(down);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    server,
    close: () =>
      new Promise<void>((r) => {
        sockets.forEach((s) => s.destroy());
        server.close(() => r());
      }),
  };
}

let f: OutboxFixture;
let relay: OutboxRelay | undefined;
let downTransport: Transport | undefined;
let proxy: { close(): Promise<void> } | undefined;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
});
afterAll(async () => {
  await relay?.stop();
  await downTransport?.close();
  await proxy?.close();
  await f?.close();
});

describe('T2 broker down with the outbox', () => {
  it('T2 the producer commits while the broker is unreachable; rows stay, failures are counted; on recovery every row arrives exactly once, in order per key', async () => {
    const port = await closedPort();
    const before = await recordCount(f.transport, f.topic);

    // The producers complete: each transaction commits although no broker is reachable.
    const keys = ['EUR/USD', 'USD/JPY', 'XAU/USD', 'BTC/USD'];
    const perKey = 5;
    const written = await Promise.all(
      keys.map(async (k) => {
        const ids: string[] = [];
        for (let seq = 1; seq <= perKey; seq++) ids.push((await writeCommitted(f, k, seq)).id);
        return ids;
      }),
    );
    const total = keys.length * perKey;

    // The relay starts once every row is committed: a cycle that ran while rows were still being
    // written could see a younger row before an older one committed (ids are taken before commit),
    // and the union of the rows tried would then exceed one batch.
    downTransport = transportOn({ brokers: [`127.0.0.1:${port}`], clientId: `${f.run.replace(/_/g, '-')}-t2`, retries: 1, initialRetryTimeMs: 100, maxRetryTimeMs: 300, connectionTimeoutMs: 500, requestTimeoutMs: 5000 });
    relay = await startOutboxRelay({
      pool: f.pool,
      transport: downTransport,
      table: f.table,
      batchSize: 10,
      pollIntervalMs: 100,
      retry: retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 100, factor: 2, maxDelayMs: 400, jitter: 0 }),
    });

    await waitFor('three failed publish attempts', () => relay!.stats().failedAttempts >= 3, 30_000);
    const down = relay.stats();
    expect(down.published).toBe(0);
    expect(down.failedRows).toBeGreaterThanOrEqual(down.failedAttempts);
    expect(down.lastError?.code).toBe('CEG_BROKER_UNAVAILABLE');
    const held = await rowStates(f);
    expect(held).toMatchObject({ total, unsent: total });
    // The oldest rows (one batch, oldest keys first) were tried and carry their failed attempts.
    expect(held.attemptedUnsent).toBeGreaterThanOrEqual(1);
    expect(held.attemptedUnsent).toBeLessThanOrEqual(10);
    expect(held.failedAttemptsUnsent).toBeGreaterThanOrEqual(3);
    const tried = await f.pool.query<{ last_error: string }>(`SELECT DISTINCT last_error FROM ${f.writer.table.sql} WHERE attempts > 0`);
    expect(tried.rows.length).toBeGreaterThanOrEqual(1);
    expect(tried.rows[0]!.last_error.length).toBeGreaterThan(0);
    expect(await recordCount(f.transport, f.topic)).toBe(before);

    // Recovery: the relay's broker address now reaches the real broker.
    proxy = await forward(port, stackEnv().kafkaBrokers[0]!);
    await waitFor('every row to be sent', async () => (await rowStates(f)).unsent === 0, 45_000);
    expect(relay.stats().published).toBe(total);

    const seen = (await readTopic(f, f.topic, before + total)).filter((s) => s.source === `urn:${IDENTITY.service}:${IDENTITY.instance}`);
    expect(seen).toHaveLength(total); // exactly once
    expect(new Set(seen.map((s) => s.id))).toEqual(new Set(written.flat()));
    for (const [, seqs] of seqByKey(seen)) expect(seqs).toEqual([1, 2, 3, 4, 5]);
    expect(seqByKey(seen).size).toBe(keys.length);
  });
});
