/**
 * One pull: reads a pull subscription's topics from given positions until it has `max` events, its
 * answer would pass `maxBytes` of JSON text, or the wait runs out, deciding what each record means with the subscriber's own pipeline stages —
 * header bounds, kind filter before decoding, decode through the registry into the catalog's reader
 * schema, envelope validation, attribute filters — so pull hands out exactly what push would
 * deliver. Records of other kinds and events the filters refuse are passed over (the position moves
 * past them); a poison record (headers out of bounds, undecodable, not a valid CloudEvent) is
 * written to the subscription's dead-letter topic `<group>.dlq` with the subscriber's dead-letter
 * headers and passed over too, so it never stalls the subscription. A transient failure (registry
 * or broker unreachable) stops that partition before the record: it is read again next time.
 * A dead-letter topic an operator deleted is created again (as a push subscription does): before
 * (≤ 2026-12-07) its partition stopped before the poison record until someone created the topic,
 * and every pull answered 503 CEG_REGISTRY_UNAVAILABLE, naming the wrong part.
 *
 * Byte budget (like Kafka's `fetch.max.bytes`): each event is serialized once, here, and its UTF-8
 * size counted as it stands in a JSON array answer (`[` e1 `,` e2 … `]`). The event that would take
 * the answer past `maxBytes` is not taken — its position stays before it, so the next pull starts
 * with it — unless it is the first event of the answer: a single event larger than the budget
 * still goes alone, so nothing ever stalls.
 *
 * Liveness: `o.check` is called before every poll round and before answering; it
 * throws when the subscription may no longer be pulled (paused, deleted), so a wait that began
 * while it was active does not hand out events after the change.
 *
 * Cost (measured on the shared 2-core machine, one broker on loopback): while nothing is new, a
 * wait costs one ListOffsets round trip per topic every {@link POLL_INTERVAL_MS} (~1–5 ms); a read
 * is one group-less read of the listed partitions, which kafkajs does through a throw-away group
 * (join, seek, fetch, leave, delete: ~60–125 ms for 30 records) and @platformatic/kafka directly
 * (~10 ms). No state outlives the request: correctness never depends on which instance serves it.
 *
 * Poison records are dead-lettered once per subscription incarnation and gateway process
 * ({@link DeadLetteredMemo}): pulls that pass over one again without a commit after it (a client
 * that never commits, a retried request), or at the same moment, do not write it again. Another instance, or this one after a restart or once the memo has
 * forgotten it, writes it once more (at-least-once, like everything else here); copies are told
 * apart by `dlq_source_topic`/`dlq_source_partition`/`dlq_source_offset`.
 * Spec: issue 9 ("Pull"); bus spec S5, S6 (poison isolation); issue 7 (bounded work per record).
 */
import { GatewayError, errorMessage } from '../../../core/errors.js';
import { sleep } from '../../../core/retry.js';
import type { EventCodec } from '../../../codec/event/index.js';
import { DEFAULT_ENVELOPE_LIMITS } from '../../../envelope/index.js';
import type { JsonValue } from '../../../envelope/index.js';
import type { Logger } from '../../../observability/index.js';
import type { OutboundRecord, Read, TopicPartitionOffset, Transport, TransportRecord } from '../../../transport/port.js';
import { outOfRangeReset } from '../../../transport/out-of-range.js';
import { topicMissing } from '../../../transport/topics.js';
import { deadLetterHeaders, deadLetterWithoutValueHeaders, originalHeaders } from '../../subscriber/failure-headers.js';
import { subscriptionTopics } from '../../subscriber/subscriber.js';
import { headerBoundsProblem } from '../../subscriber/pipeline/bounds.js';
import { decodeRecord, missingDataProblem, peekHeaders, peekType } from '../../subscriber/pipeline/decode.js';
import { subscriptionFilter } from '../../subscriber/pipeline/filter.js';
import type { FilterExpression } from '../../subscriber/pipeline/dialects.js';
import { pulledEventJson } from './event-json.js';

/** How often a waiting pull asks the broker for new records, ms. */
export const POLL_INTERVAL_MS = 250;
/** Longest one read may take once started (a read that cannot reach its end offsets), ms. */
export const READ_BUDGET_MS = 10_000;

