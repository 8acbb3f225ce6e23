/**
 * The outbox's real stack for tests: a run-unique catalog (SeriesUpdateCompleted on its own topic,
 * registered in the real registry), the Kafka transport, and a run-unique schema in the
 * PostgreSQL database of DATABASE_URL holding the outbox table. Nothing is shared with other runs.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { OutboxWriter, ensureOutboxSchema } from '../../../src/bus/outbox/index.js';
import type { OutboxReceipt } from '../../../src/bus/outbox/index.js';
import type { Catalog } from '../../../src/catalog/index.js';
import { defaultCatalogDir, parseCatalog, registerCatalog } from '../../../src/catalog/index.js';
import { EventCodec } from '../../../src/codec/event/index.js';
import type { SeriesUpdateCompletedPayload } from '../../../src/catalog/generated/index.js';
import { createConfluentRegistry } from '../../../src/registry/index.js';
import { transportOn } from '../../helpers/kafka-client.js';
import type { KafkaClient } from '../../helpers/kafka-client.js';
import type { KafkaTransportInput, Transport } from '../../../src/transport/index.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

export const KIND = 'SeriesUpdateCompleted';
export const IDENTITY = { service: 'pdsp', instance: 'outbox-test', dataschemaBase: 'urn:test:schema:' } as const;

/** A lowercase name safe as a topic prefix and as a PostgreSQL schema. */
export function runName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

/** The shipped catalog cut down to one kind on a run-unique topic. */
export function runCatalog(run: string, partitions: number): Catalog {
  const dir = defaultCatalogDir();
  const doc = parseYaml(readFileSync(join(dir, 'catalog.yaml'), 'utf8')) as { topics: Record<string, { partitions: number }>; kinds: { name: string; topic: string }[] };
  const kind = doc.kinds.find((k) => k.name === KIND)!;
  const topic = `${run}.${kind.topic}`;
  doc.topics = { [topic]: { ...doc.topics[kind.topic]!, partitions } };
  doc.kinds = [{ ...kind, topic }];
  return parseCatalog(JSON.stringify(doc), (p) => readFileSync(join(dir, p), 'utf8'), dir);
}

export interface OutboxFixture {
  readonly run: string;
  readonly topic: string;
  readonly table: string;
  readonly schema: string;
  readonly codec: EventCodec;
  readonly catalog: Catalog;
  readonly transport: Transport;
  readonly pool: pg.Pool;
  readonly writer: OutboxWriter;
  close(): Promise<void>;
}

/**
 * Builds the fixture; `kafka` overrides the transport's options (e.g. another broker); `client`:
 * the Kafka client behind the transport (default: this run's, `KAFKA_CLIENT`).
 */
export async function outboxFixture(opts: { partitions?: number; kafka?: Partial<KafkaTransportInput>; client?: KafkaClient } = {}): Promise<OutboxFixture> {
  const s = stackEnv();
  const run = runName('ob');
  const catalog = runCatalog(run, opts.partitions ?? 3);
  const registry = createConfluentRegistry({ url: s.schemaRegistryUrl, timeoutMs: 10_000 });
  const codec = new EventCodec(catalog, registry, await registerCatalog(registry, catalog));
  const transport = transportOn({ brokers: s.kafkaBrokers, clientId: run.replace(/_/g, '-'), ...opts.kafka }, opts.client);
  await transport.ensureTopics(catalog.topics);
  const pool = new pg.Pool({ connectionString: s.databaseUrl, max: 12 });
  pool.on('error', () => undefined);
  const schema = run;
  const table = `${schema}.outbox`;
  const c = await pool.connect();
  try {
    await ensureOutboxSchema(c, { table });
  } finally {
    c.release();
  }
  return {
    run,
    topic: catalog.topics[0]!.name,
    table,
    schema,
    codec,
    catalog,
    transport,
    pool,
    writer: new OutboxWriter({ codec, identity: IDENTITY, table }),
    async close() {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await pool.end();
      await transport.close();
    },
  };
}

/** SeriesUpdateCompleted data for an instrument (the key is `<instrument>_H4`); `seq` is carried in barsAppended. */
export function seriesUpdate(instrument: string, seq: number): SeriesUpdateCompletedPayload {
  return {
    instrument,
    timeframe: 'H4',
    barKey: `${instrument.replace(/[^A-Za-z0-9]/g, '-')}_H4__${String(22031512 + seq)}`,
    barsAppended: seq,
    seriesLength: 1000 + seq,
    updateId: randomUUID(),
    completedAt: '2022-03-15T12:00:01.250Z',
  };
}

