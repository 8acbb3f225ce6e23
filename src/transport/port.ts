/**
 * The transport port: bytes in, bytes out, with Kafka's vocabulary (topic, partition, offset,
 * consumer group, record, header). It never sees a CloudEvent. Two adapters implement it: Kafka
 * (the only kafkajs user) and in-memory (same semantics: partitions, offsets, groups). One
 * contract suite (test/contract/transport.contract.ts) runs against both (bus spec T3).
 */

/** A record header; order is kept and repeated names stay visible (a poison check needs that). */
export type RecordHeader = readonly [name: string, value: Uint8Array];

/** A record to produce. `partition` absent: chosen by the Java-compatible murmur2 partitioner from the key. */
export interface OutboundRecord {
  readonly key: Uint8Array | null;
  /** null = tombstone. */
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeader[];
  readonly partition?: number;
  /** Record timestamp, epoch ms; default now. */
  readonly timestampMs?: number;
}

/** Where a produced record landed. */
export interface Position {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

/** A consumed record. */
export interface TransportRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** epoch ms */
  readonly timestampMs: number;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeader[];
}

/** Topic settings, from the catalog. Units: ms, bytes. */
export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  /** -1 = forever */
  readonly retentionMs: number;
  readonly cleanupPolicy: 'delete' | 'compact' | 'compact,delete';
  /** Largest record the topic accepts, bytes (Kafka `max.message.bytes`). */
  readonly maxMessageBytes?: number;
}

/** Where a new consumer group starts (Kafka `auto.offset.reset`); a known group resumes from its commits. */
export type StartFrom = 'latest' | 'earliest';

/** A named durable subscription's consumer-group membership. */
export interface GroupSpec {
  /** Consumer group id = subscription name (bus spec S1). */
  readonly group: string;
  readonly topics: readonly string[];
  /** For a group with no committed offset; default 'latest' (bus spec S1, T5). */
  readonly startFrom?: StartFrom;
  /** Client id suffix identifying the instance (bus spec T1: endpoint = service + instance). */
  readonly instanceId?: string;
}

/**
 * Called once per record, in offset order per partition, at most one record in flight per
 * partition. Resolving commits the record's offset (offset + 1) — at-least-once (bus spec S3).
 * Rejecting stops the consumption (it never skips the record); the bus layer classifies handler
 * failures itself and does not reject for ordinary handler errors.
 */
export type RecordHandler = (record: TransportRecord) => Promise<void>;

/** A running consumption. */
export interface Consumption {
  readonly group: string;
  /** Partitions currently assigned to this member. */
  assignments(): readonly { readonly topic: string; readonly partition: number }[];
  /** Settles when the consumption ends: resolves after stop(), rejects with the failure that stopped it. */
  readonly done: Promise<void>;
  /** Finishes the record in flight, commits, leaves the group. Idempotent. */
  stop(): Promise<void>;
}

/** Target for an offset reset (operators' replay). */
export type OffsetTarget =
  | { readonly kind: 'earliest' }
  | { readonly kind: 'latest' }
  | { readonly kind: 'timestamp'; readonly timestampMs: number }
  | { readonly kind: 'offset'; readonly partition: number; readonly offset: bigint };

/** End offset (the next offset to be written) of one partition. */
export interface PartitionOffset {
  readonly partition: number;
  readonly offset: bigint;
}

export interface ProduceOptions {
  /** Aborting gives up waiting (the records may still land: indeterminate, DESIGN "Known traps"). */
  readonly signal?: AbortSignal;
}

export interface Transport {
  readonly kind: 'kafka' | 'memory';
  /** Creates missing topics (never relies on broker auto-creation); existing topics are left as they are. */
  ensureTopics(specs: readonly TopicSpec[]): Promise<void>;
  /** Number of partitions of an existing topic. Errors: CEG_BROKER_UNAVAILABLE (retriable); an unknown topic is a non-retriable CEG_INVALID_NAME. */
  partitionCount(topic: string): Promise<number>;
  /**
   * Produces records to one topic. Resolves only after the broker holds every record (acks=all,
   * idempotent producer), with one Position per record in input order.
   * Errors: GatewayError CEG_BROKER_UNAVAILABLE (retriable) / CEG_DELIVERY_TIMEOUT (retriable, indeterminate).
   */
  produce(topic: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]>;
  /** Joins the group and resolves once the member holds its partitions. */
  consume(spec: GroupSpec, handler: RecordHandler): Promise<Consumption>;
  /** End offsets per partition (the offset the next record will get). */
  endOffsets(topic: string): Promise<readonly PartitionOffset[]>;
  /** Moves a group's committed offsets; the group must have no active member. */
  resetOffsets(group: string, topic: string, to: OffsetTarget): Promise<void>;
  /**
   * The largest record batch an existing topic takes, bytes (Kafka `max.message.bytes`, the
   * topic's own setting or the broker's default): what one partition's share of one produce
   * request may weigh. Errors: CEG_BROKER_UNAVAILABLE (retriable); CEG_INVALID_NAME for an unknown topic.
   */
  maxMessageBytes(topic: string): Promise<number>;
  /** true when the broker answers now. Never throws. */
  isHealthy(): Promise<boolean>;
  close(): Promise<void>;
}
