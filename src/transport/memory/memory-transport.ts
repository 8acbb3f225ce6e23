import { GatewayError } from '../../core/errors.js';
import { partitionForKey } from '../partitioner.js';
import type {
  Read,
  ReadSpec,
  CommittedOffset, Consumption, GroupDescription, GroupSpec, OffsetQuery, OffsetTarget, OutboundRecord, PartitionOffset, Position, ProduceOptions,
  RecordHandler, TopicSpec, Transport, TransportRecord,
} from '../port.js';
import { assertNoCollision, assertTopicName } from '../../core/topic-name.js';
import { abortedProduce, checkCommitOffsets, checkTopicSpec, closedTransport, DEFAULT_MAX_MESSAGE_BYTES, groupBusy, unknownTopic } from '../topics.js';
import { MemoryGroup } from './group.js';
import { PartitionLog } from './log.js';
import { startMemoryRead } from './read.js';

/** Options of {@link createMemoryTransport}. */
export interface MemoryTransportOptions {
  /** Clock for record timestamps, epoch ms; default `Date.now`. */
  readonly now?: () => number;
}

interface MemoryTopic {
  readonly spec: TopicSpec;
  readonly logs: readonly PartitionLog[];
  roundRobin: number;
}

const utf8 = new TextEncoder();

/**
 * The in-memory transport: the embedded default when no broker is configured (not durable: all
 * state is lost with the process), with Kafka's semantics — topics of N partitions, append-only
 * logs with bigint offsets from 0, keyed records placed by the Java-compatible murmur2
 * partitioner, null keys round-robin, consumer groups with committed offsets, range assignment
 * and rebalancing, at most one record in flight per partition and group, commit after handling.
 * Topics are never auto-created. Handlers always run on a later macrotask, never inside produce().
 * Spec: DESIGN "Delivery" (T3: in-memory adapter with the same semantics); bus spec S1, S3, T4,
 *   T5, T9, T10, T14.
 */
export function createMemoryTransport(opts: MemoryTransportOptions = {}): Transport {
  return new MemoryTransport(opts.now ?? Date.now);
}

class MemoryTransport implements Transport {
  readonly kind = 'memory' as const;
  readonly #now: () => number;
  readonly #topics = new Map<string, MemoryTopic>();
  readonly #groups = new Map<string, MemoryGroup>();
  readonly #members = new Set<Consumption>();
  #closed = false;

  constructor(now: () => number) {
    this.#now = now;
  }

  ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    return this.#guard(() => {
      specs.forEach(checkTopicSpec);
      assertNoCollision(specs.map((s) => s.name).filter((n) => !this.#topics.has(n)), this.#topics.keys());
      for (const spec of specs) {
        if (this.#topics.has(spec.name)) continue;
        const logs = Array.from({ length: spec.partitions }, () => new PartitionLog());
        this.#topics.set(spec.name, { spec: Object.freeze({ ...spec }), logs, roundRobin: 0 });
      }
    });
  }

  partitionCount(topic: string): Promise<number> {
    return this.#guard(() => this.#topic(topic).logs.length);
  }

