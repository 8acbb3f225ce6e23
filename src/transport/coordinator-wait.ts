/**
 * A consumer group's coordinator that is not there yet: on a broker just started (or one that has
 * just taken over `__consumer_offsets` partitions) FindCoordinator answers COORDINATOR_NOT_AVAILABLE
 * while the offsets topic is created, and the group calls answer NOT_COORDINATOR or
 * COORDINATOR_LOAD_IN_PROGRESS while its partition is loaded: seconds, longer the more the offsets
 * topic holds. Both clients retry such an answer only a few times on the connection they have
 * (`retries`, `initialRetryTimeMs` apart: 1.5 s by default, 0.1 s in the fault tests), so the start
 * of a consumer (`consume()`: its start offsets, its first join) failed on a broker just started
 * (stack-restart, producer-state-lost and start-offsets-stall retried around it). The start calls
 * go through {@link whileCoordinatorLoads} instead: tried again with backoff for up to
 * {@link COORDINATOR_WAIT_MS}, then a retriable error naming the group. The transports' other group
 * calls (committed offsets, member-less commits and resets, a group's members) go through it too,
 * for the shorter {@link GROUP_CALL_COORDINATOR_WAIT_MS}: their callers answer HTTP requests.
 * Spec: DESIGN "Known traps" (retriable decided at the throw site); STYLE "one central retry policy".
 */
import { errorMessage, GatewayError } from '../core/errors.js';
import { retryPolicy } from '../core/retry.js';
import { retrying } from '../core/retrying.js';
import type { TransportLogger } from './kafka/logging.js';

/**
 * How long a start-time group call waits for its coordinator, ms. Not derived from the client's
 * retry options: how long a coordinator takes to load depends on the broker (the size of
 * `__consumer_offsets`), not on how patient one request is. 30 s: the broker restarts of
 * stack-restart took up to ~10 s to answer group calls again.
 */
export const COORDINATOR_WAIT_MS = 30_000;

/**
 * How long the transports' group calls outside a consumer's start (`committedOffsets`,
 * `committedOffsetsOf`, `commitOffsets` and so `resetOffsets`, `groupMembers`) wait for the
 * group's coordinator, ms: long enough for a coordinator a broker is creating or moving (the
 * offsets topic of a fresh broker was there within about a second in the tests:
 * test/integration/consumer/coordinator-calls.kafka.test.ts), short because HTTP requests wait on
 * these calls: a pull's opening and each cursor commit are bounded by PULL_BROKER_GRACE_MS (5 s,
 * bus/subscriptions/pull/service.ts) and the lag of every subscription at a /metrics scrape by
 * LAG_SCRAPE_BUDGET_MS (4 s, app/gateway.ts); `GET /subscriptions/{name}/status` and a replay's
 * reset have no bound of their own and answer a retriable 503 once it passes. 3 s leaves those
 * budgets a second for the call that then goes through. A wait not over by then fails as
 * {@link whileCoordinatorLoads} says (a retriable CEG_BROKER_UNAVAILABLE, `Retry-After`).
 */
export const GROUP_CALL_COORDINATOR_WAIT_MS = 3_000;

/** Options of {@link whileCoordinatorLoads}. */
export interface CoordinatorWaitOptions {
  /** The consumer group the call is about (named in the log and in the error). */
  readonly group: string;
  /** What is being done, for the log and the error ("consume", "start offsets"…). */
  readonly operation: string;
  /** true when the client's error says the group's coordinator is not available, moving or loading. */
  readonly coordinatorBusy: (err: unknown) => boolean;
  /** The client's error as a GatewayError (fromKafkaError / fromPlatformaticError with context). */
  readonly map: (err: unknown) => GatewayError;
  /** First wait, ms (the transport's `initialRetryTimeMs`); doubles per attempt. */
  readonly initialDelayMs: number;
  /** Longest wait, ms (the transport's `maxRetryTimeMs`). */
  readonly maxDelayMs: number;
  readonly logger: TransportLogger;
  /** How long to keep trying, ms from the first attempt. Default {@link COORDINATOR_WAIT_MS}. */
  readonly waitMs?: number;
  /** Clock, ms (tests). Default Date.now. */
  readonly now?: () => number;
}

/**
 * Runs `fn`, trying it again while it fails because the group's coordinator is not available
 * (`coordinatorBusy`), waiting `initialDelayMs` doubling up to `maxDelayMs` (20 % jitter) between
 * attempts, for up to `waitMs`. Each retry is logged (info, with the group, the attempt and the wait).
 * Resolves with `fn`'s result.
 * Errors: CEG_BROKER_UNAVAILABLE (retriable: true, `details.reason` 'coordinator-unavailable',
 *   `details.group`, `details.attempts`) when the coordinator is still not there after `waitMs`;
 *   any other failure of `fn` at once, mapped by `map` (its own `retriable`).
 */
export async function whileCoordinatorLoads<T>(fn: () => Promise<T>, o: CoordinatorWaitOptions): Promise<T> {
  const now = o.now ?? Date.now;
  const waitMs = o.waitMs ?? COORDINATOR_WAIT_MS;
  const started = now();
  let attempts = 0;
  const policy = retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: o.initialDelayMs, factor: 2, maxDelayMs: Math.max(o.initialDelayMs, o.maxDelayMs), jitter: 0.2 });
  try {
    return await retrying(
      async () => {
        attempts++;
        return fn();
      },
      {
        policy,
        maxAttempts: Infinity,
        // No wait begins once the bound has passed (the last one may end a little after it).
        classify: (err) => o.coordinatorBusy(err) && now() - started < waitMs,
        // info, not warn: the broker answered (a coordinator loading is no outage, kafka/outage.ts
        // would take a warn line about it as one); the start's failure, if it comes, is the caller's to report.
        onRetry: ({ attempt, error, delayMs }) =>
          o.logger.info({ group: o.group, operation: o.operation, attempt, delayMs, err: errorMessage(error) }, 'the group coordinator is not available yet (a broker starting or moving the group); trying again'),
      },
    );
  } catch (err) {
    if (!o.coordinatorBusy(err)) throw o.map(err);
    const mapped = o.map(err);
    throw new GatewayError('CEG_BROKER_UNAVAILABLE', `${o.operation}: the coordinator of group ${o.group} was not available after ${attempts} attempts in ${now() - started} ms: ${mapped.message}`, {
      retriable: true,
      cause: err,
      details: { ...mapped.details, group: o.group, operation: o.operation, attempts, reason: 'coordinator-unavailable' },
    });
  }
}
