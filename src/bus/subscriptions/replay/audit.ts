/**
 * The replay audit log: every replay the gateway began is appended to one Kafka topic, keyed by
 * the subscription's consumer group, kept forever (`retention.ms=-1`, `cleanup.policy=delete`: an
 * append-only log, never compacted away). Every instance follows the topic from its start (a
 * group-less read, like the definitions store) and keeps the newest {@link MAX_AUDIT_ENTRIES}
 * entries per subscription in memory; `list` first catches up to the topic's end offset, so a
 * replay answered by one instance is listed by every other one right after.
 *
 * What "began" means (docs/subscriptions.md "What the audit log holds"): a dry run; a replay that
 * paused delivery, whatever its end — `done`, `partial` (some topics moved, then a failure) or
 * `failed` (nothing moved). A request refused before anything happened (400, 404, 409, 403, a
 * broker not answering while `to` is resolved) is not an entry: nothing happened to the
 * subscription; the security audit line (`audit: true`, src/http/auth/access.ts) records it with
 * its outcome. As in Kafka, where `kafka-consumer-groups --reset-offsets` leaves no trace but the
 * commit and the authorizer log records every request, allowed or denied.
 * Spec: issue 9 ("Every replay is written to an audit log, readable at GET
 *   /subscriptions/{name}/replays as a JSON array of { at, by, to, dryRun, partitions, events }").
 */
import { z } from 'zod';
import { errorMessage, isGatewayError } from '../../../core/errors.js';
import type { Logger } from '../../../observability/index.js';
import type { OutboundRecord, TopicSpec, Transport, TransportRecord } from '../../../transport/port.js';
import { TopicFollower } from '../../follow/topic-follower.js';
import { partialPlanOf } from './plan.js';
import type { NotMovedReport, PartitionReport, ReplayOffsets } from './plan.js';
import type { CommitProgress } from './reset.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Entries kept per subscription for `GET …/replays` (the topic keeps them all). */
export const MAX_AUDIT_ENTRIES = 1000;

/**
 * How a replay ended: `done` (every planned partition moved; a dry run: planned), `partial` (the
 * commits of some topics went through, then a failure stopped it), `failed` (nothing moved).
 */
export const replayOutcomes = ['done', 'partial', 'failed'] as const;
export type ReplayOutcome = (typeof replayOutcomes)[number];

/** Why a replay did not finish: the error's code and message (cut to 1,000 characters). */
export interface ReplayFailure {
  readonly code: string;
  readonly message: string;
}

/** One audit entry, as `GET /subscriptions/{name}/replays` lists it. */
export interface ReplayAuditEntry {
  /** When the replay was answered, RFC 3339 UTC. */
  readonly at: string;
  /** Who asked: the partner's id, or `anonymous` until partners have identities (issue 11). */
  readonly by: string;
  /** `to` as requested, verbatim. */
  readonly to: unknown;
  readonly dryRun: boolean;
  /** How it ended (entries written before outcomes were recorded read as `done`: only those were written). */
  readonly outcome: ReplayOutcome;
  /** The partitions that moved (a dry run: would move), by partition key. */
  readonly partitions: Readonly<Record<string, PartitionReport>>;
  /** Records handed out again, in all (of the partitions that moved). */
  readonly events: number;
  /** Records moved past (a forward move), in all. */
  readonly skipped: number;
  /** `partial` and `failed`: the planned partitions that did not move (or not for sure), with their target. */
  readonly notMoved?: Readonly<Record<string, NotMovedReport>>;
  /** `partial` and `failed`: why it stopped. */
  readonly error?: ReplayFailure;
}

/**
 * What a replay answers (`POST …/replay`, `bus.replay`): its audit entry, and — for a replay that
 * finished (the offsets moved) whose entry could not be written — `auditFailure`, the write's
 * error as {@link failureOf} keeps it. Never part of an entry in the log.
 */
export interface ReplayAnswer extends ReplayAuditEntry {
  readonly auditFailure?: ReplayFailure;
}