  produce(topic: string, records: readonly OutboundRecord[], opts: ProduceOptions = {}): Promise<readonly Position[]> {
    return this.#guard(() => {
      if (opts.signal?.aborted === true) throw abortedProduce(topic, false, opts.signal.reason);
      const t = this.#topic(topic);
      const maxBytes = t.spec.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
      // Validate the whole call first: either every record is appended or none.
      const placed = records.map((r, index) => {
        const size = (r.key?.length ?? 0) + (r.value?.length ?? 0) + r.headers.reduce((n, [k, v]) => n + utf8.encode(k).length + v.length, 0);
        if (size > maxBytes) {
          throw new GatewayError('CEG_PAYLOAD_TOO_LARGE', `record ${index} is ${size} bytes; topic ${topic} accepts ${maxBytes}`, {
            retriable: false,
            details: { topic, index, bytes: size, maxMessageBytes: maxBytes },
          });
        }
        return { record: r, partition: this.#choosePartition(t, r, index) };
      });
      const timestampMs = this.#now();
      return placed.map(({ record, partition }): Position => {
        const log = t.logs[partition]!;
        const offset = log.end;
        const stored: TransportRecord = Object.freeze({
          topic,
          partition,
          offset,
          timestampMs: record.timestampMs ?? timestampMs,
          // Copies (`new Uint8Array`, not `.slice()`, which is a view on a Buffer): the log must not change with the caller's bytes.
          key: record.key === null ? null : new Uint8Array(record.key),
          value: record.value === null ? null : new Uint8Array(record.value),
          headers: Object.freeze(record.headers.map(([name, value]) => Object.freeze([name, new Uint8Array(value)] as const))),
        });
        log.append(stored);
        return Object.freeze({ topic, partition, offset });
      });
    });
  }

  async consume(spec: GroupSpec, handler: RecordHandler): Promise<Consumption> {
    await this.#guard(() => {
      if (spec.group.length === 0) {
        throw new GatewayError('CEG_INVALID_OPTIONS', 'group: non-empty name required', { retriable: false, details: { field: 'group' } });
      }
      if (spec.topics.length === 0) {
        throw new GatewayError('CEG_INVALID_OPTIONS', 'topics: at least one topic required', { retriable: false, details: { field: 'topics', group: spec.group } });
      }
      spec.topics.forEach((t) => this.#topic(t));
    });
    const group = this.#group(spec.group);
    const member = await group.join([...new Set(spec.topics)], spec.startFrom ?? 'latest', handler, spec.stopTimeoutMs, spec.startAt);
    this.#members.add(member);
    void member.done.then(
      () => this.#members.delete(member),
      () => this.#members.delete(member),
    );
    return member;
  }

  async read(spec: ReadSpec, handler: (record: TransportRecord) => Promise<void>): Promise<Read> {
    const logs = await this.#guard(() => spec.topics.map((topic) => ({ topic, logs: this.#topic(topic).logs })));
    return startMemoryRead(logs, spec, handler);
  }

  endOffsets(topic: string): Promise<readonly PartitionOffset[]> {
    return this.#guard(() => this.#topic(topic).logs.map((log, partition) => ({ partition, offset: log.end })));
  }

  async resetOffsets(groupName: string, topic: string, to: OffsetTarget): Promise<void> {
    const offsets = to.kind === 'offset' ? [{ partition: to.partition, offset: to.offset }] : await this.offsetsAt(topic, to);
    await this.commitOffsets(groupName, topic, offsets);
  }

  offsetsAt(topic: string, at: OffsetQuery): Promise<readonly PartitionOffset[]> {
    return this.#guard(() => this.#topic(topic).logs.map((log, partition) => ({ partition, offset: at.kind === 'earliest' ? 0n : at.kind === 'latest' ? log.end : log.offsetForTime(at.timestampMs) })));
  }

  committedOffsets(groupName: string, topic: string): Promise<readonly CommittedOffset[]> {
    return this.#guard(() => {
      const group = this.#group(groupName);
      return this.#topic(topic).logs.map((_log, partition) => ({ partition, offset: group.committed(topic, partition) ?? null }));
    });
  }

  commitOffsets(groupName: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> {
    return this.#guard(() => {
      const t = this.#topic(topic);
      const group = this.#group(groupName);
      checkCommitOffsets(topic, t.logs.length, offsets);
      if (group.hasMembers) throw groupBusy(groupName, topic, 'active');
      for (const o of offsets) group.setCommitted(topic, o.partition, o.offset);
    });
  }

  groupMembers(groupName: string): Promise<GroupDescription | undefined> {
    // Looked up, not created: asking about a group leaves no group behind.
    return this.#guard(() => this.#groups.get(groupName)?.describe());
  }

  maxMessageBytes(topic: string): Promise<number> {
    return this.#guard(() => this.#topic(topic).spec.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
  }

  isHealthy(): Promise<boolean> {
    return Promise.resolve(!this.#closed);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#members].map((m) => m.stop()));
  }

  /** Runs a synchronous step as a promise; a closed transport refuses every call. */
  #guard<T>(step: () => T): Promise<T> {
    try {
      if (this.#closed) throw closedTransport(this.kind);
      return Promise.resolve(step());
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  #topic(name: string): MemoryTopic {
    assertTopicName(name);
    const t = this.#topics.get(name);
    if (t === undefined) throw unknownTopic(name);
    return t;
  }

  #group(name: string): MemoryGroup {
    let g = this.#groups.get(name);
    if (g === undefined) {
      g = new MemoryGroup(name, (topic) => this.#topic(topic).logs);
      this.#groups.set(name, g);
    }
    return g;
  }

  #choosePartition(t: MemoryTopic, r: OutboundRecord, index: number): number {
    const n = t.logs.length;
    if (r.partition !== undefined) {
      if (!Number.isInteger(r.partition) || r.partition < 0 || r.partition >= n) {
        throw new GatewayError('CEG_INVALID_OPTIONS', `record ${index}: partition ${r.partition} outside 0…${n - 1} of ${t.spec.name}`, {
          retriable: false,
          details: { topic: t.spec.name, index, field: 'partition' },
        });
      }
      return r.partition;
    }
    if (r.key !== null) return partitionForKey(r.key, n);
    return t.roundRobin++ % n;
  }
}
