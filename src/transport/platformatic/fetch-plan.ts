/**
 * How the @platformatic/kafka consumption fetches next: a long poll, a fetch that does not wait, or
 * a sleep first. Pure, so the choice is testable without a broker.
 *
 * A long poll (`maxWaitTimeMs`) holds the fetcher's connection until data comes, and nothing else
 * can be fetched meanwhile. So it is used only when no partition will want a fetch soon:
 * - a partition without a lane still handling its records will want one once fewer than
 *   PREFETCH_BELOW wait: a quiet partition (the redrive topic, an empty retry topic) long-polled
 *   alone cut a subscription's throughput by half (issue 8 profile);
 * - a lane paused for backpressure (LANE_HIGH records waiting) will want one once down to LANE_LOW,
 *   and its unpause wakes the loop: a batched push subscription reading a backlog spent half its
 *   time idle in 1 s long polls of its empty retry and redrive partitions (issue 8 profile,
 *   2026-12-02: 10k → 16–18k events/s once fixed).
 * Otherwise the fetch does not wait (`maxWaitTimeMs` 0), and partitions that came back empty
 * (`idle`) alone are polled at most once per `maxWaitTimeMs` — or per {@link BACKLOG_QUIET_POLL_MS}
 * while a lane is backlogged, so that a quiet partition's new records wait at most that long.
 *
 * A long poll becomes a linger (GroupSpec `fetchLingerMs`) when the last fetch brought a trickle
 * (1 to {@link LINGER_BELOW_RECORDS} - 1 records): the broker answers once
 * {@link LINGER_MIN_BYTES} have come or the linger has passed, whichever is first (Kafka Fetch
 * `min_bytes` and `max_wait_ms`). At 1,000 single events/s a push subscription otherwise fetched
 * once per produce, one record each: about a tenth of the delivering process's CPU (issue 8
 * probe, 2026-12-02: 778–818 against 710–728 µs per event). After an empty fetch the long poll is
 * as before, so the first record after a quiet spell is not delayed.
 *
 * A partition resumed after a redelivery wait is not in the fetch under way, and nothing cuts a
 * fetch short, so it waited for the end of the long poll: an unordered subscription with a 200 ms
 * backoff retried every ~1,000 ms (its retry-topic record is fetched before it is due, its
 * partition paused for the rest of the wait, the resume fell inside the 1 s long poll of the
 * other partitions; test/integration/subscriptions/retry-backoff-timing.kafka.test.ts: gaps
 * 1,009–1,082 ms, with lanes or without). So a long poll (or a linger):
 * - never outlasts the wait of a partition paused for a redelivery (`untilResumeMs`): about one
 *   fetch more per redelivery;
 * - lasts at most {@link IN_HAND_MAX_WAIT_MS} while a lane has records in hand or waiting (one
 *   may yet ask for a redelivery, and the long poll that began before would not see it; a linger
 *   still asks for its `min_bytes`, for no longer than that): at most
 *   1000 / IN_HAND_MAX_WAIT_MS = 10 fetch requests per second while deliveries are under way,
 *   none more when the lanes are empty (an idle subscription still long-polls).
 */

/**
 * Longest long poll while a lane has records in hand or waiting, ms: how late the fetch loop may
 * learn of a redelivery decided meanwhile (and cap its next long poll at the resume). The price: up
 * to 10 fetch requests per second while deliveries are under way instead of 1.
 */
export const IN_HAND_MAX_WAIT_MS = 100;

/** A fetch that brought at least this many records was no trickle: the next one does not linger. */
export const LINGER_BELOW_RECORDS = 100;

/** Bytes the broker gathers before it answers a lingering fetch early (about 160 records of 400 bytes). */
export const LINGER_MIN_BYTES = 64 * 1024;

/**
 * While a lane is paused for backpressure, partitions that came back empty are polled at most this
 * often, ms (without a long poll, which would hold up the backlogged lane's next fetch).
 */
export const BACKLOG_QUIET_POLL_MS = 50;

/** What the plan reads of a partition held. */
export interface PlannedPartition {
  readonly revoked: boolean;
  /** Without a lane: its fetched records are being handled. */
  readonly busy: boolean;
  /** Its last fetch brought no record. */
  readonly idle: boolean;
  /**
   * With a lane: whether it is paused for backpressure (`paused`), whether it is halted (a
   * redelivery wait, a failure, revoked), and its records in hand and waiting to start (one of
   * them may yet ask for a redelivery).
   */
  readonly lane: { readonly paused: boolean; readonly halted: boolean; readonly inHand: number; readonly waiting: number } | undefined;
}

/**
 * Sleep `sleepMs` first (a wake-up ends it early), or fetch now waiting at most `maxWaitTimeMs` for
 * data — for `minBytes` of it when set (a linger), else for any.
 */
export type FetchPlan = { readonly sleepMs: number } | { readonly maxWaitTimeMs: number; readonly minBytes?: number };

/** The consumption's fetch linger (ms, 0 = none) and how many records its last fetch brought. */
export interface Linger {
  readonly ms: number;
  readonly lastFetchRecords: number;
}

/**
 * @param held every partition the member holds.
 * @param wanted the partitions to fetch now (not paused, not revoked).
 * @param maxWaitTimeMs the transport's long-poll wait, ms.
 * @param sinceQuickPollMs time since the last fetch that did not wait, ms.
 * @param linger the fetch linger and the last fetch's record count; default none.
 * @param untilResumeMs time until the first partition paused for a redelivery resumes, ms; default none (Infinity).
 */
export function fetchPlan(
  held: Iterable<PlannedPartition>,
  wanted: readonly PlannedPartition[],
  maxWaitTimeMs: number,
  sinceQuickPollMs: number,
  linger: Linger = { ms: 0, lastFetchRecords: 0 },
  untilResumeMs = Number.POSITIVE_INFINITY,
): FetchPlan {
  if (wanted.length === 0) return { sleepMs: maxWaitTimeMs };
  let handling = false;
  let backlogged = false;
  let inHand = false;
  for (const p of held) {
    if (p.revoked) continue;
    if (p.lane === undefined) handling ||= p.busy;
    else {
      backlogged ||= p.lane.paused && !p.lane.halted;
      inHand ||= p.lane.inHand > 0 || p.lane.waiting > 0;
    }
  }
  if (!handling && !backlogged) {
    // Ends by the time a paused partition resumes (at least 1 ms: its timer fires meanwhile, no spin),
    // and, linger or not, soon while a lane's record may yet ask for a redelivery.
    const poll = Math.min(maxWaitTimeMs, Math.max(1, Math.ceil(untilResumeMs)));
    const cap = inHand ? IN_HAND_MAX_WAIT_MS : Number.POSITIVE_INFINITY;
    const trickle = linger.lastFetchRecords > 0 && linger.lastFetchRecords < LINGER_BELOW_RECORDS;
    return trickle && linger.ms > 0 && linger.ms < poll ? { maxWaitTimeMs: Math.min(linger.ms, cap), minBytes: LINGER_MIN_BYTES } : { maxWaitTimeMs: Math.min(poll, cap) };
  }
  const interval = backlogged ? Math.min(maxWaitTimeMs, BACKLOG_QUIET_POLL_MS) : maxWaitTimeMs;
  if (wanted.every((p) => p.idle) && sinceQuickPollMs < interval) return { sleepMs: Math.max(1, Math.ceil(interval - sinceQuickPollMs)) };
  return { maxWaitTimeMs: 0 };
}
