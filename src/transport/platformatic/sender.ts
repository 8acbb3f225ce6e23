/**
 * Drives @platformatic/kafka's idempotent producer the one way it works: ONE send in flight.
 *
 * Facts (read from @platformatic/kafka 1.35's producer and connection, confirmed on Kafka 4.1.1):
 * - The producer numbers batches per partition (`sequences`), but advances the number only when
 *   a send's answer arrives, while the number is written into the request when `send()` is
 *   called. Two sends in flight for one partition carry the same first sequence: the broker
 *   answers the second with OUT_OF_ORDER_SEQUENCE_NUMBER (or takes it as a duplicate).
 * - `idempotent: true` forces `maxInflights: 1` per connection and `acks: -1`, and turns a
 *   `retries` of 0 or 1 into "retry forever" (so this adapter passes its bounded count ≥ 2).
 * - `send()` does no batching of its own (only `asStream()` batches); each call is one Produce
 *   request per leader, one record batch per partition.
 * - After a failed send the library does not advance the sequence of any partition of that
 *   request, even of partitions the broker did write: the state is then out of step and the next
 *   send to such a partition is refused. A new producer id (a fresh Producer) is the way out.
 * So this queue sends one request at a time and batches by itself: while a send is in flight,
 * produce calls wait; the next request carries every waiting call whose partitions are disjoint
 * (a partition's batch is then exactly what its caller sized against max.message.bytes, and the
 * broker never sees two batches of one partition in one request). After any failure the Producer
 * is replaced before the next send. Records of one partition keep their call order.
 */
import type { Producer } from '@platformatic/kafka';
import type { MessageToProduce } from '@platformatic/kafka';
import { GatewayError, errorMessage } from '../../core/errors.js';
import { senderChannel } from '../../core/stage-channels.js';
import type { SenderStages } from '../../core/stage-channels.js';
import type { Position } from '../port.js';
import { abortedProduce } from '../topics.js';
import type { TransportLogger } from '../kafka/logging.js';
import { closeForced } from './client-options.js';
import { fromPlatformaticError, producerStateLost, staleMetadata } from './errors.js';

export type Message = MessageToProduce<Buffer, Buffer, Buffer, Buffer> & { partition: number };

interface Job {
  readonly topic: string;
  readonly messages: readonly Message[];
  readonly partitions: readonly number[];
  readonly resolve: (p: readonly Position[]) => void;
  readonly reject: (e: GatewayError) => void;
  readonly signal: AbortSignal | undefined;
  inFlight: boolean;
  settled: boolean;
  onAbort: (() => void) | undefined;
  /** performance.now() when queued, only while a stage probe listens (src/core/stage-channels.ts); else 0. */
  readonly queuedAt: number;
}

/** Topics whose partition count the current producer is known to list, at most (then forgotten at once). */
const MAX_LISTED_TOPICS = 1_024;

/** Records per request at most when several calls are joined (one call is never cut). */
const MAX_JOINED_RECORDS = 5_000;

/**
 * Whether `err` is {@link SerialSender}'s refusal of a partition its producer's fresh metadata does
 * not list (nothing was sent; `details.listed` is the count it lists).
 */
export function partitionNotListed(err: unknown): boolean {
  return err instanceof GatewayError && typeof err.details?.listed === 'number';
}

export class SerialSender {
  readonly #queue: Job[] = [];
  readonly #newProducer: () => Producer;
  readonly #logger: TransportLogger;
  #producer: Producer | undefined;
  #stale = false;
  /** Partition counts the current producer's metadata is known to list, per topic (forgotten with the producer). */
  readonly #listedCounts = new Map<string, number>();
  #sending: Promise<void> | undefined;

  constructor(newProducer: () => Producer, logger: TransportLogger) {
    this.#newProducer = newProducer;
    this.#logger = logger;
  }

  /** Queues one call's records (all for `topic`, partitions chosen); resolves with one Position per record in input order. */
  send(topic: string, messages: readonly Message[], signal: AbortSignal | undefined): Promise<readonly Position[]> {
    return new Promise<readonly Position[]>((resolve, reject) => {
      const job: Job = { topic, messages, partitions: [...new Set(messages.map((m) => m.partition))], resolve, reject, signal, inFlight: false, settled: false, onAbort: undefined, queuedAt: senderChannel.hasSubscribers ? performance.now() : 0 };
      if (signal !== undefined) {
        job.onAbort = () => {
          if (job.settled) return;
          job.settled = true;
          // Still queued: nothing was sent. In flight: the records may land.
          if (!job.inFlight) this.#queue.splice(this.#queue.indexOf(job), 1);
          reject(abortedProduce(topic, job.inFlight, signal.reason));
        };
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.#queue.push(job);
      this.#kick();
    });
  }

  /** Waits for the send in flight; closes the producer. Calls still queued fail with `error`. */
  async close(error: GatewayError): Promise<void> {
    for (const job of this.#queue.splice(0)) this.#settle(job, undefined, error);
    await this.#sending;
    await this.#dropProducer();
  }

  #kick(): void {
    if (this.#sending !== undefined || this.#queue.length === 0) return;
    this.#sending = this.#loop().finally(() => {
      this.#sending = undefined;
      this.#kick();
    });
  }

