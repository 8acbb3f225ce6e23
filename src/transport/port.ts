/**
 * The transport port: bytes in, bytes out, with Kafka's vocabulary (topic, partition, offset,
 * consumer group, record, header). It never sees a CloudEvent. Three adapters implement it: Kafka
 * on kafkajs (its only user), Kafka on @platformatic/kafka (issue 14, `KAFKA_CLIENT`), and
 * in-memory (same semantics: partitions, offsets, groups). One contract suite
 * (test/contract/transport.contract.ts) runs against all three (bus spec T3).
 */
import type { OffsetResetCounts } from './out-of-range.js';

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

/**
 * A consumed record. `key`, `value` and the header values may be views of the fetched bytes (the
 * Kafka adapters hand on their client's Buffers, which are Uint8Arrays): to keep bytes beyond the
 * handling, copy them with `new Uint8Array(bytes)`; `.slice()` on a Buffer is another view, which
 * keeps the whole fetch alive.
 */
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
  /**
   * Start positions fixed earlier by the caller (a subscription's kind added by PATCH: the end
   * offsets when the PATCH was taken), per partition of `topics`. A partition listed here that has
   * no committed offset when this member is assigned it starts at this offset, which is committed
   * at once (as a 'latest' pin is), instead of at `startFrom`; a partition with a committed offset
   * keeps it (never moved, back or forth). Offsets are record offsets (the next record to read);
   * entries for topics the group does not read are ignored. Default none.
   */
  readonly startAt?: readonly TopicPartitionOffset[];
  /** Client id suffix identifying the instance (bus spec T1: endpoint = service + instance). */
  readonly instanceId?: string;
  /**
   * Commit batching: handled offsets are committed once this many records were handled since the
   * last commit, or `commitIntervalMs` passed, whichever comes first — and always before this
   * member gives up a partition (rebalance) and when it stops. Defaults 500 records, 1000 ms.
   */
  readonly commitEveryRecords?: number;
  readonly commitIntervalMs?: number;
  /**
   * How long stop() waits for the records in hand, ms (default 5000). Their signal is aborted at
   * once; a record still in hand at the deadline stays uncommitted (it comes again) and the member
   * leaves anyway.
   */
  readonly stopTimeoutMs?: number;
  /**
   * Partitions this member handles at once (each still one record at a time); default the
   * adapter's (Kafka: `partitionsConsumedConcurrently`, 3). The memory adapter runs every
   * partition independently and ignores it.
   */
  readonly partitionsConcurrently?: number;
  /**
   * Records of one partition handled at once (default 1: strictly one after the other, in offset
   * order — what per-key order needs). Above 1 (an unordered subscription), records start in
   * offset order, finish in any order, and a partition's commit never passes its lowest unfinished
   * record (src/transport/in-flight-window.ts). Adapters without a window (the in-memory adapter)
   * handle one at a time; that is always allowed. Both Kafka adapters have lanes.
   */
  readonly inFlightPerPartition?: number;
  /**
   * With `inFlightPerPartition` above 1: records with the same Kafka key are handled one after
   * the other in offset order, records of different keys alongside (per-key order, like Confluent
   * Parallel Consumer's KEY ordering); records without a key count as one key. Default false
   * (records of a partition start in offset order, finish in any order). Spec: issue 8
   * ("ordering: key" = per-key order).
   */
  readonly perKeyOrder?: boolean;
  /** Topics whose partitions are always handled one record at a time, whatever `inFlightPerPartition` says (a retry topic: its records wait in order). */
  readonly serialTopics?: readonly string[];
  /**
   * Fetch linger, ms (default 0 = none): after a fetch that brought a few records (a trickle, not
   * a backlog), the next fetch asks the broker to wait up to this long for more (Kafka's
   * `fetch.min.bytes` with `fetch.max.wait.ms`), so a stream of single events is fetched several at
   * a time instead of one fetch per produce. A fetch after an empty one never lingers: the first
   * record after a quiet spell is not delayed. Costs each record at most this much latency. Honoured
   * by the @platformatic/kafka adapter; kafkajs (one `minBytes` per consumer) and the in-memory
   * adapter ignore it. Spec: issue 8 (push p99 at 1,000 events/s: CPU headroom).
   */
  readonly fetchLingerMs?: number;
}

