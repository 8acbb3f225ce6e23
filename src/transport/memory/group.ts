import type { Consumption, GroupDescription, RecordHandler, StartFrom, TopicPartitionOffset } from '../port.js';
import { describedGroup } from '../topics.js';
import { rangeAssign } from './assign.js';
import type { PartitionLog } from './log.js';
import { PartitionWorker } from './worker.js';
import { neverRejects } from '../../core/never-rejects.js';

/** Looks up a topic's partition logs (the topic is known to exist). */
export type LogLookup = (topic: string) => readonly PartitionLog[];

const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/**
 * A consumer group of the memory transport: committed offsets plus the live members.
 * Joins, leaves and rebalances run one at a time (a promise chain). A rebalance first stops every
 * worker that loses its partition — each finishes its record in flight and commits it — and only
 * then starts the new owners, so a partition never has two records in flight.
 * Spec: bus spec S1 (named subscription = group), S3 (commit after handling), T9/T10.
 */
export class MemoryGroup {
  readonly name: string;
  readonly #logs: LogLookup;
  readonly #committed = new Map<string, bigint>();
  readonly #members = new Map<string, MemoryMember>();
  #chain: Promise<void> = Promise.resolve();
  /** Joins and leaves queued or running: the group is rebalancing while there are any. */
  #pending = 0;
  #memberSeq = 0;

  constructor(name: string, logs: LogLookup) {
    this.name = name;
    this.#logs = logs;
  }

  /** true while any member is joined (resetOffsets needs an idle group). */
  get hasMembers(): boolean {
    return this.#members.size > 0;
  }

  /** Its live members as Kafka's DescribeGroups tells them: undefined with none; 'PreparingRebalance' while a join or leave runs, else 'Stable'. */
  describe(): GroupDescription | undefined {
    return describedGroup(this.#pending > 0 ? 'PreparingRebalance' : 'Stable', this.#members.size);
  }

  committed(topic: string, partition: number): bigint | undefined {
    return this.#committed.get(tpKey(topic, partition));
  }

  setCommitted(topic: string, partition: number, offset: bigint): void {
    this.#committed.set(tpKey(topic, partition), offset);
  }

  /** Creates a member, joins it and rebalances; resolves once it holds its partitions. */
  async join(topics: readonly string[], startFrom: StartFrom, handler: RecordHandler, stopTimeoutMs?: number, startAt: readonly TopicPartitionOffset[] = []): Promise<MemoryMember> {
    const id = `member-${String(++this.#memberSeq).padStart(6, '0')}`;
    const member = new MemoryMember(this, id, topics, startFrom, handler, stopTimeoutMs);
    await this.#serial(() => {
      // Positions fixed by the caller (GroupSpec.startAt): only where nothing is committed yet.
      for (const p of startAt) if (topics.includes(p.topic) && this.committed(p.topic, p.partition) === undefined) this.setCommitted(p.topic, p.partition, p.offset);
      if (this.#members.size === 0 && startFrom === 'latest') this.#pinLatest(topics);
      this.#members.set(id, member);
      return this.#rebalance();
    });
    return member;
  }

