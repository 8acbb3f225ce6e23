/**
 * A `consume()` on kafkajs whose topics may be deleted while it runs. kafkajs refreshes the
 * metadata of every topic its member subscribed to as one request and fails it whole when one
 * topic is missing; it cannot drop a topic from a running member. Until 2026-12-07 the member then
 * ended (CEG_INVALID_NAME, `details.topicMissing`, not retriable): a subscription whose kinds live
 * on several topics stopped delivering all of them because one retired kind's topic was deleted.
 * Kafka's Java consumer, and the @platformatic/kafka adapter (../platformatic/fetcher.ts), go on
 * with the others. Here the member that met the missing topic ends (kafkajs has left the group by
 * then; what it processed is committed, see consumption.ts commitAfterCrash) and a new kafkajs
 * member joins the same group on the topics that exist — the kept topics go on from the group's
 * committed offsets. The missing ones are named in one warning and looked up again every
 * `metadataMaxAgeMs`; one that exists again is taken back by a new member (the current one stops
 * cleanly first: records in hand finish or come again, what was processed is committed), which
 * reads it from its log start (a topic created again: the old offsets mean nothing in it).
 * With every topic missing no member runs (the group waits, as the @platformatic/kafka member
 * waits without anything to fetch) until one of them exists again.
 * Spec: DESIGN "Known traps" (commit only processed offsets; surface a dead consumer, never idle silently).
 */
import { errorMessage } from '../../core/errors.js';
import type { Consumption } from '../port.js';
import { rejoinDelayMs } from '../rejoin.js';
import { topicMissing } from '../topics.js';
import type { KafkaConsumption } from './consumption.js';
import { fromKafkaError } from './errors.js';
import type { KafkaTransportOptions } from './options.js';
import { neverRejects } from '../../core/never-rejects.js';

/** What a {@link TopicSetConsumption} asks its transport. */
export interface MemberStarts {
  /**
   * Starts a kafkajs member of the group on `topics` (each existing); the partitions of the topics
   * in `fromLogStart` (created again since they went missing) start at their log start whatever
   * the group committed on them. Errors: as `consume()` (a topic missing meanwhile: topicMissing).
   */
  start(topics: readonly string[], fromLogStart: readonly string[]): Promise<KafkaConsumption>;
  /** Of `topics`, those the broker lists now. Errors: the broker's, mapped (retriable when waiting helps). */
  present(topics: readonly string[]): Promise<ReadonlySet<string>>;
}

/**
 * One `consume()` on kafkajs: a kafkajs member ({@link KafkaConsumption}) on the subscribed topics
 * that exist, replaced when a topic goes missing or comes back (see the file's comment).
 * `done` rejects with the failure that ended a member for any other reason (a handler's rejection,
 * a refused login); it never rejects because a topic is missing, even all of them.
 */
export class TopicSetConsumption implements Consumption {
  readonly group: string;
  readonly done: Promise<void>;
  readonly #topics: readonly string[];
  readonly #starts: MemberStarts;
  readonly #opts: KafkaTransportOptions;
  #current: KafkaConsumption | undefined;
  /** Topics found missing, not yet back. */
  readonly #missing = new Set<string>();
  /** Joins of the members that ran before the current one. */
  #joinsBefore = 0;
  /** Failed look-ups or starts in a row (the backoff before the next try). */
  #failuresInRow = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The look-up or member switch under way (one at a time). */
  #work: Promise<void> = Promise.resolve();
  #stopping = false;
  #stopped: Promise<void> | undefined;
  #failure: { readonly err: unknown } | undefined;
  #settle!: (failure: { readonly err: unknown } | undefined) => void;

  private constructor(group: string, topics: readonly string[], first: KafkaConsumption, starts: MemberStarts, opts: KafkaTransportOptions) {
    this.group = group;
    this.#topics = topics;
    this.#starts = starts;
    this.#opts = opts;
    this.done = new Promise<void>((resolve, reject) => {
      this.#settle = (f) => (f === undefined ? resolve() : reject(f.err instanceof Error ? f.err : new Error(String(f.err), { cause: f.err })));
    });
    this.done.catch(() => undefined); // nobody has to observe `done`
    this.#adopt(first);
  }

  /**
   * Starts the first member on `topics` (all must exist, as for any `consume()`).
   * Errors: the member's start failure, as `KafkaConsumption.start` throws it.
   */
  static async start(group: string, topics: readonly string[], starts: MemberStarts, opts: KafkaTransportOptions): Promise<TopicSetConsumption> {
    return new TopicSetConsumption(group, topics, await starts.start(topics, []), starts, opts);
  }

  assignments(): readonly { readonly topic: string; readonly partition: number }[] {
    return this.#current?.assignments() ?? [];
  }

  joins(): number {
    return this.#joinsBefore + (this.#current?.joins() ?? 0);
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#shutdown();
    return this.#stopped;
  }