/** Runs `work` in one transaction on a pooled connection: COMMIT when it resolves, ROLLBACK when it throws. */
export async function inTransaction<T>(f: Pick<OutboxFixture, 'pool'>, work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await f.pool.connect();
  try {
    await c.query('BEGIN');
    const result = await work(c);
    await c.query('COMMIT');
    return result;
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

/** Writes one event in its own committed transaction. */
export async function writeCommitted(f: OutboxFixture, instrument: string, seq: number): Promise<OutboxReceipt> {
  return inTransaction(f, async (c) => (await f.writer.write(c, KIND, seriesUpdate(instrument, seq)))!);
}

/**
 * In one committed transaction: one row per `renamed` entry (instrument `key`, seq 1) whose topic is
 * then set by hand to `topic` (a row edited or inserted outside the writer), then `good` rows of
 * instruments `K0`…`K<goodKeys−1>` (seq i on key `K<i % goodKeys>`) on the catalog's topic.
 */
export async function writeRowsRenamed(f: OutboxFixture, renamed: readonly { readonly key: string; readonly topic: string }[], good: number, goodKeys: number): Promise<void> {
  await inTransaction(f, async (c) => {
    for (const r of renamed) {
      const written = await f.writer.write(c, KIND, seriesUpdate(r.key, 1));
      await c.query(`UPDATE ${f.writer.table.sql} SET topic = $1 WHERE id = $2`, [r.topic, written!.rowId]);
    }
    for (let i = 1; i <= good; i++) await f.writer.write(c, KIND, seriesUpdate(`K${i % goodKeys}`, i));
  });
}

/** One consumed record, decoded. */
export interface Seen {
  readonly id: string;
  readonly source: string;
  readonly key: string;
  readonly seq: number;
  readonly partition: number;
  readonly offset: bigint;
}

/** Sum of a topic's end offsets: how many records it ever received. */
export async function recordCount(transport: Transport, topic: string): Promise<number> {
  const ends = await transport.endOffsets(topic);
  return Number(ends.reduce((a, p) => a + p.offset, 0n));
}

/**
 * Reads the whole topic from the start with a fresh group and decodes every record; waits until at
 * least `atLeast` records were read and every record the topic holds (its end offsets) was read.
 */
export async function readTopic(f: Pick<OutboxFixture, 'transport' | 'codec' | 'run'>, topic: string, atLeast: number, timeoutMs = 30_000): Promise<Seen[]> {
  const seen: Seen[] = [];
  const c = await f.transport.consume({ group: `${f.run}-read-${randomUUID()}`, topics: [topic], startFrom: 'earliest' }, async (record) => {
    const env = await f.codec.fromRecord(record);
    const data = env.data?.kind === 'json' ? (env.data.value as { barsAppended: number }) : undefined;
    seen.push({ id: env.attributes.id, source: env.attributes.source, key: String(env.attributes.partitionkey), seq: data?.barsAppended ?? -1, partition: record.partition, offset: record.offset });
  });
  try {
    await waitFor(`${atLeast} records on ${topic}`, async () => seen.length >= atLeast && seen.length >= (await recordCount(f.transport, topic)), timeoutMs, 100);
  } finally {
    await c.stop();
  }
  // Partition order, then offset: the order consumers see per key.
  return seen.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
}

/** Per key, the sequence numbers in topic order. */
export function seqByKey(seen: readonly Seen[]): Map<string, number[]> {
  const m = new Map<string, number[]>();
  for (const s of seen) {
    const l = m.get(s.key);
    if (l) l.push(s.seq);
    else m.set(s.key, [s.seq]);
  }
  return m;
}

/** Rows of the outbox table by state. */
export async function rowStates(f: Pick<OutboxFixture, 'pool' | 'table'>): Promise<{ total: number; unsent: number; attemptedUnsent: number; failedAttemptsUnsent: number }> {
  const [schema, table] = f.table.split('.');
  const r = await f.pool.query<{ total: string; unsent: string; attempted: string; attempts: string | null }>(
    `SELECT count(*) AS total, count(*) FILTER (WHERE sent_at IS NULL) AS unsent,
            count(*) FILTER (WHERE sent_at IS NULL AND attempts > 0) AS attempted,
            sum(attempts) FILTER (WHERE sent_at IS NULL) AS attempts
     FROM "${schema}"."${table}"`,
  );
  const row = r.rows[0]!;
  return { total: Number(row.total), unsent: Number(row.unsent), attemptedUnsent: Number(row.attempted), failedAttemptsUnsent: Number(row.attempts ?? 0) };
}
