/**
 * Reads a correlation chain from the log: every record of the given topics from a start (the
 * earliest offset, or the first record at or after `sinceMs`) up to the end offsets taken when the
 * read starts, whose `ce_correlationid` header matches. Only matching records are decoded, and they
 * are decoded and validated exactly as a subscription would (header bounds, registry, reader
 * schema, envelope rules): a record a subscription would dead-letter is reported as invalid with
 * the reason, never shown as part of the chain. A group-less read: no consumer group is left behind.
 * Spec: bus spec T15, M2; issue 7 (tail and trace decode like a subscription; an incomplete answer says so).
 */
import type { EventCodec } from '../../codec/event/index.js';
import { DEFAULT_ENVELOPE_LIMITS } from '../../envelope/index.js';
import type { EnvelopeLimits } from '../../envelope/index.js';
import type { Transport, TransportRecord } from '../../transport/port.js';
import { headerBoundsProblem } from '../subscriber/pipeline/bounds.js';
import { decodeRecord, peekHeaders } from '../subscriber/pipeline/decode.js';
import type { LocatedEvent } from './tree.js';

// ignoreBOM: a leading U+FEFF in a header value or key is part of it (CloudEvents attributes may start with one).
const dec = new TextDecoder('utf-8', { ignoreBOM: true });

function correlationOf(r: TransportRecord): string | undefined {
  for (const [n, v] of r.headers) if (n === 'ce_correlationid') return dec.decode(v);
  return undefined;
}

/** A record of the chain that a subscription would dead-letter. */
export interface InvalidChainRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly reason: string;
}

export interface ChainRead {
  readonly events: LocatedEvent[];
  readonly invalid: InvalidChainRecord[];
  /** false when the time limit ended the read before every partition reached its end offset: the chain may be incomplete. */
  readonly complete: boolean;
  /** Records read (matching or not). */
  readonly scanned: number;
}

export interface ReadChainOptions {
  /** Upper bound of the read, ms. Default 60,000. */
  readonly timeoutMs?: number;
  /** Start at the first record at or after this instant (epoch ms) instead of the earliest offset. */
  readonly sinceMs?: number;
  readonly limits?: EnvelopeLimits;
}

/**
 * Errors: CEG_BROKER_UNAVAILABLE (retriable). Matching records that do not decode are listed in
 * `invalid`; a read cut by the time limit is reported with `complete: false`.
 */
export async function readChain(transport: Transport, codec: EventCodec, topics: readonly string[], correlationid: string, o: ReadChainOptions = {}): Promise<ChainRead> {
  const events: LocatedEvent[] = [];
  const invalid: InvalidChainRecord[] = [];
  const limits = o.limits ?? DEFAULT_ENVELOPE_LIMITS;
  let scanned = 0;
  const read = await transport.read({ topics, from: o.sinceMs === undefined ? { kind: 'earliest' } : { kind: 'timestamp', timestampMs: o.sinceMs }, untilEnd: true }, async (r) => {
    scanned++;
    const at = { topic: r.topic, partition: r.partition, offset: r.offset.toString() };
    const tooBig = headerBoundsProblem(r, limits);
    // An oversized record is not read further; it belongs to the chain only if its correlationid says so.
    if (tooBig !== undefined) {
      if (r.headers.some(([n, v]) => n === 'ce_correlationid' && v.byteLength < 1024 && dec.decode(v) === correlationid)) invalid.push({ ...at, reason: tooBig });
      return;
    }
    if (correlationOf(r) !== correlationid) return;
    const d = await decodeRecord(codec, r, peekHeaders(r));
    if (d.ok) events.push({ event: d.event, topic: r.topic, partition: r.partition, offset: r.offset });
    else invalid.push({ ...at, reason: d.reason });
  });
  let timer: NodeJS.Timeout | undefined;
  let complete = true;
  try {
    await Promise.race([
      read.done,
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          complete = false;
          resolve();
        }, o.timeoutMs ?? 60_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    await read.stop();
  }
  return { events, invalid, complete, scanned };
}