  /** Removes a member: its workers finish their records in flight, then the rest rebalance. */
  leave(member: MemoryMember): Promise<void> {
    return this.#serial(async () => {
      this.#members.delete(member.id);
      await member.stopAllWorkers();
      await this.#rebalance();
    });
  }

  /**
   * A new group told to start at 'latest' starts at the end offsets of the moment it first joins
   * (the Kafka adapter pins the same way), so a later owner of an unhandled partition cannot skip.
   */
  #pinLatest(topics: readonly string[]): void {
    for (const topic of topics) {
      this.#logs(topic).forEach((log, partition) => {
        if (this.committed(topic, partition) === undefined) this.setCommitted(topic, partition, log.end);
      });
    }
  }

  #serial(step: () => Promise<void>): Promise<void> {
    this.#pending++;
    const run = this.#chain.then(step).finally(() => this.#pending--);
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #rebalance(): Promise<void> {
    const wanted = new Map<string, Set<string>>(); // member id → tp keys
    for (const id of this.#members.keys()) wanted.set(id, new Set());
    const topics = new Set([...this.#members.values()].flatMap((m) => m.topics));
    for (const topic of topics) {
      const subscribed = [...this.#members.values()].filter((m) => m.topics.includes(topic)).map((m) => m.id);
      for (const [id, partitions] of rangeAssign(subscribed, this.#logs(topic).length)) {
        for (const p of partitions) wanted.get(id)?.add(tpKey(topic, p));
      }
    }
    for (const m of this.#members.values()) m.joined();
    // Revoke first: the old owner finishes (and commits) its record in flight.
    await Promise.all([...this.#members.values()].map((m) => m.revokeExcept(wanted.get(m.id) ?? new Set())));
    for (const member of this.#members.values()) {
      for (const key of wanted.get(member.id) ?? []) {
        if (member.holds(key)) continue;
        const [topic, p] = key.split('\u0000') as [string, string];
        const partition = Number(p);
        const log = this.#logs(topic)[partition]!;
        const from = this.committed(topic, partition) ?? (member.startFrom === 'earliest' ? 0n : log.end);
        member.startWorker(key, new PartitionWorker(topic, partition, log, from, member.handler,
          (next) => this.setCommitted(topic, partition, next),
          (err) => member.fail(err),
          member.stopTimeoutMs));
      }
    }
  }
}

/** One `consume()` call of the memory transport. */
export class MemoryMember implements Consumption {
  readonly id: string;
  readonly topics: readonly string[];
  readonly startFrom: StartFrom;
  readonly handler: RecordHandler;
  readonly stopTimeoutMs: number | undefined;
  readonly done: Promise<void>;
  readonly #group: MemoryGroup;
  readonly #workers = new Map<string, PartitionWorker>();
  #leaving: Promise<void> | undefined;
  #failure: { readonly err: unknown } | undefined;
  #settle!: (failure: { readonly err: unknown } | undefined) => void;

  constructor(group: MemoryGroup, id: string, topics: readonly string[], startFrom: StartFrom, handler: RecordHandler, stopTimeoutMs?: number) {
    this.#group = group;
    this.stopTimeoutMs = stopTimeoutMs;
    this.id = id;
    this.topics = topics;
    this.startFrom = startFrom;
    this.handler = handler;
    this.done = new Promise<void>((resolve, reject) => {
      this.#settle = (failure) => (failure === undefined ? resolve() : reject(failure.err instanceof Error ? failure.err : new Error(String(failure.err), { cause: failure.err })));
    });
    // A caller that never looks at `done` must not see an unhandled rejection.
    this.done.catch(() => undefined);
  }

  get group(): string {
    return this.#group.name;
  }

  assignments(): readonly { readonly topic: string; readonly partition: number }[] {
    return [...this.#workers.values()]
      .map((w) => ({ topic: w.topic, partition: w.partition }))
      .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  }

  stop(): Promise<void> {
    this.#leaving ??= this.#group.leave(this).then(() => this.#settle(this.#failure));
    return this.#leaving;
  }

  /** A handler rejected: the member leaves (nothing more is handled) and `done` rejects. */
  fail(err: unknown): void {
    this.#failure ??= { err };
    // Leaving stops the workers, whose loops catch their handlers; the failure goes to `done`.
    neverRejects(this.stop());
  }

  #joins = 0;

  joins(): number {
    return this.#joins;
  }

  /** The group rebalanced with this member in it (memory: every rebalance is a join). */
  joined(): void {
    this.#joins++;
  }

  holds(key: string): boolean {
    return this.#workers.has(key);
  }

  startWorker(key: string, worker: PartitionWorker): void {
    this.#workers.set(key, worker);
  }

  async revokeExcept(keep: ReadonlySet<string>): Promise<void> {
    const revoked = [...this.#workers].filter(([key]) => !keep.has(key));
    for (const [key] of revoked) this.#workers.delete(key);
    await Promise.all(revoked.map(([, w]) => w.stop()));
  }

  stopAllWorkers(): Promise<void> {
    return this.revokeExcept(new Set());
  }
}
