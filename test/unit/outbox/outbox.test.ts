/** The outbox's pure parts: table names, the SQL built from them, row ⇄ record, relay options. */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { outboxTable, resolveOutboxRelayOptions } from '../../../src/bus/outbox/index.js';
import { recordOfRow, rowParams, rowValues } from '../../../src/bus/outbox/rows.js';
import type { ClaimedRow } from '../../../src/bus/outbox/rows.js';
import { claimRowsSql, insertSql, lockKeysSql, outboxDdl } from '../../../src/bus/outbox/table.js';
import { prepareEvent } from '../../../src/bus/publisher/attributes.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import { codecFixture } from '../bus/helpers.js';
import { caught as failure } from '../../helpers/errors.js';

describe('outboxTable', () => {
  it('accepts table and schema.table, quotes them, and uses the name as the NOTIFY channel', () => {
    expect(outboxTable()).toMatchObject({ name: 'ce_outbox', schema: undefined, table: 'ce_outbox', sql: '"ce_outbox"', channel: 'ce_outbox' });
    expect(outboxTable('billing.events_outbox')).toMatchObject({ schema: 'billing', table: 'events_outbox', sql: '"billing"."events_outbox"', channel: 'billing.events_outbox' });
    expect(outboxTable('_x9')).toMatchObject({ sql: '"_x9"' });
  });

  it.each([
    ['', 'empty'],
    ['Outbox', 'uppercase'],
    ['out box', 'space'],
    ['out"box', 'quote'],
    ['outbox; DROP TABLE x', 'injection'],
    ['a.b.c', 'three parts'],
    ['.outbox', 'empty schema'],
    ['9outbox', 'leading digit'],
    ['x'.repeat(49), 'table over 48'],
    [`${'s'.repeat(20)}.${'t'.repeat(43)}`, 'qualified over 63'],
  ])('refuses %j (%s) with CEG_INVALID_NAME naming the field', (name) => {
    const err = failure(() => outboxTable(name));
    expect(err.code).toBe('CEG_INVALID_NAME');
    expect(err.retriable).toBe(false);
    expect(err.details).toMatchObject({ field: 'table', table: name });
  });

  it('builds DDL and statements on the quoted name only', () => {
    const t = outboxTable('app.outbox');
    const ddl = outboxDdl(t);
    expect(ddl[0]).toBe('CREATE SCHEMA IF NOT EXISTS "app"');
    expect(ddl[1]).toContain('CREATE TABLE IF NOT EXISTS "app"."outbox"');
    expect(ddl.slice(2)).toEqual([
      'CREATE INDEX IF NOT EXISTS "outbox_unsent_idx" ON "app"."outbox" (id) WHERE sent_at IS NULL',
      'CREATE INDEX IF NOT EXISTS "outbox_key_unsent_idx" ON "app"."outbox" (partition_key, id) WHERE sent_at IS NULL',
      'CREATE INDEX IF NOT EXISTS "outbox_sent_at_idx" ON "app"."outbox" (sent_at) WHERE sent_at IS NOT NULL',
    ]);
    expect(outboxDdl(outboxTable('plain'))[0]).toContain('CREATE TABLE IF NOT EXISTS "plain"');
    expect(insertSql(t)).toContain("pg_notify($11, '')");
    // Claims lock keys first, never read "ids after the last one sent", and never skip locked rows.
    expect(lockKeysSql(t)).toContain('pg_try_advisory_xact_lock(hashtext($3), hashtext(h.partition_key))');
    // At most $2 rows in id order, cut after about $5 bytes (a prefix in id order), locked in id order.
    expect(claimRowsSql(t)).toMatch(/ORDER BY o\.id\s+LIMIT \$2\s/);
    expect(claimRowsSql(t)).toMatch(/w\.before < \$5::bigint/);
    expect(claimRowsSql(t)).toMatch(/ORDER BY o\.id\s+FOR UPDATE$/);
    expect(claimRowsSql(t)).not.toContain('SKIP LOCKED');
    expect(`${lockKeysSql(t)} ${claimRowsSql(t)}`).not.toMatch(/id\s*>\s*\$/);
  });
});