const partitionSchema = z.object({ from: z.string(), to: z.string(), events: z.number(), skipped: z.number() });
const entrySchema = z.object({
  at: z.string(),
  by: z.string(),
  to: z.unknown(),
  dryRun: z.boolean(),
  outcome: z.enum(replayOutcomes).default('done'),
  partitions: z.record(z.string(), partitionSchema),
  events: z.number(),
  skipped: z.number(),
  notMoved: z.record(z.string(), z.object({ to: z.string() })).optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

/** The audit topic: one partition (one order), kept forever, append-only. */
export function replayAuditTopicSpec(name: string): TopicSpec {
  return { name, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' };
}

/** The audit topic that goes with a definitions topic: `<definitions topic>.replays` (e.g. `ce-gateway.subscriptions.replays`). */
export function replayAuditTopicOf(subscriptionsTopic: string): string {
  return `${subscriptionsTopic}.replays`;
}

/** The audit topic's record of `entry`: key = the consumer group, value = the entry as JSON. */
function auditRecord(group: string, entry: ReplayAuditEntry): OutboundRecord {
  return { key: enc.encode(group), value: enc.encode(JSON.stringify(entry)), headers: [['content-type', enc.encode('application/json')]] };
}

/** Where a replay's audit entry is appended: a {@link ReplayLog}, or a {@link ReplayAuditWriter}. */
export interface ReplayAuditSink {
  /** Appends `entry` under consumer group `group`. Errors: the transport's. */
  append(group: string, entry: ReplayAuditEntry): Promise<void>;
}

/**
 * Appends to the audit topic without following it: the replays of a process's own subscriptions
 * (`bus.replay`, `gateway.replay`) go to the same log as the HTTP ones, keyed by their consumer
 * group, in processes that serve no `GET …/replays` and so do not read the topic (a library
 * process). The topic is created on first use when missing (the spec {@link replayAuditTopicSpec},
 * the one `serve` creates), asked again after a failure.
 */
export class ReplayAuditWriter implements ReplayAuditSink {
  readonly topic: string;
  readonly #transport: Transport;
  #ensured: Promise<void> | undefined;

  constructor(transport: Transport, topic: string) {
    this.topic = topic;
    this.#transport = transport;
  }

  /** Appends `entry` once the topic exists; resolves when the broker acknowledged it. Errors: the transport's. */
  async append(group: string, entry: ReplayAuditEntry): Promise<void> {
    const ensured = (this.#ensured ??= this.#transport.ensureTopics([replayAuditTopicSpec(this.topic)]));
    try {
      await ensured;
    } catch (err) {
      if (this.#ensured === ensured) this.#ensured = undefined; // asked again next time
      throw err;
    }
    await this.#transport.produce(this.topic, [auditRecord(group, entry)]);
  }
}

export class ReplayLog implements ReplayAuditSink {
  readonly topic: string;
  readonly #log: Logger;
  readonly #follower: TopicFollower;
  readonly #byGroup = new Map<string, ReplayAuditEntry[]>();

  constructor(transport: Transport, topic: string, log: Logger) {
    this.topic = topic;
    this.#log = log;
    this.#follower = new TopicFollower({ transport, spec: replayAuditTopicSpec(topic), apply: (r) => this.#apply(r), log, label: 'the replay audit topic' });
  }

  /** Creates the topic when missing and follows it; resolves once caught up. Errors: the transport's. */
  async start(): Promise<void> {
    await this.#follower.start(60_000);
  }

  /** Appends an entry and waits until this instance has read it back. Errors: the transport's; CEG_BROKER_UNAVAILABLE when not read back in time. */
  async append(group: string, entry: ReplayAuditEntry, timeoutMs = 10_000): Promise<void> {
    await this.#follower.write([auditRecord(group, entry)], timeoutMs);
  }

  /** The replays of `group`, oldest first, once caught up with the topic. Errors: the transport's; CEG_BROKER_UNAVAILABLE when not caught up in time. */
  async list(group: string, timeoutMs = 10_000): Promise<readonly ReplayAuditEntry[]> {
    await this.#follower.catchUp(timeoutMs);
    return [...(this.#byGroup.get(group) ?? [])];
  }

  async stop(): Promise<void> {
    await this.#follower.stop();
  }

  #apply(r: TransportRecord): void {
    const group = r.key === null ? undefined : dec.decode(r.key);
    let json: unknown;
    try {
      json = r.value === null ? undefined : JSON.parse(dec.decode(r.value));
    } catch {
      json = undefined;
    }
    const parsed = entrySchema.safeParse(json);
    if (group === undefined || !parsed.success) {
      this.#log.warn({ topic: this.topic, offset: r.offset.toString() }, 'replay audit topic: record ignored (not an audit entry)');
      return;
    }
    const list = this.#byGroup.get(group) ?? [];
    list.push(parsed.data);
    if (list.length > MAX_AUDIT_ENTRIES) list.splice(0, list.length - MAX_AUDIT_ENTRIES);
    this.#byGroup.set(group, list);
  }
}

/**
 * Audit entries written behind the answer: the entry of a replay that failed is written while its
 * error is answered, since with the broker down the write waits for it (a produce and a read-back
 * of up to 10 s) and the caller would wait as long for an error it could act on now. Each write is
 * tracked here, not left floating: its failure is logged at error (with the entry's group) and
 * counted ({@link failures}), and {@link settled} waits for the writes under way (the gateway's
 * close, before it stops the audit log; tests). The entry of a finished replay that could not be
 * written before its answer is counted here too ({@link lost}): the audit log lacks it alike
 * (`ce_gateway_replay_audit_write_failures_total` counts both).
 */
export class BackgroundAuditWrites {
  readonly #log: Logger;
  readonly #pending = new Set<Promise<void>>();
  #failures = 0;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Starts `write` (the entry of `group`) without waiting for it. Never throws; `context` goes into the failure's log line. */
  start(group: string, write: () => Promise<void>, context: Readonly<Record<string, unknown>> = {}): void {
    const p: Promise<void> = write()
      .catch((err: unknown) => {
        this.#failures++;
        this.#log.error({ subscription: group, ...context, err: errorMessage(err) }, 'replay: could not write its failure to the audit log');
      })
      .finally(() => this.#pending.delete(p));
    this.#pending.add(p);
  }

  /**
   * Counts and logs at error the entry of a finished replay that could not be written before its
   * answer (which reports it as `auditFailure`); `context` goes into the log line (the entry
   * itself: the log is then where it is kept).
   */
  lost(group: string, err: unknown, context: Readonly<Record<string, unknown>> = {}): void {
    this.#failures++;
    this.#log.error({ subscription: group, ...context, err: errorMessage(err) }, 'replay: finished, but its entry could not be written to the audit log');
  }

  /** Writes under way now. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Entries that could not be written since start (each logged at error): those behind an answer, and those {@link lost}. */
  get failures(): number {
    return this.#failures;
  }

  /** Resolves once every write started before (or while) waiting has ended, written or failed. Never rejects. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }
}

/**
 * The error of a replay that did not finish, as its audit entry keeps it: a GatewayError's code and
 * message (cut to 1,000 characters: written for callers); an unexpected one (not a GatewayError,
 * or CEG_INTERNAL) as CEG_INTERNAL without its message — owners read the entry, and an internal
 * failure's text stays in the gateway's log, as its problem+json answer keeps it (codec/http/problem.ts).
 */
export function failureOf(err: unknown): ReplayFailure {
  if (isGatewayError(err) && err.code !== 'CEG_INTERNAL') return { code: err.code, message: errorMessage(err).slice(0, 1000) };
  return { code: 'CEG_INTERNAL', message: 'an unexpected failure: see the gateway\'s log' };
}

/**
 * The audit entry of a replay that stopped delivery and then failed (HTTP, coordinator.ts; library,
 * local.ts): outcome `partial` when the commit of some topic went through (`progress.committed`),
 * else `failed`; what moved and what did not (`notMoved`), and the error as {@link failureOf} keeps it.
 * `head`: when, who, the verbatim `to`, dryRun. Spec: docs/subscriptions.md "What the audit log holds".
 */
export function failedReplayEntry(head: Pick<ReplayAuditEntry, 'at' | 'by' | 'to' | 'dryRun'>, topics: readonly string[], targets: ReplayOffsets, progress: Readonly<CommitProgress>, err: unknown): ReplayAuditEntry {
  return { ...head, outcome: progress.committed.length > 0 ? 'partial' : 'failed', ...partialPlanOf(topics, progress.from, targets, progress.committed), error: failureOf(err) };
}
