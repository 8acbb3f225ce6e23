import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { errorMessage } from '../../core/errors.js';
import type { Consumption, GroupSpec, RecordContext, RecordHandler, TransportRecord } from '../port.js';
import { RecordRunner } from '../record-runner.js';
import { fromKafkaError } from './errors.js';
import { fromKafkaHeaders } from './headers.js';
import type { KafkaTransportOptions } from './options.js';

type Assignment = readonly { readonly topic: string; readonly partition: number }[];

/** Where a new 'latest' group starts, per `topic\0partition`, fixed before it first joins. */
export type LatestPins = ReadonlyMap<string, string>;

const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** Rejections carry Errors; anything else thrown by a handler is wrapped (kept as `cause`). */
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err), { cause: err }));

const view = (b: Buffer | null): Uint8Array | null => (b === null ? null : new Uint8Array(b.buffer, b.byteOffset, b.byteLength));

function toRecord(topic: string, partition: number, m: KafkaMessage): TransportRecord {
  return Object.freeze({
    topic,
    partition,
    offset: BigInt(m.offset),
    timestampMs: Number(m.timestamp),
    key: view(m.key ?? null),
    value: view(m.value),
    headers: Object.freeze(fromKafkaHeaders(m.headers)),
  });
}

/**
 * One `consume()` call on Kafka: one kafkajs consumer in group `spec.group`.
 * - Records of a partition are handled one at a time in offset order (`eachBatch`, sequential
 *   loop); partitions run concurrently up to `partitionsConsumedConcurrently`.
 * - A processed record's offset is resolved at once and committed in batches (kafkajs autoCommit:
 *   every `commitEveryRecords` records or `commitIntervalMs`, at the end of every fetched batch,
 *   before rejoining when a heartbeat finds a rebalance, and before leaving). Only processed
 *   offsets are resolved, so a commit never passes a record not yet processed (at-least-once).
 * - `redeliver`: the partition is paused and the batch returns at once, so the next fetch of the
 *   other partitions is not held up (kafkajs fetches again only after every partition's batch
 *   returned); after the wait the partition resumes from the unresolved record. The fetch loop
 *   keeps heartbeating while partitions are paused, so a wait longer than the session timeout
 *   causes no rebalance.
 * - While a record is in hand the member heartbeats every `heartbeatIntervalMs`.
 * - stop(): the records in hand see their signal aborted; after `stopTimeoutMs` a record still in
 *   hand is left unresolved (it comes again) and the member leaves regardless of the handler.
 * - A handler rejection pauses the partition, lets records in flight on other partitions finish,
 *   disconnects (leaving the group) and rejects `done`; the failed record is not committed.
 * - A kafkajs CRASH with `restart: false`, or more than `maxRestarts` restarts without a successful
 *   join in between, rejects `done` too (kafkajs would otherwise restart forever).
 * Spec: bus spec S1, S3 (commit after handling), T4, T9; DESIGN "Known traps" (commit only
 *   processed offsets, commit before leaving a generation, bound restarts, surface a dead consumer,
 *   a sleeping eachBatch holds up every partition); issue 7 (batched commits, non-blocking retries,
 *   bounded stop).
 */
export class KafkaConsumption implements Consumption {
  readonly group: string;
  readonly done: Promise<void>;
  readonly #consumer: Consumer;
  readonly #opts: KafkaTransportOptions;
  readonly #pins: LatestPins;
  readonly #batches = new Set<Promise<void>>();
  readonly #handledOnce = new Set<string>();
  #assignment: Assignment = [];
  #joins = 0;
  #restarts = 0;
  #stopping = false;
  #failure: { readonly err: unknown } | undefined;
  #stopped: Promise<void> | undefined;
  #settle!: (failure: { readonly err: unknown } | undefined) => void;
  #onJoin: (() => void) | undefined;
  #onDeath: ((err: unknown) => void) | undefined;
  readonly #removers: (() => void)[] = [];
  readonly #runner: RecordRunner;
  readonly #commitEveryRecords: number;
  readonly #commitIntervalMs: number;
  #sinceCommit = 0;
  #lastCommitCheck = Date.now();

