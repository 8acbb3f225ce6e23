/**
 * The @platformatic/kafka transport as the rest of the package gets it: the options are checked at
 * once, the library is loaded at the transport's first use. Why: loading the library (its modules
 * and the validators it compiles at load) took about 0.5 s of CPU, paid by every process that
 * imported the app or the transport module — each unit test file (the in-memory transport) and
 * each CLI run on kafkajs — whether or not it ever talked to Kafka. This module imports no value
 * from the library or from the modules that do (./platformatic-transport.ts and the ones it
 * imports): `import type` only.
 */
import type { KafkaTransportInput, KafkaTransportOptions } from '../kafka/options.js';
import { resolveKafkaTransportOptions } from '../kafka/options.js';
import { OffsetResetCounts } from '../out-of-range.js';
import type {
  CommittedOffset, Consumption, GroupDescription, GroupSpec, HealthFailure, OffsetQuery, OffsetTarget, OutboundRecord, PartitionOffset, Position,
  ProduceOptions, Read, ReadSpec, RecordHandler, TopicSpec, Transport, TransportRecord,
} from '../port.js';
import type { PlatformaticTransportCore } from './platformatic-transport.js';

/**
 * The Kafka transport on @platformatic/kafka (`KAFKA_CLIENT=platformatic`, the default): what it
 * does, its logs and errors are those of PlatformaticTransport (./platformatic-transport.ts).
 * Options: the kafkajs adapter's ({@link resolveKafkaTransportOptions}), validated here, at once.
 * The library and the transport's clients are created at the first call of a transport method
 * (any of them; close() of a transport never used creates nothing); every call waits for that,
 * in the order the calls were made. Errors: CEG_INVALID_OPTIONS (not retriable) for bad options;
 * each method's own, as PlatformaticTransport has them (a call after close() meets a closed
 * transport: CEG_CLOSED). Spec: DESIGN "Kafka mapping"; issue 14.
 */
export function createPlatformaticTransport(input: KafkaTransportInput): Transport {
  return new LazyPlatformaticTransport(resolveKafkaTransportOptions(input));
}

// Required: a call the port adds, optional or not, must be handed on here too (a caller tests an
// optional call's presence: a wrapper without it would silently turn it off).
class LazyPlatformaticTransport implements Required<Transport> {
  readonly kind = 'kafka' as const;
  /** Created here so that readers of the counts (the resets gauge) can hold them before the first call. */
  readonly offsetResets = new OffsetResetCounts();
  readonly #opts: KafkaTransportOptions;
  #loading: Promise<PlatformaticTransportCore> | undefined;
  #core: PlatformaticTransportCore | undefined;
  #closed = false;

  constructor(opts: KafkaTransportOptions) {
    this.#opts = opts;
  }

  /** The transport itself, loaded (with the library) at the first call. Errors: a failed import (a broken install). */
  #transport(): Promise<PlatformaticTransportCore> {
    this.#loading ??= this.#load();
    return this.#loading;
  }

  async #load(): Promise<PlatformaticTransportCore> {
    const { openPlatformaticTransport } = await import('./platformatic-transport.js');
    const core = openPlatformaticTransport(this.#opts, this.offsetResets);
    this.#core = core;
    // Closed before its first call: the call meets a closed transport, as it did before loading was deferred.
    if (this.#closed) await core.close();
    return core;
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    return (await this.#transport()).ensureTopics(specs);
  }

  async partitionCount(topic: string): Promise<number> {
    return (await this.#transport()).partitionCount(topic);
  }

  produce(topic: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> {
    // The ingress hot path: once loaded, no extra promise per call.
    const core = this.#core;
    if (core !== undefined) return core.produce(topic, records, opts);
    return this.#transport().then((t) => t.produce(topic, records, opts));
  }

  async consume(spec: GroupSpec, handler: RecordHandler): Promise<Consumption> {
    return (await this.#transport()).consume(spec, handler);
  }

  async read(spec: ReadSpec, handler: (record: TransportRecord) => Promise<void>): Promise<Read> {
    return (await this.#transport()).read(spec, handler);
  }

  async endOffsets(topic: string): Promise<readonly PartitionOffset[]> {
    return (await this.#transport()).endOffsets(topic);
  }

  async resetOffsets(group: string, topic: string, to: OffsetTarget): Promise<void> {
    return (await this.#transport()).resetOffsets(group, topic, to);
  }

  async offsetsAt(topic: string, at: OffsetQuery): Promise<readonly PartitionOffset[]> {
    return (await this.#transport()).offsetsAt(topic, at);
  }

  async committedOffsets(group: string, topic: string): Promise<readonly CommittedOffset[]> {
    return (await this.#transport()).committedOffsets(group, topic);
  }

  async committedOffsetsOf(group: string, topics: readonly string[]): Promise<ReadonlyMap<string, readonly CommittedOffset[]>> {
    return (await this.#transport()).committedOffsetsOf(group, topics);
  }

  async commitOffsets(group: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> {
    return (await this.#transport()).commitOffsets(group, topic, offsets);
  }

  async groupMembers(group: string): Promise<GroupDescription | undefined> {
    return (await this.#transport()).groupMembers(group);
  }

  async maxMessageBytes(topic: string): Promise<number> {
    return (await this.#transport()).maxMessageBytes(topic);
  }

  async groupSessionTimeoutBounds(): Promise<{ readonly minMs: number; readonly maxMs: number } | undefined> {
    return (await this.#transport()).groupSessionTimeoutBounds();
  }

  async isHealthy(): Promise<boolean> {
    return (await this.#transport()).isHealthy();
  }

  /** Before the first call no health check has run: undefined, as the transport itself answers then. */
  lastHealthFailure(): HealthFailure | undefined {
    return this.#core?.lastHealthFailure();
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Never called: there is no client to close, and the library need not be loaded for that.
    if (this.#loading === undefined) return;
    // A failed load left nothing open either (the call that started it has its error).
    const core = await this.#loading.catch(() => undefined);
    await core?.close();
  }
}
