import { describe, expect, it } from 'vitest';
import { Publisher, RecordPublisher, processRunId } from '../../../src/bus/publisher/index.js';
import { runHandling } from '../../../src/bus/correlation/index.js';
import type { Catalog } from '../../../src/catalog/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { silentLogger } from '../../../src/observability/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { Transport } from '../../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded } from '../../fixtures/events.js';
import { catalogWithUnpublishedPrice, codecFixture, gate, ScriptedTransport, readRecords as readAll, text } from './helpers.js';
import { caught, caughtAsync } from '../../helpers/errors.js';
import { waitFor } from '../../helpers/wait.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const BASE = 'http://gw.example/schemas/ids/';
const data = priceLoaded();

async function setup(opts: { catalog?: Catalog; transport?: Transport; queueCapacity?: number } = {}) {
  const fx = await codecFixture(opts.catalog);
  const transport = opts.transport ?? createMemoryTransport();
  await transport.ensureTopics(fx.catalog.topics);
  const records = new RecordPublisher(
    transport,
    { queueCapacity: opts.queueCapacity ?? 100, maxBatch: 10, retry: retryPolicy({ maxAttempts: 2, initialDelayMs: 1, factor: 2, maxDelayMs: 10, jitter: 0 }) },
    silentLogger(),
  );
  const publisher = new Publisher(fx.codec, records, { service: 'pdsp', instance: 'host-1', dataschemaBase: BASE });
  return { ...fx, transport, records, publisher };
}

describe('Publisher.publish: the envelope is filled from the model and the process', () => {
  it('fills id, source, type, time, dataschema, correlationid, runid, eventname, eventclass, schemaversion, partitionkey', async () => {
    const { publisher, transport, codec, records } = await setup();
    const latest = codec.binding(PRICE_LOADING_COMPLETED)!;
    const receipt = publisher.publish('PriceLoadingCompleted', data, { time: new Date('2024-05-06T07:08:09.123Z'), subject: 'EUR/USD H4' })!;
    expect(receipt.id).toMatch(UUID);
    expect(receipt.correlationid).toMatch(UUID);
    expect(receipt.correlationid).not.toBe(receipt.id);
    const position = await receipt.delivered;
    expect(position.topic).toBe(PRICE_TOPIC);

    const [record] = await readAll(transport, PRICE_TOPIC, 1);
    expect(record!.partition).toBe(position.partition);
    expect(record!.offset).toBe(position.offset);
    expect(text(record!.key)).toBe('EUR-USD_H4');
    const env = await codec.fromRecord(record!);
    expect(env.attributes).toEqual({
      specversion: '1.0',
      id: receipt.id,
      source: 'urn:pdsp:host-1',
      type: PRICE_LOADING_COMPLETED,
      time: '2024-05-06T07:08:09.123Z',
      subject: 'EUR/USD H4',
      dataschema: `${BASE}${latest.schema.id}`,
      correlationid: receipt.correlationid,
      runid: processRunId,
      eventname: 'PriceLoadingCompleted',
      eventclass: 'notification',
      schemaversion: 1,
      partitionkey: 'EUR-USD_H4',
      datacontenttype: 'application/json', // decoded data is natural JSON
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/), // outside a handler: a new trace
    });
    expect(env.data?.kind === 'json' && env.data.value).toMatchObject({ instrument: 'EUR/USD', timeframe: 'H4', barsLoaded: 120 });
    expect(processRunId).toMatch(UUID);
    expect(records.stats()).toMatchObject({ enqueued: 1, published: 1 });
  });

  it('accepts the kind by eventId as well as by business name; time defaults to now in UTC', async () => {
    const { publisher, transport, codec } = await setup();
    const before = Date.now();
    await publisher.publish(PRICE_LOADING_COMPLETED, data)!.delivered;
    const [record] = await readAll(transport, PRICE_TOPIC, 1);
    const env = await codec.fromRecord(record!);
    expect(env.attributes.type).toBe(PRICE_LOADING_COMPLETED);
    expect(env.attributes.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(env.attributes.time!)).toBeGreaterThanOrEqual(before);
    expect(env.attributes.subject).toBeUndefined();
    expect(env.attributes.causationid).toBeUndefined();
  });

  it('starts a new correlation chain for each publish outside a handler', async () => {
    const { publisher } = await setup();
    const a = publisher.publish('PriceLoadingCompleted', data)!;
    const b = publisher.publish('PriceLoadingCompleted', data)!;
    expect(a.correlationid).not.toBe(b.correlationid);
    expect(a.id).not.toBe(b.id);
    await Promise.all([a.delivered, b.delivered]);
  });

  it('inside a handler inherits correlationid, continues the trace and sets causationid to the handled event id', async () => {
    const { publisher, transport, codec } = await setup();
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const receipt = await runHandling({ correlationid: 'corr-1', eventId: 'evt-parent', traceparent }, async () => {
      await Promise.resolve(); // across an await
      return publisher.publish('PriceLoadingCompleted', data)!;
    });
    expect(receipt.correlationid).toBe('corr-1');
    await receipt.delivered;
    const [record] = await readAll(transport, PRICE_TOPIC, 1);
    const env = await codec.fromRecord(record!);
    expect(env.attributes.correlationid).toBe('corr-1');
    expect(env.attributes.causationid).toBe('evt-parent');
    // The trace continues: same trace-id and flags, a new parent-id (W3C Trace Context).
    expect(env.attributes.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    expect(env.attributes.traceparent).not.toBe(traceparent);
  });

  it('an explicit correlationid wins over the inherited one', async () => {
    const { publisher } = await setup();
    const receipt = runHandling({ correlationid: 'inherited', eventId: 'evt-0' }, () => publisher.publish('PriceLoadingCompleted', data, { correlationid: 'explicit' })!);
    expect(receipt.correlationid).toBe('explicit');
    await receipt.delivered;
  });
});

