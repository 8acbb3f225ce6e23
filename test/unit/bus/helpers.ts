/** Shared set-up of the bus tests: a real codec on the in-memory registry, and a Transport double that fails on purpose. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Publisher, RecordPublisher } from '../../../src/bus/publisher/index.js';
import { subscribe } from '../../../src/bus/subscriber/index.js';
import type { SubscribeOptions, Subscription } from '../../../src/bus/subscriber/index.js';
import type { RetryPolicy } from '../../../src/core/retry.js';
import { silentLogger } from '../../../src/observability/index.js';
import { defaultCatalogDir, loadCatalog, parseCatalog, registerCatalog } from '../../../src/catalog/index.js';
import type { Catalog } from '../../../src/catalog/index.js';
import { EventCodec } from '../../../src/codec/event/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { createMemoryRegistry } from '../../../src/registry/index.js';
import type { SchemaRegistry } from '../../../src/registry/port.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type {
  Read,
  ReadSpec,
  Consumption, GroupDescription, GroupSpec, CommittedOffset, OffsetQuery, OffsetTarget, OutboundRecord, PartitionOffset, Position, ProduceOptions, RecordHandler, TopicSpec, Transport, TransportRecord,
} from '../../../src/transport/port.js';

export interface CodecFixture {
  readonly catalog: Catalog;
  readonly registry: SchemaRegistry;
  readonly codec: EventCodec;
}

/** The package catalog registered in a fresh in-memory registry, and its codec. */
export async function codecFixture(catalog: Catalog = loadCatalog()): Promise<CodecFixture> {
  const registry = createMemoryRegistry();
  const latest = await registerCatalog(registry, catalog);
  return { catalog, registry, codec: new EventCodec(catalog, registry, latest) };
}

/** What the next produce call does: throw this error, or wait for this promise first. */
export type ProduceStep = { readonly fail: Error } | { readonly wait: Promise<void> };

/**
 * A real Transport (the in-memory one underneath) whose produce calls follow a script: each call
 * takes the next step (fail, or wait then produce); with no step left it produces normally.
 * Records every produce call (topic and record count).
 */