  private constructor(kafka: Kafka, spec: GroupSpec, handler: RecordHandler, opts: KafkaTransportOptions, pins: LatestPins) {
    this.group = spec.group;
    this.#opts = opts;
    this.#pins = pins;
    this.#runner = new RecordRunner({ handler, stopTimeoutMs: spec.stopTimeoutMs ?? 5000, log: opts.logger, group: spec.group, onFailure: (err) => this.#fail(err) });
    this.#commitEveryRecords = spec.commitEveryRecords ?? 500;
    this.#commitIntervalMs = spec.commitIntervalMs ?? 1000;
    this.done = new Promise<void>((resolve, reject) => {
      this.#settle = (f) => (f === undefined ? resolve() : reject(asError(f.err)));
    });
    this.done.catch(() => undefined); // nobody has to observe `done`
    this.#consumer = kafka.consumer({
      groupId: spec.group,
      sessionTimeout: opts.sessionTimeoutMs,
      heartbeatInterval: opts.heartbeatIntervalMs,
      rebalanceTimeout: opts.rebalanceTimeoutMs,
      maxWaitTimeInMs: opts.maxWaitTimeMs,
      allowAutoTopicCreation: false,
      retry: {
        retries: opts.retries,
        initialRetryTime: opts.initialRetryTimeMs,
        maxRetryTime: opts.maxRetryTimeMs,
        restartOnFailure: (err) => Promise.resolve(this.#mayRestart(err)),
      },
    });
  }

  /**
   * Connects, subscribes and runs the consumer; resolves once the GROUP_JOIN event reports this
   * member's assignment. Errors: GatewayError mapped by {@link fromKafkaError} (e.g.
   * CEG_BROKER_UNAVAILABLE, retriable) when the member cannot join; the consumer is disconnected.
   */
  static async start(kafka: Kafka, spec: GroupSpec, handler: RecordHandler, opts: KafkaTransportOptions, pins: LatestPins): Promise<KafkaConsumption> {
    const c = new KafkaConsumption(kafka, spec, handler, opts, pins);
    try {
      await c.#run(spec);
    } catch (err) {
      c.#stopping = true;
      await c.#consumer.disconnect().catch(() => undefined);
      c.#cleanup();
      throw fromKafkaError(err, { operation: 'consume', group: spec.group, topics: spec.topics });
    }
    return c;
  }

  assignments(): Assignment {
    return this.#assignment;
  }

  joins(): number {
    return this.#joins;
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#shutdown();
    return this.#stopped;
  }

  async #run(spec: GroupSpec): Promise<void> {
    const { GROUP_JOIN, CRASH } = this.#consumer.events;
    const joined = new Promise<void>((resolve, reject) => {
      this.#onJoin = resolve;
      this.#onDeath = reject;
    });
    this.#removers.push(
      this.#consumer.on(GROUP_JOIN, (e) => {
        this.#assignment = Object.freeze(
          Object.entries(e.payload.memberAssignment)
            .flatMap(([topic, partitions]) => partitions.map((partition) => Object.freeze({ topic, partition })))
            .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1)),
        );
        this.#restarts = 0;
        // Synchronous inside kafkajs's join, so the seek is in place before the first fetch.
        if (this.#joins++ === 0) this.#seekPins();
        this.#opts.logger.debug({ group: this.group, assignment: this.#assignment.map((a) => `${a.topic}/${a.partition}`) }, 'consumer joined its group');
        this.#onJoin?.();
      }),
      this.#consumer.on(CRASH, (e) => {
        this.#assignment = [];
        const err = e.payload.error;
        this.#opts.logger.error({ group: this.group, err: errorMessage(err), restart: e.payload.restart }, 'kafka consumer crashed');
        if (!e.payload.restart && !this.#stopping) this.#fail(fromKafkaError(err, { operation: 'consume', group: this.group }));
      }),
    );
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topics: [...spec.topics], fromBeginning: spec.startFrom === 'earliest' });
    await this.#consumer.run({
      autoCommit: true,
      autoCommitInterval: this.#commitIntervalMs,
      autoCommitThreshold: this.#commitEveryRecords,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: spec.partitionsConcurrently ?? this.#opts.partitionsConsumedConcurrently,
      eachBatch: (payload) => this.#track(this.#eachBatch(payload)),
    });
    await joined;
    this.#onDeath = undefined;
    await this.#commitPins();
  }

  /** A new 'latest' group starts where the log ended when consume() was called (not at fetch time). */
  #seekPins(): void {
    for (const { topic, partition } of this.#assignment) {
      const offset = this.#pins.get(tpKey(topic, partition));
      if (offset !== undefined) this.#consumer.seek({ topic, partition, offset });
    }
  }

  /** Stores the pinned start offsets, so a later owner of a still-unhandled partition cannot skip. */
  async #commitPins(): Promise<void> {
    const offsets = this.#assignment
      .filter(({ topic, partition }) => this.#pins.has(tpKey(topic, partition)) && !this.#handledOnce.has(tpKey(topic, partition)))
      .map(({ topic, partition }) => ({ topic, partition, offset: this.#pins.get(tpKey(topic, partition))! }));
    if (offsets.length === 0) return;
    try {
      await this.#consumer.commitOffsets(offsets);
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'could not store the start offsets of a new group');
    }
  }

  #track(p: Promise<void>): Promise<void> {
    this.#batches.add(p);
    const untrack = (): void => void this.#batches.delete(p);
    p.then(untrack, untrack);
    return p;
  }

  async #eachBatch(payload: EachBatchPayload): Promise<void> {
    const { topic, partition } = payload.batch;
    const ctx: RecordContext = {
      signal: this.#runner.signal,
      heartbeat: () => payload.heartbeat().catch((err: unknown) => this.#opts.logger.debug({ group: this.group, err: errorMessage(err) }, 'heartbeat failed')),
    };
    // Heartbeats while a slow record is in hand; kafkajs shares one heartbeat among concurrent callers.
    const beat = setInterval(() => void ctx.heartbeat(), this.#opts.heartbeatIntervalMs);
    try {
      for (const message of payload.batch.messages) {
        if (this.#stopping || !payload.isRunning() || payload.isStale()) return;
        const record = toRecord(topic, partition, message);
        const outcome = await this.#runner.run(record, ctx);
        if (outcome === 'abandoned') return; // stopping: left unresolved, it comes again
        if (outcome === 'failed') {
          payload.pause();
          return;
        }
        if (outcome.kind === 'redeliver') {
          this.#runner.resumeLater(outcome.afterMs, payload.pause(), { topic, partition });
          return; // the rest of the batch is fetched again after the resume
        }
        this.#handledOnce.add(tpKey(topic, partition));
        payload.resolveOffset(message.offset);
        // kafkajs's own check (commitOffsetsIfNecessary) walks every partition's offsets with Long
        // arithmetic: asked once per record it halved throughput. Count here, ask when due.
        if (++this.#sinceCommit >= this.#commitEveryRecords || Date.now() - this.#lastCommitCheck >= this.#commitIntervalMs) {
          this.#sinceCommit = 0;
          this.#lastCommitCheck = Date.now();
          // Commits when kafkajs's count or interval is reached; a stale generation throws and kafkajs rejoins.
          await payload.commitOffsetsIfNecessary();
        }
      }
    } finally {
      clearInterval(beat);
    }
    await payload.heartbeat();
  }

  #mayRestart(err: unknown): boolean {
    if (this.#stopping) return false;
    this.#restarts += 1;
    const restart = this.#restarts <= this.#opts.maxRestarts;
    this.#opts.logger.warn({ group: this.group, err: errorMessage(err), restarts: this.#restarts, maxRestarts: this.#opts.maxRestarts, restart }, 'kafka consumer failed');
    return restart;
  }

  #fail(err: unknown): void {
    this.#failure ??= { err };
    if (this.#onDeath !== undefined) {
      // Not joined yet: start() reports the failure instead of `done`.
      this.#onDeath(err);
      this.#onDeath = undefined;
      return;
    }
    void this.stop();
  }

  async #shutdown(): Promise<void> {
    this.#stopping = true;
    const cancelDeadline = this.#runner.beginStop();
    // Records in hand finish (or are abandoned at the deadline); the batches end with a commit of what was processed.
    while (this.#batches.size > 0) await Promise.allSettled([...this.#batches]);
    cancelDeadline();
    try {
      await this.#consumer.disconnect();
    } catch (err) {
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err) }, 'kafka consumer disconnect failed');
    }
    this.#assignment = [];
    this.#cleanup();
    this.#settle(this.#failure);
  }

  #cleanup(): void {
    for (const remove of this.#removers.splice(0)) remove();
  }
}