  async #shutdown(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#work;
    const current = this.#current;
    this.#current = undefined;
    if (current !== undefined) {
      await current.stop().catch(() => undefined);
      // A member failing as it was stopped (a handler's rejection) ends the consumption with it.
      await current.done.catch((err: unknown) => {
        if (!current.endedOnMissingTopic) this.#failure ??= { err };
      });
    }
    this.#settle(this.#failure);
  }

  #adopt(c: KafkaConsumption): void {
    this.#current = c;
    c.done.then(
      () => this.#ended(c, undefined),
      (err: unknown) => this.#ended(c, { err }),
    );
  }

  #ended(c: KafkaConsumption, failure: { readonly err: unknown } | undefined): void {
    if (c !== this.#current || this.#stopping) return; // replaced on purpose, or stop() settles
    this.#current = undefined;
    this.#joinsBefore += c.joins();
    if (failure === undefined || !c.endedOnMissingTopic) {
      // Ended for another reason: the consumption ends with it, as a lone member would.
      this.#failure = failure;
      neverRejects(this.stop()); // #shutdown catches what it awaits; the failure goes to `done`
      return;
    }
    this.#opts.logger.debug({ group: this.group, err: errorMessage(failure.err) }, 'kafka consumer ended on a missing topic: starting one on the topics that exist');
    this.#enqueue();
  }

  #schedule(delayMs: number): void {
    clearTimeout(this.#timer);
    if (this.#stopping) return;
    this.#timer = setTimeout(() => this.#enqueue(), delayMs);
  }

  #enqueue(): void {
    this.#timer = undefined;
    if (this.#stopping) return;
    this.#work = this.#work.then(() => this.#reconcile());
  }

  /**
   * Looks up which topics exist and runs a member on those, when that changed: a member ended on a
   * missing topic (none runs now), or a missing topic exists again (the running member is replaced).
   * Then looks again after `metadataMaxAgeMs` while any is missing. Never rejects: a failed look-up
   * or start that waiting can cure is tried again after a backoff; one that cannot ends the consumption.
   */
  async #reconcile(): Promise<void> {
    if (this.#stopping) return;
    try {
      const present = await this.#starts.present(this.#topics);
      if (this.#stopping) return;
      const gone = this.#topics.filter((t) => !present.has(t) && !this.#missing.has(t));
      const back = [...this.#missing].filter((t) => present.has(t));
      for (const t of gone) this.#missing.add(t);
      if (gone.length > 0) {
        this.#opts.logger.warn(
          { group: this.group, topics: gone, recheckMs: this.#opts.metadataMaxAgeMs },
          'a topic being read no longer exists (deleted?): the kafka consumer goes on with the other topics as a new member of its group, and the topic is looked up again every recheckMs',
        );
      }
      if (this.#current === undefined || back.length > 0) {
        const old = this.#current;
        if (old !== undefined) {
          // Replaced on purpose: not an end of the consumption (#ended ignores it).
          this.#current = undefined;
          this.#joinsBefore += old.joins();
          await old.stop();
          const err = await old.done.then(() => undefined, (e: unknown) => e);
          if (err !== undefined && !old.endedOnMissingTopic) {
            this.#failure ??= { err };
            neverRejects(this.stop());
            return;
          }
        }
        const topics = this.#topics.filter((t) => present.has(t));
        if (topics.length === 0) {
          if (gone.length > 0) this.#opts.logger.warn({ group: this.group, topics: this.#topics }, 'every topic of the kafka consumer is missing: no member runs until one exists again');
        } else {
          const c = await this.#starts.start(topics, back);
          if (this.#stopping) {
            await c.stop();
            return;
          }
          // Only now: a start that failed finds them missing-and-back again (read from their log start then).
          for (const t of back) this.#missing.delete(t);
          if (back.length > 0) this.#opts.logger.info({ group: this.group, topics: back }, 'a topic that was missing is there again (created again): a new kafka consumer reads it from its log start');
          this.#adopt(c);
        }
      }
      this.#failuresInRow = 0;
      if (this.#missing.size > 0) this.#schedule(this.#opts.metadataMaxAgeMs);
    } catch (err) {
      if (this.#stopping) return;
      const mapped = fromKafkaError(err, { operation: 'consume', group: this.group });
      // Missing meanwhile (deleted between the look-up and the join): looked up again.
      if (!mapped.retriable && !topicMissing(mapped)) {
        this.#failure ??= { err: mapped };
        neverRejects(this.stop());
        return;
      }
      const delayMs = rejoinDelayMs(this.#opts, ++this.#failuresInRow);
      this.#opts.logger.warn({ group: this.group, err: errorMessage(err), failures: this.#failuresInRow, delayMs }, 'kafka consumer: could not look up its topics or start a member on them; trying again');
      this.#schedule(delayMs);
    }
  }
}
