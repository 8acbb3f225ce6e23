/**
 * Dead letters as a product (issue 10), for every subscription — push, connectors, library — by
 * its consumer group: list a page, redrive to that subscription only, purge what was dealt with.
 *
 * - **List** reads `<group>.dlq` from the `after` position (or the start) without a consumer group,
 *   skipping what is purged, and returns at most `limit` items with `next` (null at the end).
 * - **Redrive** produces each selected dead letter — key, value and original headers — to
 *   `<group>.redrive`, which only that group reads, with the `redrive_*` headers (REDRIVE_HEADERS),
 *   then marks it redriven. A dead letter is redriven at most once: a second redrive skips it. An
 *   event that fails again is dead-lettered again once (with `dlq_redriven`), and nothing redrives
 *   it automatically; an operator may redrive that new dead letter.
 * - **Purge** writes marks the listing honours (see marks.ts); the records themselves expire with
 *   the dead-letter topic's retention.
 * - **Held kinds** (`held`, catalog names: kinds of the subscription its owner may no longer read,
 *   docs/security.md "Revoking a permission"): their dead letters are listed without the event
 *   (`event: null`, `eventProblem` naming the kind) and skipped by a redrive (listed in `skipped`
 *   with the reason, not marked), so they stay redrivable once the permission is back.
 * - **Selection** (redrive, purge; {@link Selection}): `events` by `source` + `id`, which is what
 *   identifies a CloudEvent (1.0.2 §id; break report E5: selecting by `id` alone acted on every
 *   publisher's event with that id); `ids` from any source (compatibility); or `all`.
 * The order of a redrive is produce, then mark: a crash between the two redrives those again next
 * time (at-least-once; consumers drop duplicates by `source`+`id`), never loses one.
 * Spec: issue 10 "Dead letters as a product"; bus spec S5 (the dead-letter topic).
 */
import { GatewayError, errorMessage, isGatewayError } from '../../core/errors.js';
import type { EventCodec } from '../../codec/event/index.js';
import type { OutboundRecord, TransportRecord, Transport } from '../../transport/port.js';
import { DEAD_LETTER_HEADERS, REDRIVE_HEADERS, deadLetterTopic, originalHeaders, redriveHeaders, redriveTopic, subscriptionTopics } from '../subscriber/index.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { headerText, sourceCoordinates, toItem } from './item.js';
import type { Coordinates, DeadLetterItem } from './item.js';
import { DeadLetterMarks, deadLetterStateTopic, deadLetterStateTopicSpec, readMarks, topicExists } from './marks.js';

/** Largest page, items (issue 10: "limit up to 1,000"). */
export const MAX_PAGE = 1000;
/** Page size without `limit`. */
export const DEFAULT_PAGE = 100;
/** Most `ids`, or most `events`, in one redrive or purge request. */
export const MAX_IDS = 1000;
/** Most entries listed in a redrive or purge answer (the counts are always complete). */
const MAX_LISTED = 1000;
/** Records produced per request while redriving. */
const CHUNK = 100;

/** `eventProblem` of a listed dead letter of a held kind (catalog name): the data is not shown. */
export function heldListingProblem(kind: string): string {
  return `not shown: the subscription's owner may no longer read ${kind} (subscribe permission)`;
}

/** `skipped[].reason` of a dead letter of a held kind (catalog name) in a redrive: left as it is, redrivable later. */
export function heldRedriveSkip(kind: string): string {
  return `not redriven: the subscription's owner may no longer read ${kind} (subscribe permission revoked); redrive it once the permission is back`;
}

export interface DeadLetterPage {
  readonly items: readonly DeadLetterItem[];
  /** Pass as `after` for the next page; null when this page reached the end. */
  readonly next: string | null;
}

/** One event as CloudEvents identifies it: `source` + `id` (CloudEvents 1.0.2 §id; ids are unique per source only). */
export interface EventRef {
  readonly source: string;
  readonly id: string;
}

