/**
 * The longest delay a Node timer holds, ms (2^31 − 1, about 24.8 days): `setTimeout` and
 * `setInterval` run a longer one after 1 ms (with a TimeoutOverflowWarning), so every option that
 * becomes a timer is checked against it.
 * Spec: Node.js timers (`setTimeout`: "When delay is larger than 2147483647 … the delay will be set to 1").
 */
export const MAX_TIMER_MS = 2_147_483_647;
