/**
 * The longest delay a Node timer holds, ms (2^31 − 1, about 24.8 days): `setTimeout` and
 * `setInterval` run a longer one after 1 ms (with a TimeoutOverflowWarning), so every option that
 * becomes a timer is checked against it.
 * Spec: Node.js timers (`setTimeout`: "When delay is larger than 2147483647 … the delay will be set to 1").
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * `ms` as a delay a Node timer honours: at most {@link MAX_TIMER_MS}. For waits computed at run
 * time (a token bucket's next token at a tiny rate: 1e-9 events/s is a token every 31 years), where
 * no option check can bound the value; the caller checks again when the timer fires and waits on.
 * Without it the timer fired after 1 ms, over and over, each time with a TimeoutOverflowWarning on
 * stderr (thousands of lines a second, not JSON) and a wake-up per millisecond per waiting attempt.
 * Units: ms in, ms out; NaN is taken as 1 (the shortest wait, as Node itself does).
 */
export function timerDelay(ms: number): number {
  return ms > MAX_TIMER_MS ? MAX_TIMER_MS : ms >= 1 ? ms : 1;
}