describe('Publisher.publish: receipts serialize', () => {
  it('JSON.stringify of a receipt and of its delivered position works: the offset as decimal text', async () => {
    const { publisher } = await setup();
    const receipt = publisher.publish('PriceLoadingCompleted', data)!;
    expect(JSON.parse(JSON.stringify(receipt))).toEqual({ id: receipt.id, correlationid: receipt.correlationid });
    const position = await receipt.delivered;
    expect(typeof position.offset).toBe('bigint');
    expect(JSON.parse(JSON.stringify(position))).toEqual({ topic: PRICE_TOPIC, partition: position.partition, offset: position.offset.toString() });
    expect(JSON.parse(JSON.stringify({ receipt, position: await receipt.deliveredWithin(1000) }))).toEqual({
      receipt: { id: receipt.id, correlationid: receipt.correlationid },
      position: { topic: PRICE_TOPIC, partition: position.partition, offset: position.offset.toString() },
    });
  });
});

describe('Publisher.publish: refusals', () => {
  it('refuses an unknown kind with CEG_UNKNOWN_TYPE naming the type attribute; nothing queued', async () => {
    const { publisher, records } = await setup();
    // @ts-expect-error not a kind of the catalog: refused at compile time, and at run time
    const err = caught(() => publisher.publish('NoSuchKind', data));
    expect(err.code).toBe('CEG_UNKNOWN_TYPE');
    expect(err.retriable).toBe(false);
    expect(err.details).toEqual({ attribute: 'type' });
    expect(records.stats().enqueued).toBe(0);
  });

  it('refuses data that does not fit the schema with CEG_INVALID_DATA naming the field; nothing queued', async () => {
    const { publisher, records } = await setup();
    // @ts-expect-error the generated payload type refuses it at compile time too
    const err = caught(() => publisher.publish('PriceLoadingCompleted', { ...priceLoaded(), barsLoaded: 'many' }));
    expect(err.code).toBe('CEG_INVALID_DATA');
    expect(err.retriable).toBe(false);
    expect(JSON.stringify(err.details)).toContain('/barsLoaded');
    expect(records.stats().enqueued).toBe(0);
  });

  it('refuses data over the kind\'s maxDataBytes bound with CEG_PAYLOAD_TOO_LARGE; nothing queued', async () => {
    const { publisher, records } = await setup();
    const err = caught(() => publisher.publish('PriceLoadingCompleted', { ...priceLoaded(), barKey: 'x'.repeat(2000) }));
    expect(err.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(err.retriable).toBe(false);
    expect(err.details.field).toBe('/data');
    expect(records.stats().enqueued).toBe(0);
  });

  it('throws CEG_QUEUE_FULL (retriable) when the outbound queue has no room', async () => {
    const transport = new ScriptedTransport();
    const g = gate();
    transport.steps.push({ wait: g.promise });
    const { publisher, records } = await setup({ transport, queueCapacity: 1 });
    const first = publisher.publish('PriceLoadingCompleted', data)!; // in flight
    const second = publisher.publish('PriceLoadingCompleted', data)!; // queued
    const err = caught(() => publisher.publish('PriceLoadingCompleted', data));
    expect(err.code).toBe('CEG_QUEUE_FULL');
    expect(err.retriable).toBe(true);
    g.release();
    await Promise.all([first.delivered, second.delivered]);
    expect(records.stats()).toMatchObject({ published: 2, rejected: 1 });
  });

  it('a publish: false kind publishes nothing and returns undefined unless overridden', async () => {
    const { publisher, records, transport } = await setup({ catalog: catalogWithUnpublishedPrice() });
    expect(publisher.publish('PriceLoadingCompleted', data)).toBeUndefined();
    expect(publisher.publish(PRICE_LOADING_COMPLETED, data)).toBeUndefined();
    expect(records.stats().enqueued).toBe(0);
    const forced = publisher.publish('PriceLoadingCompleted', data, { overridePublishPolicy: true });
    expect(forced).toBeDefined();
    await forced!.delivered;
    const ends = await transport.endOffsets(PRICE_TOPIC);
    expect(ends.reduce((n, e) => n + e.offset, 0n)).toBe(1n);
  });

  it('the delivered promise rejects with the transport error when the retry budget runs out', async () => {
    const transport = new ScriptedTransport();
    transport.alwaysFail.set(PRICE_TOPIC, new GatewayError('CEG_BROKER_UNAVAILABLE', 'down', { retriable: true }));
    const { publisher, records } = await setup({ transport });
    const receipt = publisher.publish('PriceLoadingCompleted', data)!;
    await expect(receipt.delivered).rejects.toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE' });
    expect(records.stats()).toMatchObject({ failed: 1, retried: 1 });
  });
});

describe('Publisher.publish: the attributes a caller gives are checked like at ingress', () => {
  it.each([
    [{ correlationid: '' }, 'correlationid'],
    [{ subject: '' }, 'subject'],
    [{ time: new Date(Number.NaN) }, 'time'],
    [{ time: new Date('+010000-01-01T00:00:00Z') }, 'time'],
  ])('refuses %j with CEG_INVALID_ATTRIBUTE naming %s; nothing queued', async (opts, attribute) => {
    const { publisher, records } = await setup();
    const err = caught(() => publisher.publish('PriceLoadingCompleted', data, opts));
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'CEG_INVALID_ATTRIBUTE', retriable: false });
    expect(err.details.violations).toEqual([expect.objectContaining({ attribute })]);
    expect(records.stats().enqueued).toBe(0);
  });
});

