/**
 * `start` of a new subscription, resolved when it is created: the group's offsets are committed
 * before the creation is answered, so the group never depends on what "latest" means at the moment
 * its first member happens to join. `latest` commits the end offsets of now (every event accepted
 * after the `201` is delivered), `earliest` the start of the log, a time the first offset at or after
 * it (Kafka's offsets-for-times; the record timestamp is when the gateway wrote the record). The
 * subscription's own retry topic starts at its beginning, its redrive topic at its end.
 * Kafka refuses to move the offsets of a group with members; a group of a deleted subscription of
 * the same name may still have some for a moment, so this waits for them to leave (bounded).
 * Spec: issue 8 ("resolved when the subscription is created"); DESIGN "Delivery" (T5).
 */
import { GatewayError, isGatewayError } from '../../core/errors.js';
import { sleep } from '../../core/retry.js';
import type { OffsetTarget, Transport } from '../../transport/port.js';
import { isRfc3339Timestamp } from '../../envelope/index.js';

/** The offset target of a `start` value (`latest`, `earliest` or an RFC 3339 time). */
export function startTarget(start: string): OffsetTarget {
  if (start === 'latest') return { kind: 'latest' };
  if (start === 'earliest') return { kind: 'earliest' };
  const ms = isRfc3339Timestamp(start) ? Date.parse(start) : Number.NaN;
  if (!Number.isFinite(ms)) throw new GatewayError('CEG_INVALID_OPTIONS', `start: ${start.slice(0, 60)} is not an RFC 3339 time`, { retriable: false, details: { field: 'start' } });
  return { kind: 'timestamp', timestampMs: ms };
}

/**
 * Commits the group's start offsets on `topics`, and on each of the subscription's own topics
 * (`own`: its retry topic from the beginning; its redrive topic from the end, so a subscription
 * created again under an old name never gets the old one's redriven events).
 * Errors: CEG_INVALID_OPTIONS (retriable) when the group still has members after `waitMs`; the transport's.
 */
export async function commitStart(transport: Transport, group: string, topics: readonly string[], start: string, own: readonly (readonly [topic: string, at: 'earliest' | 'latest'])[] = [], waitMs = 15_000): Promise<void> {
  const target = startTarget(start);
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      for (const topic of topics) await transport.resetOffsets(group, topic, target);
      for (const [topic, at] of own) await transport.resetOffsets(group, topic, { kind: at });
      return;
    } catch (err) {
      // groupBusy: the members of an earlier subscription of this name are still leaving.
      const busy = isGatewayError(err, 'CEG_INVALID_OPTIONS') && err.retriable;
      if (!busy || Date.now() > deadline) throw err;
      await sleep(Math.min(2000, 100 * attempt));
    }
  }
}