/**
 * Which dead letters:
 * - `all`: every one not purged;
 * - `events`: those of exactly these events (`source` + `id`) — what a client that read the
 *   listing should send;
 * - `ids`: those whose event `id` is one of these, **from any source** (two publishers may both
 *   use an id; kept for compatibility, the answers list each match with its `source`).
 * A dead letter is matched by the `ce_id`/`ce_source` headers of a binary-mode record (also when
 * its value cannot be decoded: poison, a held kind, a value the dead-letter topic refused), else by
 * its decoded event; a structured-mode record that does not decode has neither and only `all`
 * selects it.
 */
export type Selection = { readonly all: true } | { readonly ids: readonly string[] } | { readonly events: readonly EventRef[] };

export interface RedriveResult {
  /** Dead letters produced back to the subscription by this request. */
  readonly redriven: number;
  /** The redriven dead letters (at most 1,000 listed), each with its event's `source` (an `ids` selection matches every source). */
  readonly items: readonly ActedOn[];
  /**
   * Dead letters selected but not redriven, and why (already redriven, stored without value, no
   * source headers, a kind the owner may no longer read: {@link heldRedriveSkip}; at most 1,000
   * listed). The last is not final: such a dead letter is not marked, and a later request redrives
   * it once its kind is no longer held.
   */
  readonly skipped: readonly (ActedOn & { readonly reason: string })[];
  /** What was asked for and matches no dead letter still listed, as asked: ids (`ids`) or `{ source, id }` (`events`); empty for `all`. */
  readonly notFound: readonly (string | EventRef)[];
}

/** A dead letter a redrive or purge acted on: its event's `id` and `source` (null when not readable) and where it is. */
export interface ActedOn {
  readonly id: string | null;
  readonly source: string | null;
  readonly deadLetter: Coordinates;
}

export interface PurgeResult {
  /** Dead letters no longer listed because of this request. */
  readonly purged: number;
  /**
   * The purged dead letters of an `ids` or `events` selection (at most 1,000 listed), each with its
   * event's `source`; empty for `all` (one mark per partition, the records are not read).
   */
  readonly items: readonly ActedOn[];
  /** As {@link RedriveResult.notFound}. */
  readonly notFound: readonly (string | EventRef)[];
}

export interface DeadLettersDeps {
  readonly transport: Transport;
  /** Decodes the events (registry); listing needs it, redrive and purge do not. */
  readonly codec: EventCodec;
  readonly now?: () => number;
}

const coords = (r: TransportRecord): Coordinates => ({ topic: r.topic, partition: r.partition, offset: r.offset.toString() });

/** The event of a dead letter as the selection and the answers name it. */
type Identity = { readonly id: string | null; readonly source: string | null };

/**
 * The `id` and `source` of a dead letter: a binary-mode record's `ce_id`/`ce_source` headers
 * (without decoding its value, which may not decode: poison, a held kind), else — only when
 * `decode` — those of the decoded event (structured mode; null when it does not decode).
 */
async function identity(h: ReadonlyMap<string, string>, decode: (() => Promise<DeadLetterItem>) | undefined): Promise<Identity> {
  const id = h.get('ce_id');
  if (id !== undefined) return { id, source: h.get('ce_source') ?? null };
  if (decode === undefined) return { id: null, source: null };
  const item = await decode();
  return { id: item.id, source: item.source };
}

/**
 * What an `ids` or `events` selection asks for, and what of it was found. `ids` match any source;
 * `events` match `source` and `id` both (the key is the JSON of the pair, which no two pairs share).
 */
class Wanted {
  readonly #ids: ReadonlySet<string> | undefined;
  readonly #events: ReadonlyMap<string, EventRef> | undefined;
  readonly #found = new Set<string>();

  constructor(sel: { readonly ids: readonly string[] } | { readonly events: readonly EventRef[] }) {
    if ('ids' in sel) this.#ids = new Set(sel.ids);
    else this.#events = new Map(sel.events.map((e) => [Wanted.#key(e.source, e.id), e]));
  }

  static of(sel: Selection): Wanted | undefined {
    return 'all' in sel ? undefined : new Wanted(sel);
  }