export class ScriptedTransport implements Transport {
  readonly kind = 'memory' as const;
  readonly inner: Transport = createMemoryTransport();
  readonly steps: ProduceStep[] = [];
  readonly calls: { readonly topic: string; readonly records: readonly OutboundRecord[] }[] = [];
  /** Fail every produce to these topics, always. */
  readonly alwaysFail = new Map<string, Error>();

  ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    return this.inner.ensureTopics(specs);
  }
  partitionCount(topic: string): Promise<number> {
    return this.inner.partitionCount(topic);
  }
  async produce(topic: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> {
    this.calls.push({ topic, records });
    const always = this.alwaysFail.get(topic);
    if (always !== undefined) throw always;
    const step = this.steps.shift();
    if (step !== undefined && 'fail' in step) throw step.fail;
    if (step !== undefined) await step.wait;
    return this.inner.produce(topic, records, opts);
  }
  consume(spec: GroupSpec, handler: RecordHandler): Promise<Consumption> {
    return this.inner.consume(spec, handler);
  }
  read(spec: ReadSpec, handler: (record: TransportRecord) => Promise<void>): Promise<Read> {
    return this.inner.read(spec, handler);
  }
  endOffsets(topic: string): Promise<readonly PartitionOffset[]> {
    return this.inner.endOffsets(topic);
  }
  resetOffsets(group: string, topic: string, to: OffsetTarget): Promise<void> {
    return this.inner.resetOffsets(group, topic, to);
  }
  offsetsAt(topic: string, at: OffsetQuery): Promise<readonly PartitionOffset[]> {
    return this.inner.offsetsAt(topic, at);
  }
  committedOffsets(group: string, topic: string): Promise<readonly CommittedOffset[]> {
    return this.inner.committedOffsets(group, topic);
  }
  commitOffsets(group: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> {
    return this.inner.commitOffsets(group, topic, offsets);
  }
  groupMembers(group: string): Promise<GroupDescription | undefined> {
    return this.inner.groupMembers(group);
  }
  maxMessageBytes(topic: string): Promise<number> {
    return this.inner.maxMessageBytes(topic);
  }
  isHealthy(): Promise<boolean> {
    return this.inner.isHealthy();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** A promise with its resolve function, to hold a produce until the test releases it. */
export function gate(): { readonly promise: Promise<void>; readonly release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}

export const brokerDown = (): GatewayError => new GatewayError('CEG_BROKER_UNAVAILABLE', 'broker down', { retriable: true });
export const tooLarge = (): GatewayError => new GatewayError('CEG_PAYLOAD_TOO_LARGE', 'record too large', { retriable: false });

export const topic = (name: string, partitions = 1): TopicSpec => ({ name, partitions, retentionMs: -1, cleanupPolicy: 'delete' });

const enc = new TextEncoder();
export const rec = (value: string, key: string | null = null): OutboundRecord => ({ key: key === null ? null : enc.encode(key), value: enc.encode(value), headers: [] });
export const text = (b: Uint8Array | null): string | null => (b === null ? null : new TextDecoder().decode(b));

/** Lets pending timers and I/O callbacks run. */
export const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The package catalog with PriceLoadingCompleted declared `publish: false`. */
export function catalogWithUnpublishedPrice(): Catalog {
  const dir = defaultCatalogDir();
  const yaml = readFileSync(join(dir, 'catalog.yaml'), 'utf8').replace('publish: true', 'publish: false');
  return parseCatalog(yaml, (rel) => readFileSync(join(dir, rel), 'utf8'), dir);
}

/** Reads `count` records of a topic from the start with a throw-away group. */
export async function readRecords(transport: Transport, topic: string, count: number): Promise<TransportRecord[]> {
  const out: TransportRecord[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const c = await transport.consume({ group: `reader-${Math.random()}`, topics: [topic], startFrom: 'earliest' }, (r) => {
    out.push(r);
    if (out.length === count) done();
    return Promise.resolve();
  });
  await all;
  await c.stop();
  return out;
}

/**
 * Subscriptions on the memory transport with a publisher beside them, for the subscriber's unit
 * tests. `setup()` gives a fresh transport with the catalog's topics; `cleanup()` (in `afterEach`)
 * unsubscribes and closes everything `setup()` made.
 */
export function subscriberFixtures(defaults: { subscription: string; retry: RetryPolicy; startFrom?: 'earliest' | 'latest' }) {
  const subs: Subscription[] = [];
  const transports: Transport[] = [];
  async function setup() {
    const fx = await codecFixture();
    const transport = createMemoryTransport();
    transports.push(transport);
    await transport.ensureTopics(fx.catalog.topics);
    const records = new RecordPublisher(transport, { queueCapacity: 100, maxBatch: 10, retry: defaults.retry }, silentLogger());
    const publisher = new Publisher(fx.codec, records, { service: 'pdsp', instance: 'host-1', dataschemaBase: 'http://x/schemas/ids/' });
    const sub = async (o: Partial<SubscribeOptions> & Pick<SubscribeOptions, 'handler'>) => {
      const s = await subscribe(transport, fx.codec, silentLogger(), { kinds: ['PriceLoadingCompleted'], ...defaults, ...o });
      subs.push(s);
      return s;
    };
    return { ...fx, transport, records, publisher, sub };
  }
  async function cleanup(): Promise<void> {
    await Promise.allSettled(subs.splice(0).map((s) => s.unsubscribe()));
    await Promise.all(transports.splice(0).map((t) => t.close()));
  }
  /** Registers a subscription made outside `setup().sub` for cleanup. */
  const track = (s: Subscription): void => void subs.push(s);
  return { setup, cleanup, track };
}