  async #loop(): Promise<void> {
    while (this.#queue.length > 0) {
      const jobs = this.#take();
      if (jobs.length === 0) continue;
      await this.#sendJobs(jobs);
    }
  }

  /** The first waiting call, plus later ones on other partitions (never overtaking a call that shares one). */
  #take(): Job[] {
    const taken: Job[] = [];
    const used = new Set<string>();
    const blocked = new Set<string>();
    let records = 0;
    for (let i = 0; i < this.#queue.length; ) {
      const job = this.#queue[i]!;
      const keys = job.partitions.map((p) => `${job.topic}\u0000${p}`);
      const clash = keys.some((k) => used.has(k) || blocked.has(k));
      if (taken.length === 0 || (!clash && records + job.messages.length <= MAX_JOINED_RECORDS)) {
        taken.push(job);
        keys.forEach((k) => used.add(k));
        records += job.messages.length;
        this.#queue.splice(i, 1);
      } else {
        keys.forEach((k) => blocked.add(k));
        i++;
      }
    }
    for (const job of taken) job.inFlight = true;
    return taken;
  }

  async #sendJobs(taken: readonly Job[]): Promise<void> {
    let jobs = taken;
    let producer: Producer;
    try {
      if (this.#stale) await this.#dropProducer();
      producer = this.#producer ??= this.#newProducer();
    } catch (err) {
      const e = fromPlatformaticError(err, { operation: 'produce' });
      for (const job of jobs) this.#settle(job, undefined, e);
      return;
    }
    jobs = await this.#coveredByMetadata(producer, jobs);
    if (jobs.length === 0) return;
    const messages = jobs.length === 1 ? (jobs[0]!.messages as Message[]) : jobs.flatMap((j) => j.messages);
    const sentAt = senderChannel.hasSubscribers ? performance.now() : 0;
    try {
      let result;
      try {
        result = await producer.send({ messages, repeatOnStaleMetadata: false });
      } catch (err) {
        // What the library's `repeatOnStaleMetadata` does (one more send after a metadata refresh),
        // without its crash: it looks the partition's leader up in the refreshed metadata unchecked,
        // and a partition the topic no longer has (deleted and created again with fewer) threw a
        // TypeError out of a socket callback — uncaught, and this send never settled (1.35
        // producer.js #performSingleDestinationSend). Sent again only when the refreshed metadata
        // lists every partition of the request, on the same producer (sequence numbers unchanged:
        // what the broker wrote is taken as a duplicate); else it fails as it came.
        if (!staleMetadata(err) || !(await this.#listsAll(producer, jobs))) throw err;
        result = await producer.send({ messages, repeatOnStaleMetadata: false });
      }
      if (sentAt > 0) senderChannel.publish({ records: messages.length, queuedAt: jobs.map((j) => j.queuedAt), sentAt, answeredAt: performance.now(), ok: true } satisfies SenderStages);
      // Base offsets by topic, then by partition number: no key string per record (issue 14).
      const base = new Map<string, Map<number, bigint>>();
      for (const o of result.offsets ?? []) {
        let byPartition = base.get(o.topic);
        if (byPartition === undefined) base.set(o.topic, (byPartition = new Map<number, bigint>()));
        byPartition.set(o.partition, o.offset);
      }
      for (const job of jobs) {
        const next = new Map(base.get(job.topic));
        let positions: Position[] | undefined;
        let missing: number | undefined;
        positions = job.messages.map((m) => {
          const offset = next.get(m.partition);
          if (offset === undefined || offset < 0n) {
            missing = m.partition;
            return { topic: job.topic, partition: m.partition, offset: -1n };
          }
          next.set(m.partition, offset + 1n);
          return Object.freeze({ topic: job.topic, partition: m.partition, offset });
        });
        if (missing !== undefined) {
          positions = undefined;
          this.#settle(job, undefined, new GatewayError('CEG_DELIVERY_TIMEOUT', `broker acknowledged ${job.topic} without an offset for partition ${missing}`, {
            retriable: true,
            details: { topic: job.topic, partition: missing, indeterminate: true },
          }));
        } else {
          this.#settle(job, positions, undefined);
        }
      }
    } catch (err) {
      if (sentAt > 0) senderChannel.publish({ records: messages.length, queuedAt: jobs.map((j) => j.queuedAt), sentAt, answeredAt: performance.now(), ok: false } satisfies SenderStages);
      // The library advanced no sequence of this request: start the next send with a new producer id.
      this.#stale = true;
      if (producerStateLost(err)) this.#logger.warn({ transport: 'kafka', err: errorMessage(err) }, 'idempotent producer state lost; the next send uses a new producer');
      const mapped = fromPlatformaticError(err, { operation: 'produce', topic: jobs[0]!.topic, records: messages.length });
      if (jobs.length > 1 && !mapped.retriable) {
        // One call's records were refused for good (too large, say): the others may be fine.
        // Each call goes again on its own, so only the call at fault gets the refusal. Records
        // the broker wrote before are written again (consumers drop duplicates by source+id).
        for (const job of jobs) {
          if (job.settled) continue;
          await this.#sendJobs([job]);
        }
        return;
      }
      const e = producerStateLost(err)
        ? new GatewayError('CEG_BROKER_UNAVAILABLE', `producer state lost: ${errorMessage(err)}`, { retriable: true, cause: err, details: { ...mapped.details, indeterminate: true } })
        : mapped.code === 'CEG_INVALID_NAME' || mapped.code === 'CEG_PAYLOAD_TOO_LARGE'
          ? mapped
          : new GatewayError(mapped.code, mapped.message, { retriable: mapped.retriable, cause: err, details: { ...mapped.details, indeterminate: true } });
      for (const job of jobs) this.#settle(job, undefined, e);
    }
  }

  /**
   * The jobs whose partitions the producer's metadata lists. @platformatic/kafka 1.35 writes a
   * record whose partition is not below its cached partition count to `partition % count`
   * (producer.js `#performSend`): after `kafka-topics --alter --partitions`, when the transport's
   * partition count (which chose the partition) is fresher than the producer's, a record would land
   * on another partition than the one chosen — out of its key's order — and come back without an
   * offset. So a job naming a partition beyond what this producer is known to list first has the
   * producer's metadata of its topic refreshed (once per topic per producer, and again only when a
   * higher partition is named); a job still not covered fails, retriable, with nothing sent and
   * `details.listed` the partition count the fresh metadata lists ({@link partitionNotListed}: the
   * transport then asks its own count again, as for a topic created again with fewer partitions);
   * a failed refresh fails it with the error the send would have failed with, mapped as the send's.
   */
  async #coveredByMetadata(producer: Producer, jobs: readonly Job[]): Promise<readonly Job[]> {
    let out: Job[] | undefined;
    for (const [index, job] of jobs.entries()) {
      let highest = 0;
      for (const p of job.partitions) if (p > highest) highest = p;
      let listed = this.#listedCounts.get(job.topic);
      let refusal: GatewayError | undefined;
      if (listed === undefined || highest >= listed) {
        try {
          const metadata = await producer.metadata({ topics: [job.topic], forceUpdate: true });
          listed = metadata.topics.get(job.topic)?.partitionsCount ?? 0;
          // Bounded: every topic ever written to (each subscription's dead-letter and retry topics)
          // would stay; forgetting them all costs one metadata request per topic at its next send.
          if (this.#listedCounts.size >= MAX_LISTED_TOPICS) this.#listedCounts.clear();
          this.#listedCounts.set(job.topic, listed);
        } catch (err) {
          // What the send would have failed with (the broker's absence, an unknown topic): nothing was sent.
          refusal = fromPlatformaticError(err, { operation: 'produce', topic: job.topic, records: job.messages.length });
        }
      }
      if (refusal === undefined && highest < listed!) {
        out?.push(job);
        continue;
      }
      out ??= jobs.slice(0, index);
      this.#settle(job, undefined, refusal ?? new GatewayError('CEG_BROKER_UNAVAILABLE', `the producer's metadata of ${job.topic} lists ${listed} partitions, not partition ${highest}; nothing was sent`, {
        retriable: true,
        details: { topic: job.topic, partition: highest, listed, indeterminate: false },
      }));
    }
    return out ?? jobs;
  }

  /** Whether the producer's metadata, refreshed now, lists every partition of `jobs` (false when the refresh fails). */
  async #listsAll(producer: Producer, jobs: readonly Job[]): Promise<boolean> {
    try {
      const metadata = await producer.metadata({ topics: [...new Set(jobs.map((j) => j.topic))], forceUpdate: true });
      return jobs.every((job) => {
        const listed = metadata.topics.get(job.topic)?.partitionsCount ?? 0;
        this.#listedCounts.set(job.topic, listed);
        return job.partitions.every((p) => p < listed);
      });
    } catch {
      return false;
    }
  }

  #settle(job: Job, positions: readonly Position[] | undefined, error: GatewayError | undefined): void {
    if (job.onAbort !== undefined) job.signal?.removeEventListener('abort', job.onAbort);
    if (job.settled) return;
    job.settled = true;
    if (error !== undefined) job.reject(error);
    else job.resolve(positions ?? []);
  }

  async #dropProducer(): Promise<void> {
    const old = this.#producer;
    this.#producer = undefined;
    this.#stale = false;
    this.#listedCounts.clear();
    if (old !== undefined) await closeForced(old).catch((err: unknown) => this.#logger.debug({ transport: 'kafka', err: errorMessage(err) }, 'producer close failed'));
  }
}