describe('Publisher.publish: fire and forget (P2)', () => {
  it('a delivery nobody awaits that fails for good is counted, not an unhandled rejection (that ended the process)', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const transport = new ScriptedTransport();
      transport.alwaysFail.set(PRICE_TOPIC, new GatewayError('CEG_BROKER_UNAVAILABLE', 'down', { retriable: true }));
      const { publisher, records } = await setup({ transport });
      publisher.publish('PriceLoadingCompleted', data); // not awaited
      await waitFor('the delivery failed', () => records.stats().failed === 1, 5000, 5);
      // Node reports an unhandled rejection after the microtasks of the turn it happened in.
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
      // Awaiting still sees the failure.
      const awaited = publisher.publish('PriceLoadingCompleted', data)!;
      await expect(awaited.delivered).rejects.toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE' });
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('Publisher.publish: a delivery result with a deadline (P2)', () => {
  it('deliveredWithin resolves with the position when the broker acknowledges in time', async () => {
    const { publisher } = await setup();
    const receipt = publisher.publish('PriceLoadingCompleted', data)!;
    const position = await receipt.deliveredWithin(5_000);
    expect(position).toEqual(await receipt.delivered);
  });

  it('deliveredWithin rejects with CEG_DELIVERY_TIMEOUT (retriable, indeterminate) when the broker does not answer in time; the record still lands', async () => {
    const transport = new ScriptedTransport();
    let release!: () => void;
    transport.steps.push({ wait: new Promise<void>((r) => (release = r)) });
    const { publisher } = await setup({ transport });
    const receipt = publisher.publish('PriceLoadingCompleted', data)!;
    const err = await caughtAsync(receipt.deliveredWithin(50));
    expect(err).toMatchObject({ code: 'CEG_DELIVERY_TIMEOUT', retriable: true });
    expect(err.details).toMatchObject({ id: receipt.id, indeterminate: true });
    release();
    expect((await receipt.delivered).offset).toBe(0n);
  });

  it('deliveredWithin(Infinity) waits without a bound; a deadline a Node timer cannot hold (3e9, NaN, < 0) rejects with CEG_INVALID_OPTIONS instead of a false timeout after 1 ms', async () => {
    const transport = new ScriptedTransport();
    let release!: () => void;
    transport.steps.push({ wait: new Promise<void>((r) => (release = r)) });
    const { publisher } = await setup({ transport });
    const receipt = publisher.publish('PriceLoadingCompleted', data)!;
    for (const bad of [3e9, Number.NaN, -1]) {
      const err = await caughtAsync(receipt.deliveredWithin(bad));
      expect(err).toMatchObject({ code: 'CEG_INVALID_OPTIONS', retriable: false, details: { field: 'timeoutMs' } });
    }
    const unbounded = receipt.deliveredWithin(Infinity);
    // Still waiting 20 ms later (a 1 ms timer would have rejected by now).
    const early = await Promise.race([unbounded.then(() => 'settled', () => 'rejected'), new Promise((r) => setTimeout(() => r('waiting'), 20))]);
    expect(early).toBe('waiting');
    release();
    expect((await unbounded).offset).toBe(0n);
  });
});