/**
 * What a record handler decided.
 * - `done` (or resolving with nothing): the record is processed; its offset is committed with the
 *   next commit (at-least-once, bus spec S3).
 * - `redeliver`: the record is not processed yet. Its partition is paused — other partitions keep
 *   flowing, the member keeps heartbeating — and the same record is delivered again after
 *   `afterMs` (ms), followed by the ones after it. A wait longer than the session timeout needs
 *   no rebalance. Spec: issue 7 ("retries that block nothing else").
 */
export type RecordDecision = { readonly kind: 'done' } | { readonly kind: 'redeliver'; readonly afterMs: number };

export const RECORD_DONE: RecordDecision = Object.freeze({ kind: 'done' });
/** The longest wait a timer can hold, ms (2³¹ − 1, about 24.8 days); longer waits are cut to it. */
export const MAX_REDELIVER_MS = 2_147_483_647;
export const redeliverAfter = (afterMs: number): RecordDecision =>
  Object.freeze({ kind: 'redeliver', afterMs: Number.isFinite(afterMs) ? Math.min(MAX_REDELIVER_MS, Math.max(0, Math.round(afterMs))) : MAX_REDELIVER_MS });

/** What a handler gets with each record. */
export interface RecordContext {
  /** Aborted when the member stops: give up promptly (the record stays uncommitted and comes again). A partition lost to a rebalance aborts {@link revoked} instead. */
  readonly signal: AbortSignal;
  /**
   * Aborted when this member no longer holds the record's partition (a rebalance gave it to another
   * member), while the member itself goes on; absent on consumptions without partition lanes. Work
   * not started yet (nothing sent) should be dropped: the partition's new owner handles the record
   * again from its last commit, so anything this member still sends is a duplicate, out of order
   * with the new owner's. Unlike {@link signal}, it does not ask to abort work already under way.
   */
  readonly revoked?: AbortSignal;
  /** Tells the group this member is alive; the adapter also heartbeats on its own while a record is in hand. Never throws. */
  heartbeat(): Promise<void>;
}

/**
 * Called once per record, in offset order per partition, at most one record in flight per
 * partition (unless the group asked for an in-flight window: `inFlightPerPartition`). Resolving with nothing or `done` marks the record processed (committed in batches,
 * never past a record not yet processed). Rejecting stops the consumption (it never skips the
 * record); the bus layer classifies handler failures itself and does not reject for ordinary
 * handler errors.
 */
export type RecordHandler = (record: TransportRecord, ctx: RecordContext) => Promise<RecordDecision | void>;

