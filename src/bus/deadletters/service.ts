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
 *   and the sink's answer excerpt, which may echo it (`event: null`, `excerpt: null`,
 *   `eventProblem` naming the kind) and skipped by a redrive (listed in `skipped`
 *   with the reason, not marked), so they stay redrivable once the permission is back.
 * - **Selection** (redrive, purge; {@link Selection}): `events` by `source` + `id`, which is what
 *   identifies a CloudEvent (1.0.2 §id; break report E5: selecting by `id` alone acted on every
 *   publisher's event with that id); `ids` from any source (compatibility); `deadLetters` by the
 *   dead letter's own partition and offset on the dead-letter topic (one record, readable or not:
 *   a structured-mode record that does not decode has no id or source to name it by); or `all`.
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
import { DeadLetterMarks, deadLetterStateTopic, deadLetterStateTopicSpec, readMarks } from './marks.js';
import { topicExists } from '../../transport/topics.js';

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
 * One dead letter by where it is on the subscription's dead-letter topic (`<group>.dlq`), as the
 * listing's `deadLetter` gives it: `partition` (an integer ≥ 0) and `offset` (decimal text, 0 to
 * 2^63−1, without leading zeros). `topic`, when given, must be that dead-letter topic (a client may
 * echo the listing's `deadLetter` back); it selects nothing by itself.
 */
export interface DeadLetterRef {
  readonly topic?: string;
  readonly partition: number;
  readonly offset: string;
}

/** Largest Kafka offset (a signed 64-bit integer). */
const MAX_OFFSET = 2n ** 63n - 1n;

/**
 * The problem with `ref` as a dead letter's coordinates (partition a non-negative safe integer,
 * offset decimal text from 0 to 2^63−1 without leading zeros; topic, when given, a string), naming
 * the member that is wrong: `partition`, `offset` or `topic`; undefined when it is well-formed.
 * Shared by the HTTP body, the CLI and {@link DeadLetters} (a library caller's selection).
 */
export function deadLetterRefProblem(ref: { readonly topic?: unknown; readonly partition?: unknown; readonly offset?: unknown }): { member: 'partition' | 'offset' | 'topic'; message: string } | undefined {
  if (typeof ref.partition !== 'number' || !Number.isSafeInteger(ref.partition) || ref.partition < 0) return { member: 'partition', message: "the dead letter's partition: an integer ≥ 0" };
  if (typeof ref.offset !== 'string' || !/^(0|[1-9]\d{0,18})$/.test(ref.offset) || BigInt(ref.offset) > MAX_OFFSET) return { member: 'offset', message: `the dead letter's offset: decimal text from 0 to ${MAX_OFFSET} (as the listing's deadLetter.offset)` };
  if (ref.topic !== undefined && (typeof ref.topic !== 'string' || ref.topic.length === 0)) return { member: 'topic', message: "the subscription's dead-letter topic (or leave it out: it is implied)" };
  return undefined;
}

/**
 * Which dead letters:
 * - `all`: every one not purged;
 * - `events`: those of exactly these events (`source` + `id`) — what a client that read the
 *   listing should send;
 * - `ids`: those whose event `id` is one of these, **from any source** (two publishers may both
 *   use an id; kept for compatibility, the answers list each match with its `source`);
 * - `deadLetters`: exactly these dead letters by their partition and offset on the subscription's
 *   dead-letter topic ({@link DeadLetterRef}) — the one way besides `all` to reach a dead letter
 *   that has no id or source (break report E5).
 * With `ids` and `events` a dead letter is matched by the `ce_id`/`ce_source` headers of a
 * binary-mode record (also when its value cannot be decoded: poison, a held kind, a value the
 * dead-letter topic refused), else by its decoded event; a structured-mode record that does not
 * decode has neither and only `all` or `deadLetters` select it. Each list holds 1–{@link MAX_IDS}
 * entries (the routes and the CLI enforce it; duplicates count once).
 */
export type Selection = { readonly all: true } | { readonly ids: readonly string[] } | { readonly events: readonly EventRef[] } | { readonly deadLetters: readonly DeadLetterRef[] };

/** What a `notFound` lists: ids (`ids`), `{ source, id }` (`events`) or `{ partition, offset }` (`deadLetters`), as asked. */
export type NotFound = string | EventRef | { readonly partition: number; readonly offset: string };

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
  /**
   * What was asked for and matches no dead letter still listed (a purged one too), as asked: ids
   * (`ids`), `{ source, id }` (`events`) or `{ partition, offset }` (`deadLetters`); empty for `all`.
   */
  readonly notFound: readonly NotFound[];
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
   * The purged dead letters of an `ids`, `events` or `deadLetters` selection (at most 1,000 listed), each with its
   * event's `source`; empty for `all` (one mark per partition, the records are not read).
   */
  readonly items: readonly ActedOn[];
  /** As {@link RedriveResult.notFound}. */
  readonly notFound: readonly NotFound[];
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

/** The key of a dead letter's position in {@link Wanted}. */
const positionKey = (partition: number, offset: bigint): string => `${partition}:${offset}`;

/**
 * What an `ids`, `events` or `deadLetters` selection asks for, and what of it was found. `ids`
 * match any source; `events` match `source` and `id` both (the key is the JSON of the pair, which
 * no two pairs share); `deadLetters` match the record's partition and offset, whatever it holds.
 */
class Wanted {
  readonly #ids: ReadonlySet<string> | undefined;
  readonly #events: ReadonlyMap<string, EventRef> | undefined;
  readonly #positions: ReadonlyMap<string, { readonly partition: number; readonly offset: string }> | undefined;
  readonly #found = new Set<string>();
  /** The place of each key in the request (0-based; a duplicate keeps its first place): the order a redrive follows. */
  readonly #rank = new Map<string, number>();

  constructor(sel: Exclude<Selection, { readonly all: true }>) {
    if ('ids' in sel) this.#ids = new Set(sel.ids);
    else if ('events' in sel) this.#events = new Map(sel.events.map((e) => [Wanted.#key(e.source, e.id), e]));
    else this.#positions = new Map(sel.deadLetters.map((d) => [positionKey(d.partition, BigInt(d.offset)), { partition: d.partition, offset: d.offset }]));
    for (const k of this.#ids ?? (this.#events ?? this.#positions!).keys()) if (!this.#rank.has(k)) this.#rank.set(k, this.#rank.size);
  }

  /** The place in the request of what the last {@link take} matched at `partition`/`offset` (by its identity `who`). */
  rankOf(partition: number, offset: bigint, who: Identity): number {
    const key = this.#positions !== undefined ? positionKey(partition, offset) : this.#ids !== undefined ? who.id : who.source === null || who.id === null ? undefined : Wanted.#key(who.source, who.id);
    return key === null || key === undefined ? Number.MAX_SAFE_INTEGER : (this.#rank.get(key) ?? Number.MAX_SAFE_INTEGER);
  }

  static of(sel: Selection): Wanted | undefined {
    return 'all' in sel ? undefined : new Wanted(sel);
  }

  static #key(source: string, id: string): string {
    return JSON.stringify([source, id]);
  }

  /** Whether no dead letter of `partition` can be selected (a `deadLetters` selection names none there): its records need not be read. */
  passes(partition: number): boolean {
    return this.#positions !== undefined && ![...this.#positions.values()].some((d) => d.partition === partition);
  }

  /**
   * The identity of the dead letter at `partition`/`offset` when it is selected (and notes it
   * found), else undefined. `who` is asked only when needed: a `deadLetters` selection reads no
   * identity of a record it does not select.
   */
  async take(partition: number, offset: bigint, who: () => Promise<Identity>): Promise<Identity | undefined> {
    if (this.#positions !== undefined) {
      const key = positionKey(partition, offset);
      if (!this.#positions.has(key)) return undefined;
      this.#found.add(key);
      return who();
    }
    const w = await who();
    if (w.id === null) return undefined;
    let key: string;
    if (this.#ids !== undefined) key = w.id;
    else if (w.source === null) return undefined;
    else key = Wanted.#key(w.source, w.id);
    if (!(this.#ids?.has(key) ?? this.#events!.has(key))) return undefined;
    this.#found.add(key);
    return w;
  }

  /** What was asked for and not found, as it was asked. */
  notFound(): NotFound[] {
    if (this.#ids !== undefined) return [...this.#ids].filter((i) => !this.#found.has(i));
    return [...(this.#events ?? this.#positions!)].filter(([k]) => !this.#found.has(k)).map(([, e]) => e);
  }
}

/**
 * Refuses a `deadLetters` selection whose entries are malformed or name a topic other than `dlq`
 * (the routes and the CLI check the shape first; this guards library callers and checks the
 * topic, which only the service knows).
 * Errors: CEG_MALFORMED_REQUEST naming `deadLetters[i].partition|offset|topic`.
 */
function checkPositions(sel: Selection, dlq: string): void {
  if (!('deadLetters' in sel)) return;
  sel.deadLetters.forEach((d, i) => {
    const problem = deadLetterRefProblem(d) ?? (d.topic !== undefined && d.topic !== dlq ? { member: 'topic', message: `the subscription's dead-letter topic is ${dlq} (or leave topic out: it is implied)` } : undefined);
    if (problem !== undefined) {
      const field = `deadLetters[${i}].${problem.member}`;
      throw new GatewayError('CEG_MALFORMED_REQUEST', `${field}: ${problem.message}`, { retriable: false, details: { field } });
    }
  });
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
   * names) whose dead letters are listed without their event and excerpt (`event: null`, `excerpt: null`, `eventProblem`:
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
        // The sink's answer may echo the event (a debugging endpoint, an API gateway's error body):
        // its excerpt goes with the data (break report 2026-12-06).
        items.push(kind === undefined ? item : { ...item, event: null, excerpt: null, eventProblem: heldListingProblem(kind) });
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
   * A dead letter selected by `deadLetters` whose record does not decode is redriven as `all`
   * would: its value as it is, when it has one and valid `dlq_source_*` headers (else skipped with
   * the reason); the answers name it with `id` and `source` null.
   * Errors: CEG_MALFORMED_REQUEST (`deadLetters[i].partition|offset|topic`: malformed, or a topic
   *   other than the subscription's dead-letter topic; nothing is redriven); the transport's
   *   (CEG_BROKER_UNAVAILABLE retriable: nothing or part was redriven; the rest goes with the next
   *   request, what went is not redriven twice).
   * Concurrency: redrives and purges of one group through this object run one after the other,
   *   so a second concurrent request finds the first one's marks ("redriven already").
   * Order: an `ids`, `events` or `deadLetters` selection is produced to the redrive topic — and
   *   listed in `items` and `skipped` — in the order of the request's list (a duplicate counts at its
   *   first place; the dead letters one entry matches, e.g. an event dead-lettered again, in
   *   dead-letter order: partition, then offset); its records are held in memory until the
   *   dead-letter topic was read (at most {@link MAX_IDS} entries asked). `all` goes in dead-letter
   *   order, produced as it is read. Spec: docs/subscriptions.md "Redrive" (Ordering).
   */
  redrive(group: string, sel: Selection, held: readonly string[] = []): Promise<RedriveResult> {
    return this.#exclusive(group, () => this.#redrive(group, sel, held));
  }

  async #redrive(group: string, sel: Selection, held: readonly string[]): Promise<RedriveResult> {
    const dlq = deadLetterTopic(group);
    checkPositions(sel, dlq);
    const wanted = Wanted.of(sel);
    const items: ActedOn[] = [];
    // Skips and (for a list selection) records to produce, each with its place in the request: sorted before use.
    const skipped: (ActedOn & { reason: string; rank: number })[] = [];
    const chosen: { record: OutboundRecord; from: TransportRecord; acted: ActedOn; rank: number }[] = [];
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
      if (wanted?.passes(p) === true) continue;
      await this.#scan(dlq, p, marks.purgedBelow.get(p) ?? 0n, end.offset, async (r) => {
        if (marks.isPurged(p, r.offset)) return false;
        const h = headerText(r.headers);
        // A structured-mode dead letter is decoded at most once, for its id and source and (held kinds) its type.
        let decoded: Promise<DeadLetterItem> | undefined;
        const item = (): Promise<DeadLetterItem> => (decoded ??= toItem(this.#codec, r, undefined));
        const taken = wanted === undefined ? await identity(h, undefined) : await wanted.take(p, r.offset, () => identity(h, item));
        if (taken === undefined) return false;
        const rank = wanted?.rankOf(p, r.offset, taken) ?? 0;
        let who = taken;
        const skip = (reason: string): false => {
          if (wanted !== undefined || skipped.length < MAX_LISTED) skipped.push({ ...who, deadLetter: coords(r), reason, rank });
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
        if (wanted !== undefined) {
          // A list selection is produced in the order asked, so it is held until every partition was read.
          chosen.push({ record, from: r, acted: { ...who, deadLetter: coords(r) }, rank });
          return false;
        }
        pending.push({ record, from: r });
        if (items.length < MAX_LISTED) items.push({ ...who, deadLetter: coords(r) });
        if (pending.length >= CHUNK) await flush();
        return false;
      });
    }
    // Array.prototype.sort is stable: the dead letters of one entry asked keep their dead-letter order.
    for (const c of chosen.sort((a, b) => a.rank - b.rank)) {
      pending.push({ record: c.record, from: c.from });
      if (items.length < MAX_LISTED) items.push(c.acted);
      if (pending.length >= CHUNK) await flush();
    }
    await flush();
    const listedSkips = skipped
      .sort((a, b) => a.rank - b.rank)
      .slice(0, MAX_LISTED)
      .map(({ rank: _rank, ...s }) => s);
    return { redriven, items, skipped: listedSkips, notFound: wanted?.notFound() ?? [] };
  }

  /**
   * Purges the selected dead letters from the listing (marks; the records stay on the topic until its retention.ms, unlimited by default).
   * `all`: everything dead-lettered until now; `deadLetters`: those records, whatever they hold
   * (one that does not decode too).
   * Errors: CEG_MALFORMED_REQUEST (`deadLetters[i].partition|offset|topic`: malformed, or a topic
   *   other than the subscription's dead-letter topic; nothing is purged); the transport's.
   */
  purge(group: string, sel: Selection): Promise<PurgeResult> {
    return this.#exclusive(group, () => this.#purge(group, sel));
  }

  async #purge(group: string, sel: Selection): Promise<PurgeResult> {
    const dlq = deadLetterTopic(group);
    checkPositions(sel, dlq);
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
      if (wanted.passes(p)) continue;
      const records: OutboundRecord[] = [];
      await this.#scan(dlq, p, from, end.offset, async (r) => {
        if (marks.isPurged(p, r.offset)) return false;
        const who = await wanted.take(p, r.offset, () => identity(headerText(r.headers), () => toItem(this.#codec, r, undefined)));
        if (who === undefined) return false;
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
