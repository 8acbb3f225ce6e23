/**
 * A group-less read on @platformatic/kafka (operators' `tail` and `trace`). The library fetches
 * by offset without joining a group, so the read keeps its own positions: no group is joined,
 * created or left behind, nothing is committed. A read needs READ and DESCRIBE on the topics only.
 * Records arrive in offset order per partition, one at a time.
 * Spec: issue 7 ("neither command leaves a consumer group behind"); issue 14.
 */
import type { Consumer } from '@platformatic/kafka';
import { errorMessage } from '../../core/errors.js';
import type { KafkaTransportOptions } from '../kafka/options.js';
import type { Read, ReadSpec, TransportRecord } from '../port.js';
import { fromPlatformaticError } from './errors.js';
import type { FetchPosition } from './fetcher.js';
import { fetchOnce, listOffsets, openFetcher, outOfRangeReset, recreatedTopicReset, tpKey } from './fetcher.js';

/**
 * Starts the read. Errors: the library's errors from the offset look-ups (the caller maps them);
 * a failing fetch later rejects `done` with a mapped GatewayError.
 */
export async function startPlatformaticRead(tools: Consumer, spec: ReadSpec, handler: (r: TransportRecord) => Promise<void>, opts: KafkaTransportOptions): Promise<Read> {
  const positions = new Map<string, { topic: string; partition: number; offset: bigint; end: bigint }>();
  for (const topic of [...new Set(spec.topics)]) {
    const from = spec.from;
    const ends = await listOffsets(tools, topic, 'latest');
    if (from.kind === 'positions') {
      const logStarts = await listOffsets(tools, topic, 'earliest');
      for (const p of from.positions) {
        const end = ends[p.partition];
        if (p.topic !== topic || end === undefined) continue;
        const logStart = logStarts[p.partition] ?? 0n;
        // Below the log start (records deleted) or past the end (the topic created again): from the
        // log start, as a subscription (src/transport/out-of-range.ts); one past the end waits.
        positions.set(tpKey(topic, p.partition), { topic, partition: p.partition, offset: outOfRangeReset(p.offset, logStart, end)?.to ?? p.offset, end });
      }
      continue;
    }
    const starts = from.kind === 'earliest' ? await listOffsets(tools, topic, 'earliest') : from.kind === 'latest' ? ends : await listOffsets(tools, topic, { timestampMs: from.timestampMs });
    ends.forEach((end, partition) => {
      const s = starts[partition] ?? end;
      positions.set(tpKey(topic, partition), { topic, partition, offset: s < 0n ? end : s, end }); // -1: no record at or after the time
    });
  }
  const open = (p: { offset: bigint; end: bigint }): boolean => spec.untilEnd !== true || p.offset < p.end;
  if (![...positions.values()].some(open)) return { done: Promise.resolve(), stop: () => Promise.resolve() };

  const fetcher = openFetcher(opts, 'read', `${opts.clientId}-read-never-joined`);
  let stopping = false;
  const loop = (async () => {
    let failures = 0;
    while (!stopping) {
      const wanted: FetchPosition[] = [...positions.values()].filter(open);
      if (wanted.length === 0) return;
      let fetched;
      try {
        fetched = await fetchOnce(fetcher, wanted, { maxWaitTimeMs: opts.maxWaitTimeMs, maxBytes: 10 * 1_048_576, maxBytesPerPartition: 1_048_576 });
        failures = 0;
      } catch (err) {
        if (stopping) return;
        if (++failures > opts.retries) throw fromPlatformaticError(err, { operation: 'read', topics: spec.topics });
        opts.logger.debug({ err: errorMessage(err) }, 'read: fetch failed, trying again');
        fetcher.consumer.clearMetadata();
        await new Promise((r) => setTimeout(r, opts.initialRetryTimeMs));
        continue;
      }
      for (const f of fetched) {
        const p = positions.get(tpKey(f.topic, f.partition));
        if (p === undefined) continue;
        if (f.outOfRange === true) {
          // Records deleted under the read (retention, delete-records), or a topic created again:
          // on from the log start, as a subscription does (./consumption.ts). Before, the broker's
          // answer failed every fetch of the read until it gave up (`done` rejected).
          const [starts, ends] = await Promise.all([listOffsets(fetcher.consumer, f.topic, 'earliest'), listOffsets(fetcher.consumer, f.topic, 'latest')]).catch((err: unknown) => {
            throw fromPlatformaticError(err, { operation: 'read', topics: spec.topics });
          });
          const reset = f.recreated === true ? recreatedTopicReset(starts[f.partition] ?? 0n) : outOfRangeReset(p.offset, starts[f.partition] ?? 0n, ends[f.partition] ?? 0n);
          if (reset === undefined) continue;
          opts.logger.warn({ topic: f.topic, partition: f.partition, offset: p.offset.toString(), logStart: reset.to.toString(), lost: reset.lost?.toString() ?? 'unknown', reason: reset.why }, 'read: offset out of range; going on from the log start');
          p.offset = reset.to;
          continue;
        }
        for (const r of f.records) {
          if (stopping) return;
          if (spec.untilEnd === true && r.offset >= p.end) break;
          await handler(r);
          p.offset = r.offset + 1n;
        }
        if (f.next > p.offset && !(spec.untilEnd === true && p.offset >= p.end)) p.offset = f.next;
      }
    }
  })();
  const done = loop.finally(() => fetcher.close().catch(() => undefined));
  done.catch(() => undefined); // nobody has to observe `done`
  let stopped: Promise<void> | undefined;
  return {
    done,
    stop: () =>
      (stopped ??= (async () => {
        stopping = true;
        await fetcher.close().catch(() => undefined);
        await done.catch(() => undefined);
      })()),
  };
}