/** A running consumption. */
export interface Consumption {
  readonly group: string;
  /** Partitions currently assigned to this member. */
  assignments(): readonly { readonly topic: string; readonly partition: number }[];
  /** How often this member joined its group: 1 until a rebalance makes it join again. */
  joins(): number;
  /** Settles when the consumption ends: resolves after stop(), rejects with the failure that stopped it. */
  readonly done: Promise<void>;
  /** Aborts the records in hand, waits for them up to the stop deadline, commits what was processed, leaves the group. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Where a group-less read starts, per partition. `positions` reads only the partitions it lists,
 * each from its offset (a pull request continuing after a cursor, a dead-letter page); an offset
 * below the partition's log start (records deleted) or more than one past its end (the topic
 * deleted and created again) begins at the log start, as does a read whose position leaves the log
 * while it runs (Kafka OFFSET_OUT_OF_RANGE; src/transport/out-of-range.ts); one past the end waits
 * for new records.
 */
export type ReadStart =
  | { readonly kind: 'earliest' }
  | { readonly kind: 'latest' }
  | { readonly kind: 'timestamp'; readonly timestampMs: number }
  | { readonly kind: 'positions'; readonly positions: readonly TopicPartitionOffset[] };

/** One partition of one topic and an offset in it. */
export interface TopicPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

/**
 * A read of topics without a consumer group (operators' `tail`, `trace`): nothing is committed and
 * no group is left behind. Records arrive in offset order per partition, one at a time per partition.
 */
export interface ReadSpec {
  readonly topics: readonly string[];
  readonly from: ReadStart;
  /** Stop each partition after its end offset as of the start of the read (a bounded read). Default false (follow). */
  readonly untilEnd?: boolean;
}

/** A running read. `done` resolves when a bounded read reached its end offsets or after stop(). */
export interface Read {
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * A position to look up per partition without changing anything: `earliest` is the log start
 * offset, `latest` the end offset (the next offset to be written), `timestamp` the first record
 * whose timestamp is at or after the time, ms since the epoch (the end offset when there is none).
 * Spec: Kafka protocol ListOffsets (timestamps -2 earliest, -1 latest).
 */
export type OffsetQuery = { readonly kind: 'earliest' } | { readonly kind: 'latest' } | { readonly kind: 'timestamp'; readonly timestampMs: number };

/** Target for an offset reset (operators' replay). */
export type OffsetTarget = OffsetQuery | { readonly kind: 'offset'; readonly partition: number; readonly offset: bigint };

/** A group's committed offset of one partition: the next offset it will read; null when it has none. */
export interface CommittedOffset {
  readonly partition: number;
  readonly offset: bigint | null;
}

/** End offset (the next offset to be written) of one partition. */
export interface PartitionOffset {
  readonly partition: number;
  readonly offset: bigint;
}

/**
 * Who is in a consumer group now (Kafka DescribeGroups), as {@link Transport.groupMembers} answers
 * for a group with at least one member joined.
 */
export interface GroupDescription {
  /**
   * The group's state in Kafka's own spelling: 'Stable', or 'PreparingRebalance' /
   * 'CompletingRebalance' while members join or leave (any other state the broker names is passed
   * on as it spells it).
   */
  readonly state: string;
  /** Members joined now; always ≥ 1. */
  readonly members: number;
}

export interface ProduceOptions {
  /** Aborting gives up waiting (the records may still land: indeterminate, DESIGN "Known traps"). */
  readonly signal?: AbortSignal;
}

/** Why a broker health check ({@link Transport.isHealthy}) failed. */
export interface HealthFailure {
  /** The client's error, as the adapters word it (never a secret), e.g. `health check: connect ECONNREFUSED 127.0.0.1:1`. */
  readonly message: string;
  /**
   * false when waiting cannot mend it: the broker refused the SASL login or mechanism, an ACL, or
   * the client does not trust the broker's TLS certificate (src/transport/access-failure.ts);
   * true for an outage, a timeout or anything else.
   */
  readonly retriable: boolean;
}

export interface Transport {
  readonly kind: 'kafka' | 'memory';
  /**
   * Out-of-range resets of its groups' positions, by group and reason (the Kafka transports; a
   * pull subscription notes its own here). Read by `ce_gateway_offset_resets_total`.
   */
  readonly offsetResets?: OffsetResetCounts;
  /**
   * Creates missing topics (never relies on broker auto-creation); existing topics are left as they are.
   * A topic it creates, or finds created a moment before by another client (CreateTopics answering
   * "topic already exists"), is waited for: it resolves once the broker's metadata shows each with a
   * leader on every partition (the Kafka adapters: transport/topic-leaders.ts).
   * Errors: CEG_BROKER_UNAVAILABLE (retriable; `details.topics`) when the metadata does not show them
   * so within about the request timeout; CEG_CONFLICT / CEG_INVALID_NAME for a name the broker refuses.
   */
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
  /**
   * Reads topics without joining a durable group (read-only use: no commit, no group left behind).
   * `handler` rejecting stops the read and rejects `done`.
   */
  read(spec: ReadSpec, handler: (record: TransportRecord) => Promise<void>): Promise<Read>;
  /**
   * End offsets per partition (the offset the next record will get).
   * Errors: CEG_INVALID_NAME (unknown topic), CEG_BROKER_UNAVAILABLE (retriable, also on a timeout:
   * a read leaves nothing indeterminate).
   */
  endOffsets(topic: string): Promise<readonly PartitionOffset[]>;
  /** Moves a group's committed offsets; the group must have no active member. */
  resetOffsets(group: string, topic: string, to: OffsetTarget): Promise<void>;
  /**
   * Offsets per partition of `topic` that `at` resolves to, sorted by partition; nothing changes
   * (a replay's dry run, lag). Errors: CEG_INVALID_NAME (unknown topic), CEG_BROKER_UNAVAILABLE (retriable).
   */
  offsetsAt(topic: string, at: OffsetQuery): Promise<readonly PartitionOffset[]>;
  /**
   * A group's committed offsets for every partition of `topic`, sorted by partition (`offset` null
   * where the group has committed nothing). Works whether or not the group has members.
   * Errors: CEG_INVALID_NAME (unknown topic), CEG_BROKER_UNAVAILABLE (retriable).
   */
  committedOffsets(group: string, topic: string): Promise<readonly CommittedOffset[]>;
  /**
   * A group's committed offsets on several topics in one request (Kafka's OffsetFetch takes many
   * topics), by topic, each as {@link Transport.committedOffsets} answers it: the lag gauge reads
   * every subscription's group at each scrape, one request per group instead of one per topic.
   * Optional (the in-memory adapter has none): callers fall back to one call per topic.
   * Errors: as committedOffsets; CEG_INVALID_NAME when any of `topics` does not exist.
   */
  committedOffsetsOf?(group: string, topics: readonly string[]): Promise<ReadonlyMap<string, readonly CommittedOffset[]>>;
  /**
   * Commits offsets for a group that has no active member (pull cursors; a replay's reset),
   * without joining it; partitions not listed keep theirs.
   * Errors: CEG_INVALID_OPTIONS, retriable, when the group has active members (Kafka refuses
   *   member-less commits then); non-retriable for a partition outside the topic or a negative offset.
   */
  commitOffsets(group: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void>;
  /**
   * The members of consumer group `group` joined now, and the group's state (Kafka DescribeGroups).
   * Read-only: nothing is joined, created or committed. `undefined` when no member is joined: the
   * group does not exist (never used, deleted, or an empty name) or has none now (Kafka's 'Empty'
   * or 'Dead'; its committed offsets may remain: {@link Transport.committedOffsets}). Members of
   * any client count (this gateway's, a library subscriber's, another process's). A member that
   * stop()ped has left at once; one that died counts until the broker's session timeout expires it.
   * Errors: CEG_BROKER_UNAVAILABLE, retriable, when the broker cannot be reached or does not answer
   *   in time (a timeout here is not CEG_DELIVERY_TIMEOUT: nothing is written); non-retriable when
   *   the broker refuses for good (e.g. an untrusted certificate, no permission to describe the
   *   group); CEG_CLOSED after close().
   */
  groupMembers(group: string): Promise<GroupDescription | undefined>;
  /**
   * The largest record batch an existing topic takes, bytes (Kafka `max.message.bytes`, the
   * topic's own setting or the broker's default): what one partition's share of one produce
   * request may weigh. Errors: CEG_BROKER_UNAVAILABLE (retriable); CEG_INVALID_NAME for an unknown topic.
   */
  maxMessageBytes(topic: string): Promise<number>;
  /**
   * The consumer group session timeouts every broker accepts, ms: the highest
   * `group.min.session.timeout.ms` and the lowest `group.max.session.timeout.ms` of the brokers
   * (any may coordinate a group, and a join outside its bounds is refused with
   * INVALID_SESSION_TIMEOUT; transport/session-bounds.ts). undefined when no broker says: no
   * permission to describe their configuration (DESCRIBE_CONFIGS on the cluster), or no value given. Optional: the
   * in-memory transport has no broker. Errors: CEG_BROKER_UNAVAILABLE (retriable when unreachable).
   */
  groupSessionTimeoutBounds?(): Promise<{ readonly minMs: number; readonly maxMs: number } | undefined>;
  /** true when the broker answers now. Never throws. */
  isHealthy(): Promise<boolean>;
  /**
   * Why the latest {@link Transport.isHealthy} said false, or undefined when it said true, has not
   * run, or the transport cannot tell (optional: the in-memory transport has no broker). The CLI's
   * broker deadline ends at once on a failure that is not `retriable` and names the latest one when
   * the deadline passes. Never throws.
   */
  lastHealthFailure?(): HealthFailure | undefined;
  close(): Promise<void>;
}