/** What a pull reads: the subscription as it is stored now. */
export interface PullTarget {
  /** The consumer group; dead letters go to `<group>.dlq`. */
  readonly group: string;
  /**
   * The subscription's incarnation (its stored `createdAt`): a subscription deleted and created
   * again under the same name is another one, and dead-letters a poison record for itself.
   */
  readonly incarnation: string;
  readonly eventIds: ReadonlySet<string>;
  readonly filters: readonly FilterExpression[];
  readonly data: 'json' | 'avro';
}

export interface PullDeps {
  readonly transport: Transport;
  readonly codec: EventCodec;
  readonly log: Logger;
  /** Poison records this process already dead-lettered; without it every pass writes them again. */
  readonly deadLettered?: DeadLetteredMemo;
}

/** Records remembered by default: a few hundred kB at most. */
export const DEFAULT_DEAD_LETTERED_MEMO = 10_000;

/**
 * The poison records (subscription incarnation, topic, partition, offset) this process
 * dead-lettered from pulls, so that a pull passing over one again does not write it again, and
 * pulls passing over it at the same time write it once (the later ones wait for the first one's
 * write). Bounded: past `max` entries the oldest is forgotten (its next pass writes it once more,
 * which at-least-once allows).
 */
export class DeadLetteredMemo {
  readonly #keys = new Set<string>();
  readonly #writing = new Map<string, Promise<boolean>>();
  readonly #max: number;

