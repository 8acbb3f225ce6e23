/**
 * A running group member that a retriable failure stopped joins its group again, the same way on
 * both Kafka adapters (kafka/consumption.ts, platformatic/consumption.ts): after a backoff, as
 * often as it takes, each rejoin logged with the same line and counts.
 * Spec: DESIGN "Known traps" (surface a dead consumer, never idle silently); issue 7.
 */
import type { KafkaTransportOptions } from './kafka/options.js';
import { errorMessage } from '../core/errors.js';

/**
 * The wait before a member's `rejoinsSinceJoin`-th rejoin since it last joined, ms:
 * `initialRetryTimeMs` · 2^(rejoinsSinceJoin − 1), at most `maxRetryTimeMs`. Pure.
 */
export function rejoinDelayMs(opts: Pick<KafkaTransportOptions, 'initialRetryTimeMs' | 'maxRetryTimeMs'>, rejoinsSinceJoin: number): number {
  return Math.min(opts.maxRetryTimeMs, opts.initialRetryTimeMs * 2 ** Math.min(Math.max(0, rejoinsSinceJoin - 1), 20));
}

/** Logs one rejoin (warn): the group, the cause, the counts (in all and since the last join) and the wait, ms. */
export function logRejoin(logger: KafkaTransportOptions['logger'], fields: { readonly group: string; readonly err: unknown; readonly rejoins: number; readonly rejoinsSinceJoin: number; readonly delayMs: number }): void {
  logger.warn({ ...fields, err: errorMessage(fields.err) }, 'kafka consumer stopped on a retriable failure; joining its group again');
}