describe('outbox rows', () => {
  it('hold the record exactly as the codec built it and give it back unchanged', async () => {
    const { codec } = await codecFixture();
    const ev = prepareEvent(codec, { service: 'pdsp', instance: 'h1', dataschemaBase: 'urn:s:' }, 'SeriesUpdateCompleted', {
      instrument: 'EUR/USD',
      timeframe: 'H4',
      barKey: 'EUR-USD_H4__22031512',
      barsAppended: 1,
      seriesLength: 100,
      updateId: '0d4f5a8e-3a1c-4c55-9a0e-3f1c1d2e3f40',
      completedAt: '2022-03-15T12:00:01.250Z',
    })!;
    const record = codec.toRecord(ev.attributes, ev.value);
    const v = rowValues(ev.topic, ev.attributes, record);
    expect(v).toMatchObject({ topic: 'trading.series-update-completed', partitionKey: 'EUR-USD_H4', eventId: ev.attributes.id, eventSource: 'urn:pdsp:h1', eventType: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208' });
    expect(v.headerNames).toContain('ce_id');
    expect(v.headerNames).toContain('content-type');
    expect(rowParams(v)).toHaveLength(10);
    const row: ClaimedRow = {
      id: '1',
      topic: v.topic,
      partition_key: v.partitionKey,
      record_key: v.recordKey,
      header_names: [...v.headerNames],
      header_values: [...v.headerValues],
      value: v.value,
      timestamp_ms: String(v.timestampMs),
      event_id: v.eventId,
    };
    const back = recordOfRow(row);
    expect(Buffer.from(back.key!).toString()).toBe('EUR-USD_H4');
    expect(Buffer.from(back.value!)).toEqual(Buffer.from(record.value!));
    expect(back.headers.map(([n, b]) => [n, Buffer.from(b).toString()])).toEqual(record.headers.map(([n, b]) => [n, Buffer.from(b).toString()]));
    expect(back.timestampMs).toBe(record.timestampMs);
    const decoded = await codec.fromRecord({ topic: v.topic, partition: 0, offset: 0n, timestampMs: back.timestampMs!, key: back.key, value: back.value, headers: back.headers });
    expect(decoded.attributes).toMatchObject({ id: ev.attributes.id, partitionkey: 'EUR-USD_H4', eventname: 'SeriesUpdateCompleted' });
  });
});

describe('recordOfRow on a row that cannot be a record', () => {
  const good: ClaimedRow = {
    id: '7',
    topic: 't',
    partition_key: 'k',
    record_key: Buffer.from('k'),
    header_names: ['ce_id', 'content-type'],
    header_values: [Buffer.from('1'), Buffer.from('application/avro')],
    value: Buffer.from([0, 0, 0, 0, 1]),
    timestamp_ms: '1647345601250',
    event_id: 'e7',
  };

  it('takes a sound row', () => {
    expect(recordOfRow(good).headers.map(([n]) => n)).toEqual(['ce_id', 'content-type']);
  });

  it.each([
    ['a NULL header name', { header_names: ['ce_id', null] }, /header_names\[2\] is NULL/],
    ['a NULL header value', { header_values: [null, Buffer.from('x')] }, /header_values\[1\] \(header "ce_id"\) is NULL/],
    ['fewer values than names', { header_values: [Buffer.from('1')] }, /header_names has 2 elements but header_values 1/],
    ['more values than names', { header_values: [Buffer.from('1'), Buffer.from('2'), Buffer.from('3')] }, /header_values 3/],
    ['NULL header arrays', { header_names: null }, /header_names is NULL/],
    ['a negative timestamp', { timestamp_ms: '-5' }, /timestamp_ms -5 /],
    ['a timestamp beyond 2^53', { timestamp_ms: '9223372036854775807' }, /timestamp_ms 9223372036854775807 /],
    ['a value that is not bytes', { value: 'text' }, /value is not a byte string/],
  ])('%s: CEG_INVALID_EVENT naming the row and the problem', (_, patch, problem) => {
    const err = failure(() => recordOfRow({ ...good, ...(patch as unknown as Partial<ClaimedRow>) }));
    expect(err).toMatchObject({ code: 'CEG_INVALID_EVENT', retriable: false, details: { rowId: '7' } });
    expect((err as Error).message).toMatch(/^outbox row 7 \(event e7\) cannot be made a Kafka record: /);
    expect((err as Error).message).toMatch(problem);
  });
});

describe('resolveOutboxRelayOptions', () => {
  const transport = createMemoryTransport();

  it('applies the defaults', () => {
    const o = resolveOutboxRelayOptions({ connectionString: 'postgres://x@127.0.0.1/db', transport });
    expect(o).toMatchObject({ batchSize: 100, pollIntervalMs: 1000, publishTimeoutMs: 30_000, keepSentMs: 86_400_000, stopGraceMs: 10_000, listen: true, name: 'outbox-relay' });
    expect(o.table.sql).toBe('"ce_outbox"');
    expect(Object.isFrozen(o)).toBe(true);
  });

  it('reports every bad option at once', () => {
    const pool = new pg.Pool({ connectionString: 'postgres://x@127.0.0.1:1/db' });
    const err = failure(() => resolveOutboxRelayOptions({ pool, connectionString: 'postgres://x', transport, batchSize: 0, pollIntervalMs: 5, keepSentMs: -2, publishTimeoutMs: 1.5 }));
    void pool.end();
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.details.problems).toEqual([
      'pool or connectionString: exactly one',
      'batchSize: integer 1–10000',
      'pollIntervalMs: integer ms ≥ 10',
      'publishTimeoutMs: integer ms ≥ 1',
      'keepSentMs: integer ms ≥ −1',
    ]);
    expect(failure(() => resolveOutboxRelayOptions({ transport })).details.problems).toEqual(['pool or connectionString: exactly one']);
  });

  it('checks the table name', () => {
    expect(failure(() => resolveOutboxRelayOptions({ connectionString: 'postgres://x', transport, table: 'x;y' })).code).toBe('CEG_INVALID_NAME');
  });
});
