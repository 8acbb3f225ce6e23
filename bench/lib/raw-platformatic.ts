/**
 * The second baseline: a raw @platformatic/kafka producer driven the one way its idempotent
 * producer works (see src/transport/platformatic/sender.ts): idempotent, acks -1, no compression,
 * explicit murmur2 partition, ONE send in flight. `concurrency` callers share it: each waits for
 * the send in flight, then the next send carries the records of every caller waiting (as the
 * adapter batches), so the figure is what the library can do as the adapter must drive it.
 */
import { Producer } from '@platformatic/kafka';
import type { MessageToProduce } from '@platformatic/kafka';
import { senderChannel } from '../../src/core/stage-channels.js';
import type { SenderStages } from '../../src/core/stage-channels.js';
import { partitionForKey } from '../../src/transport/partitioner.js';
import type { OutboundRecord } from '../../src/transport/port.js';
import type { RawLoadResult } from './raw-load.js';
import { runClosedLoop } from './raw-load.js';

type Msg = MessageToProduce<Buffer, Buffer, Buffer, Buffer>;
const buf = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

export interface RawPlatformatic {
  readonly producer: Producer;
  readonly messages: readonly Msg[];
  close(): Promise<void>;
}

export function connectRawPlatformatic(brokers: readonly string[], topic: string, partitions: number, records: readonly OutboundRecord[]): RawPlatformatic {
  const producer = new Producer({ clientId: 'ce-gateway-bench-raw-plt', bootstrapBrokers: [...brokers], idempotent: true, acks: -1, compression: 'none', retries: 5, autocreateTopics: false });
  const messages = records.map((r): Msg => {
    if (r.key === null || r.value === null) throw new Error('bench records must have a key and a value');
    const headers = new Map<Buffer, Buffer>();
    for (const [name, value] of r.headers) headers.set(Buffer.from(name), buf(value));
    return { topic, key: buf(r.key), value: buf(r.value), headers, partition: partitionForKey(r.key, partitions), timestamp: BigInt(r.timestampMs ?? Date.now()) };
  });
  return { producer, messages, close: () => producer.close() };
}

/**
 * How the adapter drives the library: callers queue their records; ONE send is in flight, and the
 * next carries every waiting caller's records. The function resolves true when its records were
 * acknowledged, false when their send failed.
 */
export function platformaticSender(c: RawPlatformatic): (messages: Msg[]) => Promise<boolean> {
  const waiting: { messages: Msg[]; done: (ok: boolean) => void; queuedAt: number }[] = [];
  let sending = false;
  const pump = async (): Promise<void> => {
    if (sending) return;
    sending = true;
    while (waiting.length > 0) {
      const calls = waiting.splice(0);
      const messages = calls.flatMap((w) => w.messages);
      // The same stage messages as the adapter's sender, for bench/latency-probe.ts (none unless it listens).
      const sentAt = senderChannel.hasSubscribers ? performance.now() : 0;
      const probe = (ok: boolean): void => {
        if (sentAt > 0) senderChannel.publish({ records: messages.length, queuedAt: calls.map((w) => w.queuedAt), sentAt, answeredAt: performance.now(), ok } satisfies SenderStages);
      };
      try {
        await c.producer.send({ messages });
        probe(true);
        calls.forEach((w) => w.done(true));
      } catch {
        probe(false);
        calls.forEach((w) => w.done(false));
      }
    }
    sending = false;
  };
  return (messages) =>
    new Promise<boolean>((done) => {
      waiting.push({ messages, done, queuedAt: senderChannel.hasSubscribers ? performance.now() : 0 });
      void pump();
    });
}

/** `concurrency` callers of `perSend` records each; one send in flight carrying every waiting caller's records. */
export function runRawPlatformaticLoad(c: RawPlatformatic, o: { concurrency: number; perSend: number; durationS: number }): Promise<RawLoadResult> {
  return runClosedLoop(c.messages, o, platformaticSender(c));
}
