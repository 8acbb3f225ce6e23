/**
 * Reads a correlation chain from the log: every record of the given topics, from the earliest
 * offset to the end offsets taken when the read starts, whose `ce_correlationid` header matches.
 * Only matching records have their data decoded. Uses a throw-away consumer group.
 */
import { randomUUID } from 'node:crypto';
import type { EventCodec } from '../../codec/event/index.js';
import type { Transport, TransportRecord } from '../../transport/port.js';
import type { LocatedEvent } from './tree.js';

const dec = new TextDecoder();

function correlationOf(r: TransportRecord): string | undefined {
  for (const [n, v] of r.headers) if (n === 'ce_correlationid') return dec.decode(v);
  return undefined;
}

/**
 * Errors: CEG_BROKER_UNAVAILABLE (retriable); undecodable matching records are skipped and counted.
 * @param timeoutMs upper bound of the read, ms.
 */
export async function readChain(transport: Transport, codec: EventCodec, topics: readonly string[], correlationid: string, timeoutMs = 60_000): Promise<{ events: LocatedEvent[]; undecodable: number }> {
  const remaining = new Map<string, bigint>(); // topic/partition → last offset to read
  for (const topic of topics) {
    for (const p of await transport.endOffsets(topic)) if (p.offset > 0n) remaining.set(`${topic}/${p.partition}`, p.offset - 1n);
  }
  const events: LocatedEvent[] = [];
  let undecodable = 0;
  if (remaining.size === 0) return { events, undecodable };
  let finish: () => void = () => {};
  const finished = new Promise<void>((r) => (finish = r));
  const consumption = await transport.consume({ group: `ce-gateway-trace-${randomUUID()}`, topics, startFrom: 'earliest' }, async (r) => {
    const key = `${r.topic}/${r.partition}`;
    const last = remaining.get(key);
    if (last === undefined) return;
    if (correlationOf(r) === correlationid) {
      try {
        events.push({ event: await codec.fromRecord(r), topic: r.topic, partition: r.partition, offset: r.offset });
      } catch {
        undecodable++;
      }
    }
    if (r.offset >= last) {
      remaining.delete(key);
      if (remaining.size === 0) finish();
    }
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([finished, consumption.done, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
  } finally {
    clearTimeout(timer);
    await consumption.stop();
  }
  return { events, undecodable };
}
