/**
 * What operators did with a subscription's dead letters: redriven and purged marks on a small
 * compacted topic `<subscription>.dlq.state`, next to the dead-letter topic (which is never
 * rewritten: its records expire by its own retention). The listing honours the marks; every
 * gateway instance and the CLI read the same topic, so a purge on one is seen by all.
 *
 * Records (key → JSON value):
 * - `dl:<partition>:<offset>` → `{ "redrivenAt"?: RFC 3339, "purgedAt"?: RFC 3339 }`:
 *   one dead letter of the dead-letter topic;
 * - `below:<partition>` → `{ "offset": "<decimal>", "purgedAt": RFC 3339 }`: every dead letter of
 *   the partition before `offset` is purged (a purge of all). Per-record marks below it are then
 *   written as tombstones, so compaction keeps the topic about as large as what is still listed.
 * Spec: issue 10 ("a marker the listing honours; the topic itself expires by retention"); Kafka log
 *   compaction (the latest record per key is kept, a null value deletes the key).
 */
import type { OutboundRecord, TopicSpec, Transport } from '../../transport/port.js';
import { topicExists } from '../../transport/topics.js';

const enc = new TextEncoder();
// ignoreBOM: a leading U+FEFF in a header value or key is part of it (CloudEvents attributes may start with one).
const dec = new TextDecoder('utf-8', { ignoreBOM: true });

/** The marks topic of a subscription's dead letters. */
export function deadLetterStateTopic(subscription: string): string {
  return `${subscription}.dlq.state`;
}

/** One partition (one order of marks), compacted, kept as long as its keys are. */
export function deadLetterStateTopicSpec(subscription: string): TopicSpec {
  return { name: deadLetterStateTopic(subscription), partitions: 1, retentionMs: -1, cleanupPolicy: 'compact' };
}

/** The marks of one dead letter. Times are epoch ms. */
export interface DeadLetterMark {
  readonly redrivenAtMs?: number;
  readonly purgedAtMs?: number;
}

/** Every mark of a subscription's dead letters, as read from the marks topic. */
export class DeadLetterMarks {
  /** Per dead-letter partition: dead letters before this offset are purged. */
  readonly purgedBelow = new Map<number, bigint>();
  readonly #byPosition = new Map<string, DeadLetterMark>();

  static key(partition: number, offset: bigint): string {
    return `dl:${partition}:${offset}`;
  }

  get(partition: number, offset: bigint): DeadLetterMark | undefined {
    return this.#byPosition.get(DeadLetterMarks.key(partition, offset));
  }

  isPurged(partition: number, offset: bigint): boolean {
    return offset < (this.purgedBelow.get(partition) ?? 0n) || this.get(partition, offset)?.purgedAtMs !== undefined;
  }

  /** Dead letters of `partition` in [from, end) purged one by one. */
  countPurged(partition: number, from: bigint, end: bigint): number {
    let n = 0;
    for (const [k, m] of this.#byPosition) {
      const [, p, o] = k.split(':');
      if (Number(p) === partition && m.purgedAtMs !== undefined && BigInt(o!) >= from && BigInt(o!) < end) n++;
    }
    return n;
  }

  /** Keys of per-record marks of `partition` below `offset` (made redundant by a purge of all). */
  keysBelow(partition: number, offset: bigint): string[] {
    const out: string[] = [];
    for (const k of this.#byPosition.keys()) {
      const [, p, o] = k.split(':');
      if (Number(p) === partition && BigInt(o!) < offset) out.push(k);
    }
    return out;
  }

  /** Applies one record of the marks topic; records that do not parse are ignored (a foreign writer). */
  apply(key: string, value: Uint8Array | null): void {
    const dl = /^dl:(\d{1,9}):(\d{1,19})$/.exec(key);
    const below = /^below:(\d{1,9})$/.exec(key);
    if (dl === null && below === null) return;
    if (value === null) {
      if (dl !== null) this.#byPosition.delete(key);
      else this.purgedBelow.delete(Number(below![1]));
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(dec.decode(value));
    } catch {
      return;
    }
    if (typeof json !== 'object' || json === null) return;
    const o = json as Record<string, unknown>;
    const time = (v: unknown): number | undefined => (typeof v === 'string' && Number.isFinite(Date.parse(v)) ? Date.parse(v) : undefined);
    if (dl !== null) {
      const redrivenAtMs = time(o.redrivenAt);
      const purgedAtMs = time(o.purgedAt);
      this.#byPosition.set(key, { ...(redrivenAtMs === undefined ? {} : { redrivenAtMs }), ...(purgedAtMs === undefined ? {} : { purgedAtMs }) });
    } else if (typeof o.offset === 'string' && /^\d{1,19}$/.test(o.offset)) {
      const p = Number(below![1]);
      const next = BigInt(o.offset);
      if (next > (this.purgedBelow.get(p) ?? 0n)) this.purgedBelow.set(p, next); // never moves back
    }
  }

  /** The record that sets a dead letter's marks (merged with what it has). */
  markRecord(partition: number, offset: bigint, add: DeadLetterMark): OutboundRecord {
    const merged = { ...this.get(partition, offset), ...add };
    const key = DeadLetterMarks.key(partition, offset);
    this.#byPosition.set(key, merged);
    const value = {
      ...(merged.redrivenAtMs === undefined ? {} : { redrivenAt: new Date(merged.redrivenAtMs).toISOString() }),
      ...(merged.purgedAtMs === undefined ? {} : { purgedAt: new Date(merged.purgedAtMs).toISOString() }),
    };
    return { key: enc.encode(key), value: enc.encode(JSON.stringify(value)), headers: [['content-type', enc.encode('application/json')]] };
  }

  /** The record purging every dead letter of `partition` before `offset`. */
  belowRecord(partition: number, offset: bigint, atMs: number): OutboundRecord {
    if (offset > (this.purgedBelow.get(partition) ?? 0n)) this.purgedBelow.set(partition, offset);
    return { key: enc.encode(`below:${partition}`), value: enc.encode(JSON.stringify({ offset: offset.toString(), purgedAt: new Date(atMs).toISOString() })), headers: [['content-type', enc.encode('application/json')]] };
  }

  /** A tombstone for a per-record mark (compaction then drops it). */
  static tombstone(key: string): OutboundRecord {
    return { key: enc.encode(key), value: null, headers: [] };
  }
}

/**
 * Reads every mark of `subscription` (the whole marks topic, to its end as of now). A missing topic
 * means no marks. Errors: the transport's (CEG_BROKER_UNAVAILABLE retriable).
 */
export async function readMarks(transport: Transport, subscription: string): Promise<DeadLetterMarks> {
  const topic = deadLetterStateTopic(subscription);
  const marks = new DeadLetterMarks();
  if (!(await topicExists(transport, topic))) return marks;
  const read = await transport.read({ topics: [topic], from: { kind: 'earliest' }, untilEnd: true }, (r) => {
    if (r.key !== null) marks.apply(dec.decode(r.key), r.value);
    return Promise.resolve();
  });
  await read.done;
  return marks;
}

