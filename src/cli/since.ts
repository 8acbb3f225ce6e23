import { InvalidArgumentError } from 'commander';
import { parseRfc3339Time } from '../core/rfc3339.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a `--since` / `--to-time` value into epoch ms: a duration back from now (`90s`, `15m`,
 * `2h`, `7d`, `500ms`) or an RFC 3339 time with an offset (`2026-12-01T08:00:00Z`), read by the
 * server's own parser (src/core/rfc3339.ts: `t`/`z` too, any fraction digits truncated to ms; an
 * impossible date, hour 24, minute 60, a leap second or an offset beyond ±23:59 refused).
 * An instant before 1970 (`1969-12-31T23:59:59Z`, `30000d`, `999999999d`) is 0: before every
 * record, so it reads from the earliest offset, as the gateway takes such a time for a
 * subscription's `start` and a replay's `to` (docs/subscriptions.md). Until 2026-12-07 the CLI
 * refused it, so `replay --to-time` and the HTTP replay it sends disagreed.
 * Errors: commander's InvalidArgumentError (exit 2 with the usage, which names the option), naming
 *   the accepted forms and what is wrong with the time.
 * Spec: RFC 3339 §5.6.
 */
export function parseSince(value: string, now: () => number = Date.now): number {
  const d = /^(\d{1,9})(ms|s|m|h|d)$/.exec(value.trim());
  if (d !== null) return fromEpoch(now() - Number(d[1]) * UNIT_MS[d[2]!]!);
  const forms = 'a duration such as 90s, 15m, 2h or 7d, or an RFC 3339 time with an offset such as 2026-12-01T08:00:00Z';
  // Something that starts as a date is read as a time, and told what is wrong with it.
  if (!/^\d{4}-/.test(value)) throw new InvalidArgumentError(forms);
  const t = parseRfc3339Time(value);
  if (!t.ok) throw new InvalidArgumentError(`${forms}: ${t.reason}`);
  return fromEpoch(t.epochMs);
}

/**
 * Kafka record timestamps are ms since 1970 (never negative), and its ListOffsets request reads -1
 * and -2 as "latest" and "earliest": an instant before 1970 is taken as 0, the same records (the
 * transports do so too: transport/timestamps.ts listOffsetsTime), and never a number out of
 * JavaScript's Date range (`999999999d`), which a replay turns into an ISO time.
 */
function fromEpoch(ms: number): number {
  return ms >= 0 ? ms : 0;
}