  static #key(source: string, id: string): string {
    return JSON.stringify([source, id]);
  }

  /** Whether the dead letter of event `who` is selected (and notes it found). */
  take(who: Identity): boolean {
    if (who.id === null) return false;
    let key: string;
    if (this.#ids !== undefined) key = who.id;
    else if (who.source === null) return false;
    else key = Wanted.#key(who.source, who.id);
    if (!(this.#ids?.has(key) ?? this.#events!.has(key))) return false;
    this.#found.add(key);
    return true;
  }

  /** What was asked for and not found, as it was asked. */
  notFound(): (string | EventRef)[] {
    if (this.#ids !== undefined) return [...this.#ids].filter((i) => !this.#found.has(i));
    return [...this.#events!].filter(([k]) => !this.#found.has(k)).map(([, e]) => e);
  }
}

export class DeadLetters {
  readonly #t: Transport;
  readonly #codec: EventCodec;
  readonly #now: () => number;

  /** The last redrive or purge of each group, queued or running (see {@link DeadLetters.#exclusive}). */
  readonly #running = new Map<string, Promise<unknown>>();

  constructor(deps: DeadLettersDeps) {
    this.#t = deps.transport;
    this.#codec = deps.codec;
    this.#now = deps.now ?? Date.now;
  }

  /**
   * Runs `work` after every earlier redrive or purge of `group` through this object has settled.
   * Both read the marks, act, then write marks: two at once read the same marks, so two
   * concurrent redrives each sent every dead letter (a redrive is at most once, issue 10). One
   * object serves one process (the gateway's, or a CLI run); across processes see
   * docs/subscriptions.md "Dead letters".
   */
  async #exclusive<T>(group: string, work: () => Promise<T>): Promise<T> {
    const before = this.#running.get(group) ?? Promise.resolve();
    const mine = before.then(work, work);
    this.#running.set(group, mine);
    try {
      return await mine;
    } finally {
      if (this.#running.get(group) === mine) this.#running.delete(group);
    }
  }

  /**
   * One page of `group`'s dead letters, oldest first (by partition, then offset).
   * `limit`: 1–1,000 (default 100); `after`: the previous page's `next`. `held`: kinds (catalog
   * names) whose dead letters are listed without their event (`event: null`, `eventProblem`:
   * {@link heldListingProblem}); their other fields as usual.
   * Errors: CEG_INVALID_PARAMETER (`field: limit | after`); the transport's (CEG_BROKER_UNAVAILABLE retriable).
   */
  async list(group: string, opts: { readonly limit?: number; readonly after?: string } = {}, held: readonly string[] = []): Promise<DeadLetterPage> {
    const limit = opts.limit ?? DEFAULT_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new GatewayError('CEG_INVALID_PARAMETER', `limit: an integer from 1 to ${MAX_PAGE}`, { retriable: false, details: { field: 'limit' } });
    const dlq = deadLetterTopic(group);
    const cursor = opts.after === undefined ? new Map<number, bigint>() : new Map(decodeCursor(opts.after, dlq));
    if (!(await topicExists(this.#t, dlq))) return { items: [], next: null };
    const marks = await readMarks(this.#t, group);
    const items: DeadLetterItem[] = [];
    const next = new Map(cursor);
    for (const end of await this.#t.endOffsets(dlq)) {
      const p = end.partition;
      let from = cursor.get(p) ?? 0n;
      const below = marks.purgedBelow.get(p) ?? 0n;
      if (from < below) from = below;
      let stoppedAt: bigint | undefined;
      await this.#scan(dlq, p, from, end.offset, async (r) => {
        if (marks.isPurged(p, r.offset)) return false;
        if (items.length === limit) {
          stoppedAt = r.offset; // one more visible item: the next page starts here
          return true;
        }
        const item = await toItem(this.#codec, r, marks.get(p, r.offset));
        const kind = this.#heldKind(item.type, held);
        items.push(kind === undefined ? item : { ...item, event: null, eventProblem: heldListingProblem(kind) });
        return false;
      });
      if (stoppedAt !== undefined) {
        next.set(p, stoppedAt);
        return { items, next: encodeCursor(next, dlq) };
      }
      next.set(p, end.offset);
    }
    return { items, next: null };
  }

  /**
   * Produces the selected dead letters back to `group` (its redrive topic) and marks them redriven.
   * `held`: kinds (catalog names) not redriven now — their dead letters are skipped with
   * {@link heldRedriveSkip} and left unmarked (a redrive would only be dead-lettered again by the
   * subscription's member, which holds those kinds back).
   * Errors: the transport's (CEG_BROKER_UNAVAILABLE retriable: nothing or part was redriven; the
   *   rest goes with the next request, what went is not redriven twice).
   * Concurrency: redrives and purges of one group through this object run one after the other,
   *   so a second concurrent request finds the first one's marks ("redriven already").
   */
  redrive(group: string, sel: Selection, held: readonly string[] = []): Promise<RedriveResult> {
    return this.#exclusive(group, () => this.#redrive(group, sel, held));
  }

  async #redrive(group: string, sel: Selection, held: readonly string[]): Promise<RedriveResult> {
    const dlq = deadLetterTopic(group);
    const wanted = Wanted.of(sel);
    const items: ActedOn[] = [];
    const skipped: (ActedOn & { reason: string })[] = [];
    let redriven = 0;
    if (!(await topicExists(this.#t, dlq))) return { redriven, items, skipped, notFound: wanted?.notFound() ?? [] };
    const marks = await readMarks(this.#t, group);
    const target = redriveTopic(group);
    await this.#t.ensureTopics([...subscriptionTopics(group).filter((t) => t.name === target), deadLetterStateTopicSpec(group)]);
    await this.#holdStart(group, target);
    let pending: { record: OutboundRecord; from: TransportRecord }[] = [];
    const flush = async (): Promise<void> => {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      await this.#t.produce(target, batch.map((b) => b.record));
      const at = this.#now();
      await this.#t.produce(deadLetterStateTopic(group), batch.map((b) => marks.markRecord(b.from.partition, b.from.offset, { redrivenAtMs: at })));
      redriven += batch.length;
    };
    for (const end of await this.#t.endOffsets(dlq)) {
      const p = end.partition;
      await this.#scan(dlq, p, marks.purgedBelow.get(p) ?? 0n, end.offset, async (r) => {
        if (marks.isPurged(p, r.offset)) return false;
        const h = headerText(r.headers);
        // A structured-mode dead letter is decoded at most once, for its id and source and (held kinds) its type.
        let decoded: Promise<DeadLetterItem> | undefined;
        const item = (): Promise<DeadLetterItem> => (decoded ??= toItem(this.#codec, r, undefined));
        let who = await identity(h, wanted === undefined ? undefined : item);
        if (wanted !== undefined && !wanted.take(who)) return false;
        const skip = (reason: string): false => {
          if (skipped.length < MAX_LISTED) skipped.push({ ...who, deadLetter: coords(r), reason });
          return false;
        };
        if (marks.get(p, r.offset)?.redrivenAtMs !== undefined) return skip('redriven already');
        if (r.value === null) return skip('stored without its value (the dead-letter topic refused the full record): nothing to redrive');
        if (held.length > 0) {
          // The type without decoding the data when the record is binary; a structured one is decoded.
          const structured = h.has('ce_type') ? undefined : await item();
          if (structured !== undefined && who.id === null) who = { id: structured.id, source: structured.source };
          const kind = this.#heldKind(h.get('ce_type') ?? structured?.type ?? null, held);
          if (kind !== undefined) return skip(heldRedriveSkip(kind));
        }
        const origin = sourceCoordinates(h);
        if (origin === null) return skip('the dead letter has no valid dlq_source_* headers');
        const before = Number(h.get(DEAD_LETTER_HEADERS.redriven) ?? '0');
        const kept = originalHeaders(r.headers).filter(([n]) => !(Object.values(REDRIVE_HEADERS) as string[]).includes(n));
        const record: OutboundRecord = {
          key: r.key,
          value: r.value,
          headers: [...kept, ...redriveHeaders({ subscription: group, count: (Number.isSafeInteger(before) ? before : 0) + 1, origin, atMs: this.#now(), deadLetter: { partition: p, offset: r.offset } })],
          timestampMs: r.timestampMs,
        };
        pending.push({ record, from: r });
        if (items.length < MAX_LISTED) items.push({ ...who, deadLetter: coords(r) });
        if (pending.length >= CHUNK) await flush();
        return false;
      });
    }
    await flush();
    return { redriven, items, skipped, notFound: wanted?.notFound() ?? [] };
  }

  /**
   * Purges the selected dead letters from the listing (marks; the records expire by retention).
   * `all`: everything dead-lettered until now. Errors: the transport's.
   */
  purge(group: string, sel: Selection): Promise<PurgeResult> {
    return this.#exclusive(group, () => this.#purge(group, sel));
  }

  async #purge(group: string, sel: Selection): Promise<PurgeResult> {
    const dlq = deadLetterTopic(group);
    const wanted = Wanted.of(sel);
    if (!(await topicExists(this.#t, dlq))) return { purged: 0, items: [], notFound: wanted?.notFound() ?? [] };
    const marks = await readMarks(this.#t, group);
    await this.#t.ensureTopics([deadLetterStateTopicSpec(group)]);
    const state = deadLetterStateTopic(group);
    const at = this.#now();
    let purged = 0;
    const items: ActedOn[] = [];
    for (const end of await this.#t.endOffsets(dlq)) {
      const p = end.partition;
      const from = marks.purgedBelow.get(p) ?? 0n;
      if (wanted === undefined) {
        if (end.offset <= from) continue;
        const already = marks.countPurged(p, from, end.offset);
        const redundant = marks.keysBelow(p, end.offset);
        await this.#t.produce(state, [marks.belowRecord(p, end.offset, at), ...redundant.map((k) => DeadLetterMarks.tombstone(k))]);
        purged += Number(end.offset - from) - already;
        continue;
      }
      const records: OutboundRecord[] = [];
      await this.#scan(dlq, p, from, end.offset, async (r) => {
        if (marks.isPurged(p, r.offset)) return false;
        const who = await identity(headerText(r.headers), () => toItem(this.#codec, r, undefined));
        if (!wanted.take(who)) return false;
        records.push(marks.markRecord(p, r.offset, { purgedAtMs: at }));
        if (items.length < MAX_LISTED) items.push({ ...who, deadLetter: coords(r) });
        return false;
      });
      for (let i = 0; i < records.length; i += CHUNK) await this.#t.produce(state, records.slice(i, i + CHUNK));
      purged += records.length;
    }
    return { purged, items, notFound: wanted?.notFound() ?? [] };
  }

  /** The catalog name of the kind of CloudEvent type `type` when it is one of `held`, else undefined. */
  #heldKind(type: string | null, held: readonly string[]): string | undefined {
    if (type === null || held.length === 0) return undefined;
    const name = this.#codec.catalog.byEventId(type)?.name;
    return name !== undefined && held.includes(name) ? name : undefined;
  }

  /**
   * A group that has never committed on its redrive topic would start a new member there at the
   * latest offset and miss what is redriven now: commit the current end first. Refused while the
   * group has members — they already hold their positions, and read what comes next.
   */
  async #holdStart(group: string, topic: string): Promise<void> {
    const committed = await this.#t.committedOffsets(group, topic);
    if (committed.every((c) => c.offset !== null)) return;
    const ends = await this.#t.endOffsets(topic);
    try {
      await this.#t.commitOffsets(group, topic, ends.filter((e) => committed.find((c) => c.partition === e.partition)?.offset === null));
    } catch (err) {
      if (!(isGatewayError(err, 'CEG_INVALID_OPTIONS') && err.retriable)) throw err;
    }
  }

  /**
   * Reads one partition from `from` up to `end` (exclusive), one record at a time; `onRecord`
   * returning true ends the read early.
   */
  async #scan(topic: string, partition: number, from: bigint, end: bigint, onRecord: (r: TransportRecord) => Promise<boolean>): Promise<void> {
    if (from >= end) return;
    let enough = false;
    const ctl: { stop?: () => Promise<void> } = {};
    let failure: unknown;
    const read = await this.#t.read({ topics: [topic], from: { kind: 'positions', positions: [{ topic, partition, offset: from }] }, untilEnd: true }, async (r) => {
      if (enough || r.offset >= end) return;
      try {
        enough = await onRecord(r);
      } catch (err) {
        failure = err;
        enough = true;
      }
      if (enough) ctl.stop?.().catch(() => undefined);
    });
    ctl.stop = () => read.stop();
    if (enough) await read.stop();
    await read.done;
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error(errorMessage(failure));
  }
}