  /** Errors: RangeError when `max` is not a positive integer. */
  constructor(max = DEFAULT_DEAD_LETTERED_MEMO) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`);
    this.#max = max;
  }

  get size(): number {
    return this.#keys.size;
  }

  /**
   * Dead-letters `record` for `scope` (a subscription incarnation) with `write` unless this
   * process already did, or is doing it now (then waits for that write and answers as it did).
   * Returns 'written' (by this call), 'already' (by an earlier or concurrent call that
   * succeeded), or 'failed' (this call's or the concurrent call's write failed: nothing is
   * remembered, the next pass tries again). `write` resolves true when the record was written.
   */
  async once(scope: string, record: Pick<TransportRecord, 'topic' | 'partition' | 'offset'>, write: () => Promise<boolean>): Promise<'written' | 'already' | 'failed'> {
    const k = memoKey(scope, record);
    if (this.#keys.has(k)) return 'already';
    const pending = this.#writing.get(k);
    if (pending !== undefined) return (await pending) ? 'already' : 'failed';
    const p = write();
    this.#writing.set(k, p);
    let ok: boolean;
    try {
      ok = await p;
    } finally {
      this.#writing.delete(k);
    }
    if (!ok) return 'failed';
    this.#keys.add(k);
    if (this.#keys.size > this.#max) this.#keys.delete(this.#keys.values().next().value!);
    return 'written';
  }
}

// Group and topic names cannot hold a newline (Kafka's legal characters), nor can an RFC 3339
// incarnation, so the key is unambiguous.
function memoKey(scope: string, r: Pick<TransportRecord, 'topic' | 'partition' | 'offset'>): string {
  return `${scope}\n${r.topic}\n${r.partition}\n${r.offset}`;
}

/** One event handed out, with the positions right after it (an SSE message's `id`). */
export interface PulledEvent {
  readonly json: Record<string, JsonValue>;
  /** `JSON.stringify(json)`: the exact text to write (counted against the byte budget). */
  readonly text: string;
  readonly after: readonly TopicPartitionOffset[];
}

/** UTF-8 size, in bytes, of a JSON array holding texts of these sizes: `[`, `]` and a `,` between each two. */
export function arrayBytes(count: number, textBytes: number): number {
  return 2 + textBytes + Math.max(0, count - 1);
}

export interface PullResult {
  readonly events: readonly PulledEvent[];
  /** Every position of the pull after it (the response cursor), sorted by topic and partition. */
  readonly positions: readonly TopicPartitionOffset[];
  /** Records passed over: other kinds, filtered, and poison records an earlier pull of this process dead-lettered. */
  readonly skipped: number;
  /** Poison records this pull wrote to the dead-letter topic (and passed over). */
  readonly deadLettered: number;
}

const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** Mutable positions of one pull, by topic partition. */
export class Positions {
  readonly #m = new Map<string, TopicPartitionOffset>();
  constructor(initial: readonly TopicPartitionOffset[]) {
    for (const p of initial) this.#m.set(key(p.topic, p.partition), p);
  }
  get(topic: string, partition: number): bigint | undefined {
    return this.#m.get(key(topic, partition))?.offset;
  }
  advance(r: TransportRecord): void {
    this.#m.set(key(r.topic, r.partition), { topic: r.topic, partition: r.partition, offset: r.offset + 1n });
  }
  /** Sets one partition's position (a partition joining the pull). */
  set(p: TopicPartitionOffset): void {
    this.#m.set(key(p.topic, p.partition), p);
  }
  /** Forgets every partition of `topic` (a topic the pull no longer reads). */
  drop(topic: string): void {
    for (const [k, p] of this.#m) if (p.topic === topic) this.#m.delete(k);
  }
  all(): TopicPartitionOffset[] {
    return [...this.#m.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  }
}

type Verdict = { kind: 'event'; json: Record<string, JsonValue>; text: string; bytes: number } | { kind: 'skip' } | { kind: 'poison'; reason: string } | { kind: 'transient'; reason: string };

/**
 * Pulls up to `max` events from `positions` (advanced in place), waiting until `deadlineMs`
 * (epoch ms) for the first one. Resolves with what it has when the wait runs out (maybe nothing)
 * or the signal aborts. `maxBytes`: the most UTF-8 bytes of the events' JSON texts as one JSON
 * array ({@link arrayBytes}); the first event is taken whatever its size. `check`: throws when
 * the subscription may no longer be pulled; called before each poll round and before resolving
 * (its error rejects the pull, and `positions` must then be dropped: they may be past
 * events not handed out).
 * Errors: CEG_REGISTRY_UNAVAILABLE (retriable) when nothing could be handed out because a record
 *   could not be decoded for now (registry unreachable); CEG_BROKER_UNAVAILABLE (retriable) when a
 *   poison record's dead letter could not be written (broker unreachable, the topic's creation
 *   refused); `check`'s; the transport's.
 */
export async function pull(deps: PullDeps, target: PullTarget, positions: Positions, o: { readonly max: number; readonly maxBytes: number; readonly deadlineMs: number; readonly signal: AbortSignal; readonly check?: () => void }): Promise<PullResult> {
  const check = o.check ?? ((): void => {});
  const filter = subscriptionFilter(target.eventIds, target.filters);
  const events: PulledEvent[] = [];
  let textBytes = 0; // UTF-8 bytes of the texts in `events`
  let skipped = 0;
  let deadLettered = 0;
  /** Why a partition stopped before a record, and the code of the error thrown when nothing else came out. */
  let transient: { readonly reason: string; readonly code: 'CEG_REGISTRY_UNAVAILABLE' | 'CEG_BROKER_UNAVAILABLE' } | undefined;
  const judge = async (record: TransportRecord): Promise<Verdict> => {
    const tooBig = headerBoundsProblem(record, DEFAULT_ENVELOPE_LIMITS);
    if (tooBig !== undefined) return { kind: 'poison', reason: tooBig };
    const headers = peekHeaders(record);
    if (!filter.peek(peekType(headers))) return { kind: 'skip' };
    const decoded = await decodeRecord(deps.codec, record, headers);
    if (!decoded.ok) return decoded.retriable ? { kind: 'transient', reason: decoded.reason } : { kind: 'poison', reason: `poison: ${decoded.reason}` };
    if (!filter.accepts(decoded.event)) return { kind: 'skip' };
    // As the subscriber does: a tombstone on a topic that is not compacted is poison, not an event.
    const noData = missingDataProblem(deps.codec, decoded.event);
    if (noData !== undefined) return { kind: 'poison', reason: noData };
    try {
      const json = pulledEventJson(decoded.event, record, target.data, deps.codec);
      const text = JSON.stringify(json);
      return { kind: 'event', json, text, bytes: Buffer.byteLength(text, 'utf8') };
    } catch (err) {
      return { kind: 'poison', reason: `poison: ${errorMessage(err)}` };
    }
  };
  const dlq = `${target.group}.dlq`;
  /**
   * Produces one dead letter. A dead-letter topic that is gone (an operator deleted it: the produce
   * is refused as an unknown topic, {@link topicMissing}) is created again with the
   * settings the subscription was created with ({@link subscriptionTopics}), with a warning, and the
   * dead letter is written there, as the push subscriber does (subscriber.ts produceDeadLetter).
   */
  const produceDeadLetter = async (out: OutboundRecord): Promise<void> => {
    try {
      await deps.transport.produce(dlq, [out], { signal: o.signal });
    } catch (err) {
      if (o.signal.aborted || !topicMissing(err)) throw err;
      deps.log.warn({ subscription: target.group, topic: dlq, err: errorMessage(err) }, `pull: dead-letter topic ${dlq} is gone (deleted while the subscription was in use): creating it again`);
      await deps.transport.ensureTopics(subscriptionTopics(target.group).filter((t) => t.name === dlq));
      await deps.transport.produce(dlq, [out], { signal: o.signal });
    }
  };
  const deadLetter = async (record: TransportRecord, reason: string): Promise<boolean> => {
    const now = Date.now();
    const origin = { topic: record.topic, partition: record.partition, offset: record.offset };
    const info = { reason, attempts: 1, firstFailureMs: now, lastFailureMs: now, origin, subscription: target.group };
    const where = { subscription: target.group, topic: record.topic, partition: record.partition, offset: record.offset.toString() };
    const headers = [...originalHeaders(record.headers), ...deadLetterHeaders(info)];
    try {
      await produceDeadLetter({ key: record.key, value: record.value, headers, timestampMs: record.timestampMs });
      deps.log.warn({ ...where, reason: reason.slice(0, 500) }, 'pull: record dead-lettered and passed over');
      return true;
    } catch (err) {
      // Refused for good (too large once decompressed or with its headers, …): trying it again
      // would stop its partition for ever. As a subscription does: the dead letter without its
      // value and with only the identifying headers, `dlq_value_dropped` giving the value's size.
      if (o.signal.aborted || !(err instanceof GatewayError) || err.retriable) {
        deps.log.error({ ...where, err: errorMessage(err) }, 'pull: could not dead-letter a poison record; its partition stops before it for now');
        return false;
      }
      const bare = deadLetterWithoutValueHeaders(record, info, errorMessage(err));
      try {
        await produceDeadLetter({ key: record.key, value: null, headers: bare, timestampMs: record.timestampMs });
        deps.log.warn({ ...where, reason: reason.slice(0, 500), refusal: errorMessage(err) }, 'pull: record dead-lettered without its value and passed over');
        return true;
      } catch (again) {
        deps.log.error({ ...where, err: errorMessage(again) }, 'pull: could not dead-letter a poison record, even without its value; its partition stops before it for now');
        return false;
      }
    }
  };

  /** One bounded read of the partitions with records; true when it moved any position. */
  const readOnce = async (avail: readonly TopicPartitionOffset[]): Promise<boolean> => {
    const blocked = new Set<string>();
    let moved = false;
    let full = false;
    let markFull: () => void = () => {};
    const fullNow = new Promise<void>((r) => (markFull = r));
    const handler = async (record: TransportRecord): Promise<void> => {
      const k = key(record.topic, record.partition);
      if (full || blocked.has(k) || o.signal.aborted) return; // not taken: its position stays before it
      const v = await judge(record);
      if (full || o.signal.aborted) return;
      if (v.kind === 'transient') {
        blocked.add(k);
        transient = { reason: v.reason, code: 'CEG_REGISTRY_UNAVAILABLE' };
        return;
      }
      if (v.kind === 'poison') {
        const reason = v.reason;
        const done = deps.deadLettered === undefined
          ? ((await deadLetter(record, reason)) ? 'written' : 'failed')
          : await deps.deadLettered.once(`${target.group}@${target.incarnation}`, record, () => deadLetter(record, reason));
        if (done === 'failed') {
          blocked.add(k);
          transient = { reason: 'the dead-letter topic did not take a poison record', code: 'CEG_BROKER_UNAVAILABLE' };
          return;
        }
        // 'already': dead-lettered by another pull of this process: passed over, not written again.
        if (done === 'written') deadLettered++;
        else skipped++;
      } else if (v.kind === 'skip') {
        skipped++;
      } else if (events.length > 0 && arrayBytes(events.length + 1, textBytes + v.bytes) > o.maxBytes) {
        // Over the byte budget: not taken (its position stays before it); the answer is complete.
        full = true;
        markFull();
        return;
      }
      positions.advance(record);
      moved = true;
      if (v.kind === 'event') {
        events.push({ json: v.json, text: v.text, after: positions.all() });
        textBytes += v.bytes;
        if (events.length >= o.max) {
          full = true;
          markFull();
        }
      }
    };
    const read: Read = await deps.transport.read({ topics: [...new Set(avail.map((p) => p.topic))], from: { kind: 'positions', positions: avail }, untilEnd: true }, handler);
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<void>((r) => (timer = setTimeout(r, Math.max(READ_BUDGET_MS, o.deadlineMs - Date.now()))));
    let onAbort: () => void = () => {};
    const aborted = new Promise<void>((r) => (onAbort = r));
    o.signal.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.race([read.done, fullNow, budget, aborted]);
    } finally {
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      full = true; // nothing more is taken once the read is being stopped
      await read.stop();
    }
    return moved;
  };

  while (!o.signal.aborted) {
    check();
    const avail = await available(deps.transport, positions, deps.log, target.group);
    if (avail.length > 0) {
      const moved = await readOnce(avail);
      if (events.length > 0 || transient !== undefined) break;
      if (moved) continue; // all passed over: look again at once
    }
    const left = o.deadlineMs - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(POLL_INTERVAL_MS, left), o.signal).catch(() => undefined);
  }
  // The subscription as it is now: a pause (or delete) during the read or the wait hands out nothing.
  check();
  if (events.length === 0 && transient !== undefined) {
    throw new GatewayError(transient.code, `pull: ${transient.reason.slice(0, 300)}; try again`, { retriable: true, details: { subscription: target.group } });
  }
  return { events, positions: positions.all(), skipped, deadLettered };
}

/**
 * The positions with records to read: those below their partition's end offset, and those past it
 * (more than one past the last record: the topic was deleted and created again, so its offsets
 * started over — such a position would wait until the new topic grew past it, handing out nothing
 * meanwhile). A position below the log start (retention or `kafka-delete-records` removed records
 * the subscription had not read) or past the end goes on from the log start, as a push
 * subscription does (src/transport/out-of-range.ts; docs/subscriptions.md "When records vanish
 * under a subscription"), with a warning naming the subscription, topic, partition and the offsets
 * lost — once per answer that reads from there; the cursor the answer hands out is in the log again.
 */
async function available(transport: Transport, positions: Positions, log: Logger, group: string): Promise<TopicPartitionOffset[]> {
  const out: TopicPartitionOffset[] = [];
  const topics = [...new Set(positions.all().map((p) => p.topic))];
  for (const topic of topics) {
    const ends = await transport.endOffsets(topic);
    const mine = positions.all().filter((p) => p.topic === topic);
    const endOf = (partition: number): bigint => ends.find((e) => e.partition === partition)?.offset ?? 0n;
    const moving = mine.filter((p) => p.offset !== endOf(p.partition));
    if (moving.length === 0) continue;
    const starts = await transport.offsetsAt(topic, { kind: 'earliest' });
    for (const p of moving) {
      const start = starts.find((s) => s.partition === p.partition)?.offset ?? 0n;
      const end = endOf(p.partition);
      const reset = outOfRangeReset(p.offset, start, end);
      if (reset !== undefined) {
        transport.offsetResets?.note(group, reset.why);
        log.warn({ subscription: group, topic, partition: p.partition, offset: p.offset.toString(), logStart: start.toString(), end: end.toString(), lost: reset.lost?.toString() ?? 'unknown', reason: reset.why }, reset.why === 'below-log-start' ? 'pull: records were deleted before this subscription read them (retention or delete-records); going on from the log start' : 'pull: the position is past the end of the partition (the topic was deleted and created again?); going on from the log start');
      }
      // The answer's copy of the positions moves there: its cursor is in the log again, and the
      // warning is not said again at every poll round while the partition has nothing to read.
      if (reset !== undefined) positions.set({ topic, partition: p.partition, offset: reset.to });
      const from = reset?.to ?? p.offset;
      if (from < end) out.push({ topic, partition: p.partition, offset: from });
    }
  }
  return out;
}
