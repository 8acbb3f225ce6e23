import { InvalidArgumentError } from 'commander';
import { parseRfc3339Time } from '../core/rfc3339.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a `--since` / `--to-time` value into epoch ms: a duration back from now (`90s`, `15m`,
 * `2h`, `7d`, `500ms`) or an RFC 3339 time with an offset (`2026-12-01T08:00:00Z`), read by the
 * server's own parser (src/core/rfc3339.ts: `t`/`z` too, any fraction digits truncated to ms; an
 * impossible date, hour 24, minute 60, a leap second or an offset beyond ±23:59 refused).
 * Errors: commander's InvalidArgumentError (exit 2 with the usage, which names the option), naming
 *   the accepted forms and what is wrong with the time, or saying that the instant is before 1970
 *   (Kafka record timestamps start there).
 * Spec: RFC 3339 §5.6.
 */
export function parseSince(value: string, now: () => number = Date.now): number {
  const d = /^(\d{1,9})(ms|s|m|h|d)$/.exec(value.trim());
  if (d !== null) return notBeforeEpoch(now() - Number(d[1]) * UNIT_MS[d[2]!]!, value);
  const forms = 'a duration such as 90s, 15m, 2h or 7d, or an RFC 3339 time with an offset such as 2026-12-01T08:00:00Z';
  // Something that starts as a date is read as a time, and told what is wrong with it.
  if (!/^\d{4}-/.test(value)) throw new InvalidArgumentError(forms);
  const t = parseRfc3339Time(value);
  if (!t.ok) throw new InvalidArgumentError(`${forms}: ${t.reason}`);
  return notBeforeEpoch(t.epochMs, value);
}

/**
 * Kafka record timestamps are ms since 1970, and its ListOffsets request reads -1 and -2 as
 * "latest" and "earliest": an instant before 1970 would silently mean one of those (or no valid
 * time at all, past JavaScript's Date range), so it is refused. For everything written so far,
 * `--from-beginning` / `--to-earliest` is the way.
 */
function notBeforeEpoch(ms: number, value: string): number {
  if (ms >= 0) return ms;
  throw new InvalidArgumentError(`${value.trim().slice(0, 40)} reaches back before 1970-01-01T00:00:00Z, where Kafka record timestamps begin: give a later time (to read everything, start at the earliest offset instead)`);
}
