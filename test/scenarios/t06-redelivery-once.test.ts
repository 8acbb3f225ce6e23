/**
 * Bus spec T6 (S3 + S4): a record is redelivered for real — the worker process is SIGKILLed after
 * its PostgreSQL transaction committed and before the Kafka offset was committed — and the side
 * effect counted in PostgreSQL still happens exactly once per event, across the restart.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_TOPIC, priceLoaded } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const { Kafka, logLevel } = kafkajs();

const N = 8;
const KILL_AT = 3; // index of the event the first worker dies on

interface Worker {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

function startWorker(env: Record<string, string>): Worker {
  const s = stackEnv();
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/t06-worker.ts'], {
    env: { ...process.env, KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, DATABASE_URL: s.databaseUrl, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  return { child, lines, exited, stderr: () => stderr };
}

async function subscribed(w: Worker): Promise<void> {
  await waitFor(`worker subscribed (stderr: ${w.stderr().slice(-2000)})`, () => {
    if (w.child.exitCode !== null) throw new Error(`worker exited early: ${w.stderr()}`);
    return w.lines.some((l) => 'subscribed' in l);
  }, 90_000, 100);
}

describe('T6 redelivery after a crash between handling and commit', () => {
  const prefix = `t06_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const subscription = uniqueName('t06-redelivery');
  let pool: pg.Pool;
  let gw: TestGateway;
  const workers: Worker[] = [];
  const admin = new Kafka({ clientId: 't06-test', brokers: [...stackEnv().kafkaBrokers], logLevel: logLevel.NOTHING }).admin();

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
    await pool.query(`CREATE TABLE "${prefix}_counter" (name text PRIMARY KEY, n integer NOT NULL)`);
    await pool.query(`INSERT INTO "${prefix}_counter" VALUES ('handled', 0)`);
    await pool.query(`CREATE TABLE "${prefix}_effects" (event_id text NOT NULL)`);
    await pool.query(`CREATE TABLE "${prefix}_deliveries" (seq bigserial PRIMARY KEY, run integer NOT NULL, event_id text NOT NULL, partition integer NOT NULL, "offset" bigint NOT NULL, skipped boolean NOT NULL)`);
    gw = await startGateway({ stack: true });
    await admin.connect();
  });

  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await admin.disconnect();
    await gw?.close();
    for (const t of ['counter', 'effects', 'deliveries', 'idem']) await pool.query(`DROP TABLE IF EXISTS "${prefix}_${t}"`);
    await pool.end();
  });

  const counter = async (): Promise<number> => (await pool.query(`SELECT n FROM "${prefix}_counter" WHERE name = 'handled'`)).rows[0].n;
  const effects = async (): Promise<Map<string, number>> =>
    new Map((await pool.query(`SELECT event_id, count(*)::int AS n FROM "${prefix}_effects" GROUP BY event_id`)).rows.map((r) => [r.event_id as string, r.n as number]));
  const deliveries = async (run: number): Promise<{ event_id: string; partition: number; offset: string; skipped: boolean }[]> =>
    (await pool.query(`SELECT event_id, partition, "offset", skipped FROM "${prefix}_deliveries" WHERE run = $1 ORDER BY seq`, [run])).rows;
  const committed = async (partition: number): Promise<bigint> => {
    const [topic] = await admin.fetchOffsets({ groupId: subscription, topics: [PRICE_TOPIC] });
    const p = topic!.partitions.find((x) => x.partition === partition);
    return BigInt(p!.offset);
  };

  it('T6 a record redelivered after SIGKILL between the committed transaction and the offset commit: the PostgreSQL side effect happens once, across the restart', async () => {
    const correlation = randomUUID();
    // One instrument and timeframe = one partition key: the events are consumed in publish order.
    const data = Array.from({ length: N }, (_, i) => priceLoaded('EUR/USD', 'H1', String(22031500 + i)));
    const killBarKey = data[KILL_AT]!['barKey'];
    // Run 2 joins the group only once run 1's killed member is out of it, when its session runs
    // out: 6 s (the broker's group.min.session.timeout.ms) instead of the default 30 s.
    const common = { T6_SUBSCRIPTION: subscription, T6_CORRELATION: correlation, T6_PREFIX: prefix, KAFKA_SESSION_TIMEOUT_MS: '6000' };

    // Run 1: dies on event KILL_AT, after its transaction committed.
    const first = startWorker({ ...common, T6_RUN: '1', T6_KILL_BARKEY: killBarKey });
    workers.push(first);
    await subscribed(first);
    const receipts = data.map((d) => gw.gateway.publisher().publish('PriceLoadingCompleted', d, { correlationid: correlation })!);
    const positions = await Promise.all(receipts.map((r) => r.delivered));
    const ids = receipts.map((r) => r.id);
    expect(new Set(positions.map((p) => p.partition)).size).toBe(1);
    const partition = positions[0]!.partition;

    const end1 = await Promise.race([first.exited, new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`worker 1 did not die: ${first.stderr()}`)), 60_000))]);
    expect(end1).toEqual({ code: null, signal: 'SIGKILL' });
    expect(first.lines.filter((l) => 'killing' in l)).toEqual([{ killing: ids[KILL_AT] }]);

    // The killed event's effect committed exactly once; nothing after it ran.
    const afterCrash = await effects();
    expect(afterCrash.get(ids[KILL_AT]!)).toBe(1);
    expect([...afterCrash.keys()].sort()).toEqual(ids.slice(0, KILL_AT + 1).sort());
    expect([...afterCrash.values()].every((n) => n === 1)).toBe(true);
    expect(await counter()).toBe(KILL_AT + 1);
    const run1 = await deliveries(1);
    expect(run1.map((d) => d.event_id)).toEqual(ids.slice(0, KILL_AT + 1));
    expect(run1.every((d) => !d.skipped)).toBe(true);
    expect(run1[KILL_AT]!.offset).toBe(positions[KILL_AT]!.offset.toString());
    // The offset of the killed record was never committed. Commits are batched (issue 7), so the
    // group's next offset is that record or an earlier one of this run: those come again too.
    const committedAtCrash = await committed(partition);
    expect(committedAtCrash).toBeLessThanOrEqual(positions[KILL_AT]!.offset);
    const firstAgain = Math.max(0, positions.findIndex((p) => p.offset >= committedAtCrash));

    // Run 2, same subscription name: the killed record comes again and is skipped as a duplicate.
    const second = startWorker({ ...common, T6_RUN: '2' });
    workers.push(second);
    await subscribed(second);
    await waitFor('all events handled', async () => (await counter()) >= N && (await deliveries(2)).length >= N - KILL_AT, 60_000, 100);
    await waitFor('the offsets committed past the last event', async () => (await committed(partition)) >= positions[N - 1]!.offset + 1n, 30_000, 100);
    second.child.kill('SIGTERM');
    const end2 = await second.exited;
    expect(end2).toEqual({ code: 0, signal: null });

    const run2 = await deliveries(2);
    // Every record from the committed offset comes again; those already done (up to the killed one) are skipped.
    expect(run2.map((d) => [d.event_id, d.skipped])).toEqual(ids.slice(firstAgain).map((id, i) => [id, firstAgain + i <= KILL_AT]));
    expect(run2.find((d) => d.event_id === ids[KILL_AT])?.offset).toBe(positions[KILL_AT]!.offset.toString()); // the very same record, redelivered
    const final = await effects();
    expect(await counter()).toBe(N);
    expect(final.size).toBe(N);
    expect([...final.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    const stats = second.lines.find((l) => 'stats' in l) as { stats: { handled: number; skipped: number } } | undefined;
    expect(stats?.stats.skipped).toBeGreaterThanOrEqual(1);
    expect(stats?.stats).toEqual({ handled: N - KILL_AT - 1, skipped: KILL_AT - firstAgain + 1, markFailed: 0 });
    const idem = await pool.query(`SELECT count(*)::int AS n FROM "${prefix}_idem" WHERE scope = $1 AND outcome = 'handled'`, [subscription]);
    expect(idem.rows[0].n).toBe(N);
  }, 240_000);
});
