/**
 * The replay audit log: every replay (dry runs included) is appended to one Kafka topic, keyed by
 * the subscription's consumer group, kept forever (`retention.ms=-1`, `cleanup.policy=delete`: an
 * append-only log, never compacted away). Every instance follows the topic from its start (a
 * group-less read, like the definitions store) and keeps the newest {@link MAX_AUDIT_ENTRIES}
 * entries per subscription in memory; `list` first catches up to the topic's end offset, so a
 * replay answered by one instance is listed by every other one right after.
 * Spec: issue 9 ("Every replay is written to an audit log, readable at GET
 *   /subscriptions/{name}/replays as a JSON array of { at, by, to, dryRun, partitions, events }").
 */
import { z } from 'zod';
import { GatewayError, errorMessage } from '../../../core/errors.js';
import type { Logger } from '../../../observability/index.js';
import type { Read, TopicSpec, Transport, TransportRecord } from '../../../transport/port.js';
import type { PartitionReport } from './plan.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Entries kept per subscription for `GET …/replays` (the topic keeps them all). */
export const MAX_AUDIT_ENTRIES = 1000;

/** One audit entry, as `GET /subscriptions/{name}/replays` lists it. */
export interface ReplayAuditEntry {
  /** When the replay was answered, RFC 3339 UTC. */
  readonly at: string;
  /** Who asked: the partner's id, or `anonymous` until partners have identities (issue 11). */
  readonly by: string;
  /** `to` as requested, verbatim. */
  readonly to: unknown;
  readonly dryRun: boolean;
  readonly partitions: Readonly<Record<string, PartitionReport>>;
  /** Records handed out again, in all. */
  readonly events: number;
  /** Records moved past (a forward move), in all. */
  readonly skipped: number;
}

const partitionSchema = z.object({ from: z.string(), to: z.string(), events: z.number(), skipped: z.number() });
const entrySchema = z.object({ at: z.string(), by: z.string(), to: z.unknown(), dryRun: z.boolean(), partitions: z.record(z.string(), partitionSchema), events: z.number(), skipped: z.number() });

/** The audit topic: one partition (one order), kept forever, append-only. */
export function replayAuditTopicSpec(name: string): TopicSpec {
  return { name, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' };
}

/** The audit topic that goes with a definitions topic: `<definitions topic>.replays` (e.g. `ce-gateway.subscriptions.replays`). */
export function replayAuditTopicOf(subscriptionsTopic: string): string {
  return `${subscriptionsTopic}.replays`;
}

export class ReplayLog {
  readonly topic: string;
  readonly #transport: Transport;
  readonly #log: Logger;
  readonly #byGroup = new Map<string, ReplayAuditEntry[]>();
  #applied = 0n;
  readonly #waiters = new Set<() => void>();
  #read: Read | undefined;
  #stopped = false;

  constructor(transport: Transport, topic: string, log: Logger) {
    this.topic = topic;
    this.#transport = transport;
    this.#log = log;
  }

  /** Creates the topic when missing and follows it; resolves once caught up. Errors: the transport's. */
  async start(): Promise<void> {
    await this.#transport.ensureTopics([replayAuditTopicSpec(this.topic)]);
    this.#read ??= await this.#transport.read({ topics: [this.topic], from: { kind: 'earliest' } }, (r) => Promise.resolve(this.#apply(r)));
    this.#read.done.catch((err: unknown) => this.#log.error({ topic: this.topic, err: errorMessage(err) }, 'reading the replay audit topic stopped'));
    await this.#catchUp(60_000);
  }

  /** Appends an entry and waits until this instance has read it back. Errors: the transport's; CEG_BROKER_UNAVAILABLE when not read back in time. */
  async append(group: string, entry: ReplayAuditEntry, timeoutMs = 10_000): Promise<void> {
    const [pos] = await this.#transport.produce(this.topic, [{ key: enc.encode(group), value: enc.encode(JSON.stringify(entry)), headers: [['content-type', enc.encode('application/json')]] }]);
    if (pos !== undefined) await this.#until(pos.offset + 1n, timeoutMs);
  }

  /** The replays of `group`, oldest first, once caught up with the topic. Errors: the transport's; CEG_BROKER_UNAVAILABLE when not caught up in time. */
  async list(group: string, timeoutMs = 10_000): Promise<readonly ReplayAuditEntry[]> {
    await this.#catchUp(timeoutMs);
    return [...(this.#byGroup.get(group) ?? [])];
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#read?.stop();
    for (const w of [...this.#waiters]) w();
  }

  async #catchUp(timeoutMs: number): Promise<void> {
    const [end] = await this.#transport.endOffsets(this.topic);
    await this.#until(end?.offset ?? 0n, timeoutMs);
  }

  #apply(r: TransportRecord): void {
    try {
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
    } finally {
      this.#applied = r.offset + 1n;
      for (const w of [...this.#waiters]) w();
    }
  }

  #until(offset: bigint, timeoutMs: number): Promise<void> {
    if (offset <= 0n || this.#applied >= offset) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new GatewayError('CEG_BROKER_UNAVAILABLE', `the replay audit topic was not read up to its end within ${timeoutMs} ms`, { retriable: true, details: { topic: this.topic } }));
      }, timeoutMs);
      const check = (): void => {
        if (this.#stopped) {
          clearTimeout(timer);
          this.#waiters.delete(check);
          reject(new GatewayError('CEG_CLOSED', 'the replay audit log stopped', { retriable: true, details: { topic: this.topic } }));
        } else if (this.#applied >= offset) {
          clearTimeout(timer);
          this.#waiters.delete(check);
          resolve();
        }
      };
      this.#waiters.add(check);
    });
  }
}
