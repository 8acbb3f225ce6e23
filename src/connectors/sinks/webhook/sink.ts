/**
 * The push sink: delivers each event of a subscription to its webhook, signed, as one HTTP POST in
 * the CloudEvents HTTP binding, and turns the answer into the subscriber's outcome.
 * Before every attempt the target is checked again (DNS included) and the request goes to the
 * address that passed. Before the first delivery to a URL (per instance, and again after the URL
 * changes) the validation handshake runs unless the subscription opts out; an accepted one is kept
 * for the process ({@link HandshakeCache}: a member started again after an idle stop does not ask
 * again); a `429`/`503` answer to it with `Retry-After` is honoured as for a delivery; a rate the
 * sink grants is respected. The rate is a token bucket holding at most one second's worth (at least one event) that starts with
 * one second's worth (see {@link RateGate}). `rateLimit` (events/s over all instances) is split by each instance's share of the
 * subscription's partitions; `concurrency` bounds the attempts in flight on this instance.
 * A 410 marks the subscription `gone` (stored, so every instance stops it) and sends nothing more.
 * Settings change in place (`update`): URL, secrets, headers, content mode, data, handshake,
 * rate, timeout, batch. An attempt takes URL, headers and secrets together just before it is sent;
 * one prepared (target check, handshake, rate) while they changed is prepared again, so a handshake
 * counts only for the URL it asked and the old URL never gets the new headers or signatures. A
 * refused handshake stands per URL for a growing window (1 s to 60 s): a refusing sink is asked once
 * per window, not once per event attempt.
 * With `batch` (opt-in), the events in hand are collected by a {@link MicroBatcher} and POSTed as
 * one batched request (a JSON array of structured events, one signature over the body); the
 * batch's answer is every one of its events' outcome (2xx handled, 5xx/429/503/timeouts retried
 * per event, 410 gone, other 4xx dead-lettered), each event keeping its own attempt count with the
 * subscriber. The target check, the handshake and the rate (one token per event) apply per batch.
 * Spec: issue 8 ("Push delivery"; batchpush); Standard Webhooks 1.0.0; CloudEvents HTTP binding 1.0.2 (§3.3 batched);
 *   CloudEvents Web Hooks 1.0.2 §2 (delivery), §4 (abuse protection).
 */
import type { Tracing } from '../../../observability/index.js';
import { currentHandling } from '../../../bus/correlation/index.js';
import { TokenBucket } from 'limiter';
import { GatewayError, errorMessage, isGatewayError } from '../../../core/errors.js';
import { raceAbort } from '../../../core/race-abort.js';
import { sleep } from '../../../core/retry.js';
import { timerDelay } from '../../../core/timer-limit.js';
import type { EventCodec } from '../../../codec/event/index.js';
import { ack, deadLetter, retry } from '../../../bus/subscriber/index.js';
import type { DeliveryFailure, EventHandler, Outcome } from '../../../bus/subscriber/index.js';
import type { SinkContext } from '../../../bus/subscriptions/index.js';
import type { Logger } from '../../../observability/index.js';
import { PinnedAgents, classify, send, watchStop } from './deliver.js';
import { batchBody, batchElement, batchMessageId, BATCH_CONTENT_TYPE } from './batch-message.js';
import type { BatchElement } from './batch-message.js';
import { MicroBatcher } from './batcher.js';
import type { BatchLimits } from './batcher.js';
import { handshakeHeaders, readHandshake } from './handshake.js';
import { HandshakeCache } from './handshakes.js';
import type { AcceptedHandshake, HandshakeKey } from './handshakes.js';
import { deliveryMessage } from './message.js';
import { addSignature, messageId, secretKey } from './signing.js';
import type { RawAnswer } from './deliver.js';
import { redactedExcerpt, secretTexts } from './redact.js';
import { TARGET_NOT_ALLOWED, hiddenDetail, resolveTarget, sinkName } from './target.js';
import type { AllowList, Lookup, ResolvedTarget } from './target.js';

/** Everything the push sink reads from its subscription; replaced whole by `update`. */
/**
 * Added to the dead letter's reason for a 431 in binary mode: the event's attributes travel as
 * percent-encoded `ce-` headers there (CloudEvents HTTP binding §3.1.3.2: a non-ASCII byte takes
 * three), so attributes the gateway accepts (16 KiB of UTF-8) can pass what a receiver's server
 * takes for a request's headers (Node: 16 KiB in all); structured mode carries them in the body.
 */
export const HEADERS_TOO_LARGE_HINT = ' (request headers too large: in binary mode the event\'s attributes are ce- headers; set delivery.contentMode to structured to carry them in the body, then redrive)';

export interface PushSettings {
  readonly url: string;
  readonly contentMode: 'binary' | 'structured';
  readonly data: 'json' | 'avro';
  readonly handshake: boolean;
  readonly secrets: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  /** One attempt's deadline, ms. */
  readonly timeoutMs: number;
  /** Largest wait a Retry-After may impose, ms (the policy's largest backoff). */
  readonly retryAfterCapMs: number;
  /** Events/s over all instances; null = none. */
  readonly rateLimit: number | null;
  /** Attempts in flight on this instance at most; also the most events of one batch. */
  readonly concurrency: number;
  /** Batched content mode (`delivery.batch`); absent = one request per event. */
  readonly batch?: BatchLimits;
}

export interface WebhookSinkDeps {
  readonly log: Logger;
  readonly allow: AllowList;
  /** `WebHook-Request-Origin` of the handshake: this gateway's public host. */
  readonly origin: string;
  readonly ctx: SinkContext;
  /** For `data: avro` of records written in structured mode. */
  readonly codec?: EventCodec;
  readonly lookup?: Lookup;
  readonly userAgent?: string;
  /** Client spans of the calls (issue 15 "Tracing"); off: the traceparent still goes in the `traceparent` header. */
  readonly tracing?: () => Tracing;
  /**
   * Accepted validation handshakes of this process, shared by the sinks the runtime builds (one
   * per member start); absent: this sink keeps its own (asked again by a new sink).
   */
  readonly handshakes?: HandshakeCache;
  /**
   * The subscription's identity in {@link handshakes}: its group and incarnation (see
   * {@link HandshakeKey.subscription}); absent: this sink alone.
   */
  readonly subscription?: string;
}

/** Identities of sinks built without {@link WebhookSinkDeps.subscription}: never shared. */
let anonymousSinks = 0;

/**
 * The sink's name for a URL text that may not have passed the target check (a refused target, an
 * event that cannot be encoded): {@link sinkName} — never its credentials or query, which would
 * reach the dead letter's `dlq_sink` header and `deadletters list`.
 */
function urlSinkName(text: string): string {
  try {
    return sinkName(new URL(text));
  } catch {
    return '(not a URL)';
  }
}

/** How long a record of a gone subscription waits before it is looked at again (the subscription stops well before). */
export const GONE_PARK_MS = 60_000;

/**
 * A gone subscription's record, held until its member stops (`signal` aborts: the record is then
 * left uncommitted and comes again when the subscription is revived) or, if it does not stop,
 * until {@link GONE_PARK_MS} has passed (then `out`, a retry). A retry outcome at once counted as
 * an attempt: with `maxAttempts` 1, `maxAgeMs`, or on an event's last attempt, the 410 — and every
 * event already waiting for a slot — was dead-lettered instead of waiting for the revival (issue 8:
 * "410 Gone stops the subscription").
 */
function heldWhileGone(out: Outcome, signal: AbortSignal | undefined): Promise<Outcome> {
  if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
  return new Promise<Outcome>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(out);
    }, GONE_PARK_MS);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** How often a record of a subscription not active here looks whether it is active again, ms. */
const INACTIVE_POLL_MS = 100;

/**
 * Resolves once `active()` is true again (looked at every {@link INACTIVE_POLL_MS}); rejects with
 * the stop's reason when `signal` aborts first (the member stops: the record stays uncommitted and
 * comes again from the last commit).
 */
function untilActive(active: () => boolean, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearInterval(timer);
      reject(signal?.reason as Error);
    };
    const timer = setInterval(() => {
      if (!active()) return;
      clearInterval(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, INACTIVE_POLL_MS);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Attempts in flight at most; waiters are served in order. */
class Semaphore {
  #free: number;
  readonly #queue: (() => void)[] = [];
  constructor(n: number) {
    this.#free = n;
  }
  resize(n: number, previous: number): void {
    this.#free += n - previous;
    while (this.#free > 0 && this.#queue.length > 0) {
      this.#free--;
      this.#queue.shift()!();
    }
  }
  /** Takes a free slot if there is one now (no promise). */
  tryAcquire(): boolean {
    if (this.#free <= 0) return false;
    this.#free--;
    return true;
  }
  /**
   * Waits for a slot. Rejects with `signal`'s reason when it aborts; resolves false, with no slot
   * taken, when `revoked` aborts first (the event's partition left this member).
   */
  async acquire(signal?: AbortSignal, revoked?: AbortSignal): Promise<boolean> {
    if (revoked?.aborted === true) return false;
    if (this.#free > 0) {
      this.#free--;
      return true;
    }
    return new Promise<boolean>((resolve, reject) => {
      const done = (): void => {
        signal?.removeEventListener('abort', abort);
        revoked?.removeEventListener('abort', drop);
      };
      const go = (): void => {
        done();
        resolve(true);
      };
      const leave = (): void => {
        const i = this.#queue.indexOf(go);
        if (i >= 0) this.#queue.splice(i, 1);
        done();
      };
      const abort = (): void => {
        leave();
        reject(signal?.reason as Error);
      };
      const drop = (): void => {
        leave();
        resolve(false);
      };
      this.#queue.push(go);
      signal?.addEventListener('abort', abort, { once: true });
      revoked?.addEventListener('abort', drop, { once: true });
    });
  }
  release(): void {
    const next = this.#queue.shift();
    if (next !== undefined) next();
    else this.#free++;
  }
}

/**
 * A token bucket at `perSecond`, rebuilt when the rate changes. Size: one second's worth (at least
 * 1, so that one event can ever go). It starts holding one second's worth of tokens, `perSecond`
 * (at most the size): full for a rate of 1/s or more, so the first second's events go at once; for
 * a slower rate only that fraction, so the first event waits (1 − rate)/rate s. A bucket that
 * started full sent one event at once on every instance that started or took partitions over — a
 * sink granting 1/min got 2 POSTs 3 s apart from two gateways (F4). A bucket rebuilt for a new rate
 * keeps what the old one held (at most the new size), so a rate change — each instance's share
 * moves with every rebalance — grants no extra burst. Bound, per instance: over any window of `w` s
 * at most max(1, rate) + rate × `w` events from a start, and size + rate × `w` once it has been idle.
 */
class RateGate {
  #perSecond = Number.POSITIVE_INFINITY;
  #bucket: TokenBucket | undefined;

  set(perSecond: number): void {
    if (perSecond === this.#perSecond || (Number.isFinite(perSecond) && Math.abs(perSecond - this.#perSecond) / perSecond < 0.01)) return;
    this.#perSecond = perSecond;
    if (!Number.isFinite(perSecond)) {
      this.#bucket = undefined;
      return;
    }
    const size = Math.max(1, Math.floor(perSecond));
    const previous = this.#bucket;
    previous?.drip();
    const bucket = new TokenBucket({ bucketSize: size, tokensPerInterval: perSecond, interval: 1000 });
    bucket.content = previous === undefined ? Math.min(size, perSecond) : Math.min(size, previous.content);
    this.#bucket = bucket;
  }

  /**
   * Waits for `n` tokens (a batch takes one per event, in bucket-sized parts). Resolves true once
   * taken; false, as soon as `revoked` aborts, when they are not all taken yet (what was taken of
   * them stays spent: the rate is never exceeded). Rejects with `signal`'s reason when it aborts.
   */
  async take(signal?: AbortSignal, n = 1, revoked?: AbortSignal): Promise<boolean> {
    let left = n;
    while (left > 0) {
      const b = this.#bucket;
      if (b === undefined) return true;
      if (revoked?.aborted === true) return false;
      const part = Math.min(left, b.bucketSize);
      if (b.tryRemoveTokens(part)) left -= part;
      // timerDelay: at a tiny rate the next token is further off than a timer holds; the loop
      // checks the bucket again when it fires.
      else if (!(await sleepUnless(timerDelay(b.getWaitTime(part)), signal, revoked))) return false;
    }
    return true;
  }
}

/**
 * Sleeps `ms`. Resolves true after the wait, false as soon as `revoked` aborts; rejects with
 * `signal`'s reason when it aborts. One timer and at most two listeners, removed when settled.
 */
function sleepUnless(ms: number, signal: AbortSignal | undefined, revoked: AbortSignal | undefined): Promise<boolean> {
  if (revoked === undefined) return sleep(ms, signal).then(() => true);
  if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
  if (revoked.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
      revoked.removeEventListener('abort', drop);
    };
    const abort = (): void => {
      done();
      reject(signal?.reason as Error);
    };
    const drop = (): void => {
      done();
      resolve(false);
    };
    const timer = setTimeout(() => {
      done();
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
    revoked.addEventListener('abort', drop, { once: true });
  });
}

/**
 * `p`, or {@link REVOKED} as soon as `revoked` aborts (`p` goes on for whoever else waits on it:
 * a handshake is shared by the partitions delivering at once).
 */
function unlessRevoked<T>(p: Promise<T>, revoked: AbortSignal | undefined): Promise<T | typeof REVOKED> {
  if (revoked === undefined) return p;
  const dropped = new Error('partition revoked');
  return raceAbort<T | typeof REVOKED>(p, revoked, () => dropped).catch((err: unknown) => {
    if (err === dropped) return REVOKED;
    throw err;
  });
}

const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

/** What {@link unlessRevoked} gives when the partition was revoked first. */
const REVOKED = Symbol('partition revoked');

/**
 * The outcome of an attempt dropped before anything was sent because its partition was revoked
 * (a rebalance moved it to another gateway, which delivers it again from its last commit). The
 * subscriber does not count it (DeliveryContext.revoked): no retry, no dead letter, no commit.
 */
const notSent = (sink: string): Outcome => retry('partition revoked before the attempt was sent: left to its new owner', undefined, { sink });

export interface WebhookSink {
  readonly handler: EventHandler;
  update(s: PushSettings): void;
  close(): Promise<void>;
}

export function createWebhookSink(initial: PushSettings, deps: WebhookSinkDeps): WebhookSink {
  const agents = new PinnedAgents();
  const rate = new RateGate();
  let s = initial;
  let keys = s.secrets.map(secretKey);
  let own = ownHeaders(s.headers);
  const slots = new Semaphore(s.concurrency);
  /** Accepted handshakes of the process (or of this sink alone), and this subscription's name there. */
  const handshakes = deps.handshakes ?? new HandshakeCache(8);
  const subscription = deps.subscription ?? `(sink ${++anonymousSinks})`;
  // Entries of URLs this subscription no longer has (changed while no member ran here) are stale.
  handshakes.keepOnly(subscription, s.url);
  /** What the handshake for `settings` (by default the current ones) must have agreed to. */
  const handshakeKey = (settings: PushSettings = s): HandshakeKey => ({ subscription, url: settings.url, origin: deps.origin, requestedRate: handshakeHeaders(deps.origin, settings.rateLimit)['webhook-request-rate'] ?? null });
  const sameKey = (a: HandshakeKey, b: HandshakeKey): boolean => a.url === b.url && a.origin === b.origin && a.requestedRate === b.requestedRate;
  /** The acceptance for the current settings, once known (no cache look-up per delivery). */
  let accepted: AcceptedHandshake | undefined;
  /** The handshake under way per URL and requested rate: partitions delivering at once share one OPTIONS request. */
  const handshaking = new Map<string, Promise<Outcome | undefined>>();
  /**
   * The refusal that stands, for an attempt in its window (and for the attempts that asked): the
   * same reason and failure, and a wait until the window ends (at least the sink's own Retry-After,
   * at most {@link HANDSHAKE_REFUSAL_MAX_MS}), so each attempt of an event is one window and its
   * next attempt asks the sink again (docs/subscriptions.md). Not capped by the policy's largest
   * backoff: that cap let a refusing sink (windows up to 60 s) burn `maxAttempts` 30 in 6 s with 5
   * OPTIONS (F3). The subscriber parks at most 2 × backoff.maxMs + 59 s, which holds a whole window.
   */
  function standing(o: Outcome, leftMs: number): Outcome {
    if (o.kind !== 'retry') return o;
    return retry(o.reason, Math.min(HANDSHAKE_REFUSAL_MAX_MS, Math.max(o.afterMs ?? 0, leftMs)), o.failure);
  }

  /**
   * Whether a refusal window is over for an attempt now. The last moments of a window count as
   * over (a quarter of it, at most {@link HANDSHAKE_REFUSAL_SLACK_MS}): an attempt parked for the
   * window comes back a little early (the retry topic cuts a park at 59 s), and it must ask again
   * rather than spend one more attempt on what is left of the window.
   */
  const windowOver = (r: { readonly since: number; readonly until: number }, now: number): boolean => now >= r.until - Math.min(HANDSHAKE_REFUSAL_SLACK_MS, (r.until - r.since) / 4);

  /**
   * A refused handshake per URL and requested rate, until when it stands: an event that comes in
   * that window gets the same refusal without a request of its own, so a sink that refuses gets one
   * OPTIONS per window rather than one per event attempt (CloudEvents Web Hooks §4: the check
   * protects a sink that did not consent; asking it at the event rate would be the abuse itself).
   * The window doubles with each refusal in a row, from {@link HANDSHAKE_REFUSAL_MIN_MS} to
   * {@link HANDSHAKE_REFUSAL_MAX_MS}, or is the sink's `Retry-After` (capped by the policy).
   */
  const refusals = new Map<string, { readonly since: number; readonly until: number; readonly streak: number; readonly outcome: Outcome }>();
  /**
   * Bumped when what a request is sent with changes: the URL, the headers, the secrets. A delivery
   * prepared under an older generation is prepared again (the target, the handshake, the rate), so
   * a request never pairs the old URL with the new headers or signatures, and nothing prepared
   * before an update is sent to the URL it replaced.
   */
  let generation = 0;
  let gone = false;
  /**
   * The subscription is no longer active on this instance (paused, deleted, or gone by another
   * instance's 410) while its member has not stopped yet: nothing is sent (a member a reconciler
   * pass was still starting from an older snapshot delivered for seconds after a pause). The
   * records wait ({@link whileInactive}) for the member's stop, or go on if it is active again (a
   * pause undone before the reconciler acted on it).
   */
  const inactive = (): boolean => deps.ctx.active?.() === false;
  const whileInactive = (signal: AbortSignal | undefined): Promise<void> => untilActive(() => !inactive(), signal);
  const userAgent = deps.userAgent ?? 'ce-gateway';

  const effectiveRate = (): number => {
    const granted = (s.handshake ? accepted?.allowedPerSecond : undefined) ?? Number.POSITIVE_INFINITY;
    const wanted = Math.min(s.rateLimit ?? Number.POSITIVE_INFINITY, granted);
    if (!Number.isFinite(wanted)) return wanted;
    // Each instance takes its share of the partitions' share of the rate. The trickle for a share
    // not known yet (0) is a share of the rate, never an absolute floor: 0.01/s was more than a
    // sink granting 1/min allowed two instances (F4).
    return Math.max(wanted * deps.ctx.share(), wanted / 100);
  };

  /**
   * The handshake for `settings` (those `target` was resolved from), asked of `target` only: its
   * acceptance counts for that URL, never for one the settings were changed to meanwhile.
   */
  function handshake(target: ResolvedTarget, signal: AbortSignal | undefined, settings: PushSettings): Promise<Outcome | undefined> {
    if (!settings.handshake) return Promise.resolve(undefined);
    const key = handshakeKey(settings);
    if (accepted !== undefined && sameKey(key, handshakeKey())) return Promise.resolve(undefined);
    const known = handshakes.get(key);
    if (known !== undefined) {
      if (sameKey(key, handshakeKey())) accepted = known;
      return Promise.resolve(undefined);
    }
    const under = `${key.url}\n${key.requestedRate}`;
    const refused = refusals.get(under);
    if (refused !== undefined && !windowOver(refused, Date.now())) return Promise.resolve(standing(refused.outcome, refused.until - Date.now()));
    let p = handshaking.get(under);
    if (p === undefined) {
      p = handshakeOnce(target, signal, key, settings)
        .then((out) => {
          if (out === undefined) refusals.delete(under);
          else {
            const streak = (refused?.streak ?? 0) + 1;
            const backoff = Math.min(HANDSHAKE_REFUSAL_MAX_MS, HANDSHAKE_REFUSAL_MIN_MS * 2 ** Math.min(streak - 1, 16));
            const afterMs = out.kind === 'retry' ? out.afterMs : undefined;
            const now = Date.now();
            const windowMs = afterMs ?? backoff;
            refusals.set(under, { since: now, until: now + windowMs, streak, outcome: out });
            // The attempts that asked wait for the window's end too: their next attempt asks again.
            return standing(out, windowMs);
          }
          return out;
        })
        .finally(() => handshaking.delete(under));
      handshaking.set(under, p);
    }
    return p;
  }

  /**
   * A sink that does not answer the handshake gets nothing, and its events are retried quietly: a
   * fresh-user trial with a plain receiver saw no delivery and no log line. Said once per URL
   * (until it is accepted), with what to do.
   */
  const handshakeWarned = new Set<string>();
  function refusedOnce(url: string, sink: string, why: string): void {
    if (handshakeWarned.has(url)) return;
    handshakeWarned.add(url);
    deps.log.warn({ sink, reason: why.slice(0, 300) }, 'webhook validation handshake failed: nothing is delivered (events are retried, then dead-lettered) until the sink answers OPTIONS with WebHook-Allowed-Origin, or the subscription sets delivery.handshake to false');
  }

  /**
   * One validation request for `key`. A refusal is a retry; a `429` or `503` with `Retry-After`
   * waits that long (capped by the policy's largest backoff), as a delivery's answer does — the
   * sink being deployed or overloaded said when to come back (issue 8: "429 and 503 with
   * Retry-After are honoured"; RFC 9110 §10.2.3).
   */
  async function handshakeOnce(target: ResolvedTarget, signal: AbortSignal | undefined, key: HandshakeKey, settings: PushSettings): Promise<Outcome | undefined> {
    const answer = await send(agents, {
      target,
      method: 'OPTIONS',
      headers: { ...handshakeHeaders(key.origin, settings.rateLimit), 'user-agent': userAgent },
      timeoutMs: settings.timeoutMs,
      retryAfterCapMs: settings.retryAfterCapMs,
      ...(signal === undefined ? {} : { signal }),
    });
    const sink = sinkName(target.url);
    if (!answer.ok) {
      refusedOnce(key.url, sink, answer.reason);
      return retry(`validation handshake: ${answer.reason}`, undefined, { sink });
    }
    const h = readHandshake(answer.status, answer.header, key.origin);
    if (!h.ok) {
      refusedOnce(key.url, sink, h.reason ?? `refused (status ${answer.status})`);
      const c = classify(answer.status, answer.bodyStart, answer.header('retry-after'), s.retryAfterCapMs);
      const afterMs = c.kind === 'retry' ? c.retryAfterMs : undefined;
      const reason = c.kind === 'retry' && afterMs !== undefined ? `validation handshake: ${c.reason}` : (h.reason ?? 'validation handshake refused');
      return retry(reason, afterMs, { sink, status: answer.status, excerpt: cleanExcerpt(answer.bodyStart, settings) });
    }
    handshakeWarned.delete(key.url);
    const granted: AcceptedHandshake = h.allowedPerSecond === undefined ? {} : { allowedPerSecond: h.allowedPerSecond };
    // Answered after the URL changed: keeping it would outlive `keepOnly` (a PATCH back to this
    // URL must ask again, as the docs promise). After a rate change alone it is still that URL's.
    if (key.url === s.url) handshakes.set(key, granted);
    if (sameKey(key, handshakeKey())) accepted = granted;
    deps.log.info({ sink, allowedPerSecond: h.allowedPerSecond ?? 'unlimited' }, 'webhook validation handshake accepted');
    return undefined;
  }

  /** Stop signals whose abort already aborts the requests in flight (one listener per signal). */
  const watched = new WeakSet<AbortSignal>();

  /** A request ready to go: where, and what it goes with — the settings, secrets and headers of one generation. */
  interface Ready {
    readonly target: ResolvedTarget;
    readonly sink: string;
    readonly settings: PushSettings;
    readonly keys: readonly Buffer[];
    readonly own: { readonly withoutTrace: Readonly<Record<string, string>> };
  }
  type Prepared = Ready | { readonly refused: Outcome };

  /**
   * Before every attempt (single or batch): the target check, the handshake, `events` rate tokens.
   * Settings that change during those waits (a PATCH of the URL, headers or secrets) start it
   * again with the new ones: what is returned belongs together and is current.
   */
  async function prepare(signal: AbortSignal | undefined, events: number, revoked?: AbortSignal): Promise<Prepared> {
    watchStop(agents, signal, watched);
    for (;;) {
      // Revoked before anything was sent (F1: a rebalance while waiting for the handshake or a rate
      // token): sending now would duplicate the new owner's delivery, out of order with it.
      if (revoked?.aborted === true) return { refused: notSent(urlSinkName(s.url)) };
      const at = generation;
      // Locals, not an object: this runs once per attempt on the push hot path.
      const settings = s;
      const signing = keys;
      const headers = own;
      const url = settings.url;
      let target: ResolvedTarget;
      try {
        target = await resolveTarget(url, deps.allow, deps.lookup);
      } catch (err) {
        if (at !== generation) continue;
        const failure: DeliveryFailure = { sink: urlSinkName(url) };
        // What DNS answered goes to the operator's log only: the dead letter is the partner's to read.
        const detail = hiddenDetail(err);
        if (detail !== undefined) deps.log[isGatewayError(err, 'CEG_WEBHOOK_TARGET_REFUSED') ? 'warn' : 'debug']({ sink: failure.sink, detail }, 'webhook target not allowed or not reachable');
        if (isGatewayError(err, 'CEG_WEBHOOK_TARGET_REFUSED')) return { refused: deadLetter(`webhook target refused: ${err.message}`, failure) };
        return { refused: retry(errorMessage(err), undefined, failure) };
      }
      if (at !== generation) continue;
      const refused = await unlessRevoked(handshake(target, signal, settings), revoked);
      if (refused === REVOKED) return { refused: notSent(sinkName(target.url)) };
      if (at !== generation) continue;
      if (refused !== undefined) return { refused };
      rate.set(effectiveRate());
      if (!(await rate.take(signal, events, revoked))) return { refused: notSent(sinkName(target.url)) };
      if (at !== generation) continue;
      // Property narrowing does not see the abort that may have come during the awaits above.
      if (isAborted(revoked)) return { refused: notSent(sinkName(target.url)) };
      return { target, sink: sinkName(target.url), settings, keys: signing, own: headers };
    }
  }

  /**
   * Once gone, a retry outcome (the 410's own, or one of a delivery in flight alongside) waits for
   * the member's stop; otherwise `out` as it is (no promise of its own on the common path).
   */
  function unlessGone(out: Outcome, signal: AbortSignal | undefined): Outcome | Promise<Outcome> {
    return gone && out.kind === 'retry' ? heldWhileGone(out, signal) : out;
  }

  /**
   * The excerpt of the answer's start without this subscription's secret values (its `delivery.headers` values
   * and signing secrets, of the request's settings and of the current ones): a sink echoing the
   * request in its error body sent them back into the dead letter (see ./redact.ts).
   */
  function cleanExcerpt(bodyStart: string, settings: PushSettings): string {
    if (bodyStart === '') return bodyStart;
    return redactedExcerpt(bodyStart, secretTexts({ ...settings.headers, ...prefixed(s.headers) }, [...settings.secrets, ...s.secrets]));
  }

  /** What the sink's answer (or its absence) means for each event it carried; `settings`: those the request went with. */
  function outcomeOf(answer: RawAnswer, sink: string, settings: PushSettings): Outcome {
    if (!answer.ok) return retry(answer.reason, undefined, { sink, ...(answer.status === undefined ? {} : { status: answer.status }), ...(answer.bodyStart === undefined ? {} : { excerpt: cleanExcerpt(answer.bodyStart, settings) }) });
    // A 2xx's excerpt is never kept: no redaction on the delivery hot path.
    const handled = answer.status >= 200 && answer.status <= 299;
    const r = classify(answer.status, handled ? answer.bodyStart : cleanExcerpt(answer.bodyStart, settings), answer.header('retry-after'), s.retryAfterCapMs);
    switch (r.kind) {
      case 'handled':
        return ack;
      case 'gone':
        if (!gone) {
          gone = true;
          // A revived subscription asks again before its first delivery here.
          handshakes.forget(subscription);
          accepted = undefined;
          deps.log.warn({ sink, status: 410 }, 'the sink answered 410 Gone: the subscription stops (state gone)');
          deps.ctx.markGone(`the sink answered 410 Gone at ${new Date().toISOString()}`);
        }
        return retry('the sink answered 410 Gone: subscription stopped', GONE_PARK_MS, { sink, status: r.status, excerpt: r.excerpt });
      case 'retry':
        return retry(r.reason, r.retryAfterMs, { sink, ...(r.status === undefined ? {} : { status: r.status }), ...(r.excerpt === undefined ? {} : { excerpt: r.excerpt }) });
      case 'deadLetter':
        return deadLetter(r.status === 431 && settings.contentMode === 'binary' && settings.batch === undefined ? `${r.reason}${HEADERS_TOO_LARGE_HINT}` : r.reason, { sink, status: r.status, excerpt: r.excerpt });
      default: {
        const never: never = r;
        return never;
      }
    }
  }

  async function attempt(event: Parameters<EventHandler>[0], ctx: Parameters<EventHandler>[1]): Promise<Outcome> {
    const signal = ctx.signal;
    // Gone while this event waited for a slot: nothing more is sent.
    if (gone) return heldWhileGone(retry('the subscription is gone', GONE_PARK_MS), signal);
    const p = await prepare(signal, 1, ctx.revoked);
    if ('refused' in p) return p.refused;
    // Paused or deleted while it waited for a rate token or the handshake.
    if (inactive()) await whileInactive(signal);
    if (gone) return heldWhileGone(retry('the subscription is gone', GONE_PARK_MS), signal);
    const { target, sink, settings } = p;
    let message;
    try {
      message = deliveryMessage(event, ctx.record, settings, deps.codec);
    } catch (err) {
      return deadLetter(`cannot encode the event for the sink: ${errorMessage(err)}`, { sink });
    }
    const a = event.attributes;
    // W3C Trace Context on the call: the handling context's (the consumer span's when tracing is
    // on, else the event's own), or a client span of its own as its child.
    const handlingTrace = ctx.traceparent ?? currentHandling()?.traceparent;
    const span = deps.tracing?.().start('POST', 'client', handlingTrace, { 'http.request.method': 'POST', 'url.full': target.url.origin + target.url.pathname, 'server.address': target.url.hostname });
    const traceparent = span?.traceparent ?? handlingTrace;
    // One object, filled in place (an object per part, spread into another, cost more per delivery).
    // Spread, not Object.assign: a stored header named __proto__ stays a header, as before.
    const headers: Record<string, string> = { ...(traceparent === undefined ? settings.headers : p.own.withoutTrace), ...message.headers };
    addSignature(headers, p.keys, messageId(a.source, a.id), Math.floor(Date.now() / 1000), message.body);
    headers['user-agent'] = userAgent;
    if (traceparent !== undefined) headers.traceparent = traceparent;
    const answer = await send(agents, { target, method: 'POST', headers, body: message.body, timeoutMs: settings.timeoutMs, retryAfterCapMs: settings.retryAfterCapMs, ...(signal === undefined ? {} : { signal }) });
    if (answer.ok) span?.set({ 'http.response.status_code': answer.status });
    span?.end(answer.ok ? (answer.status >= 400 ? `status ${answer.status}` : undefined) : answer.reason);
    return unlessGone(outcomeOf(answer, sink, settings), signal);
  }

  /** One event of a batch: its attributes, its place on Kafka (for the array's order), its JSON bytes. */
  interface BatchItem {
    readonly source: string;
    readonly id: string;
    readonly topic: string;
    readonly partition: number;
    readonly offset: bigint;
    readonly element: BatchElement;
    readonly signal: AbortSignal | undefined;
    /** The event's partition left this member: aborted (DeliveryContext.revoked). */
    readonly revoked: AbortSignal | undefined;
    /** Set when the batch went without this event (its partition was revoked first): its outcome is then {@link notSent}. */
    dropped: boolean;
  }

  /**
   * Sends one batch. Its events go in Kafka order (topic, partition, offset): under `ordering: key`
   * a batch never holds two events of one key (the pipeline hands a key's next record only once
   * the previous one is finished), and within a partition the array keeps offset order.
   * No traceparent: the events of a batch have their own traces (each stays in its `ce-` attributes).
   */
  async function sendBatch(all: readonly BatchItem[]): Promise<Outcome> {
    const items = liveItems(all);
    if (items.length === 0) return notSent(urlSinkName(s.url));
    const ordered = [...items].sort((x, y) => (x.topic < y.topic ? -1 : x.topic > y.topic ? 1 : x.partition - y.partition || (x.offset < y.offset ? -1 : x.offset > y.offset ? 1 : 0)));
    const signal = ordered[0]!.signal;
    if (inactive()) await whileInactive(signal);
    if (gone) return heldWhileGone(retry('the subscription is gone', GONE_PARK_MS), signal);
    for (const i of ordered) watchStop(agents, i.signal, watched);
    // The batch's waits end early only when every event's partition was revoked; one revoked
    // meanwhile is left out of the request (its outcome is notSent, see `batched`).
    const revoked = everyRevoked(ordered);
    let p: Awaited<ReturnType<typeof prepare>>;
    try {
      p = await prepare(signal, ordered.length, revoked.signal);
    } finally {
      revoked.dispose();
    }
    if ('refused' in p) return p.refused;
    const sent = liveItems(ordered);
    if (sent.length === 0) return notSent(p.sink);
    const body = batchBody(sent.map((i) => i.element));
    const headers: Record<string, string> = { ...p.settings.headers, 'content-type': BATCH_CONTENT_TYPE };
    addSignature(headers, p.keys, batchMessageId(sent), Math.floor(Date.now() / 1000), body);
    headers['user-agent'] = userAgent;
    const answer = await send(agents, { target: p.target, method: 'POST', headers, body, timeoutMs: p.settings.timeoutMs, retryAfterCapMs: p.settings.retryAfterCapMs, ...(signal === undefined ? {} : { signal }) });
    return unlessGone(outcomeOf(answer, p.sink, p.settings), signal);
  }

  /**
   * A batch's events give their slots back together, when its answer is in (one step per batch, not
   * per event). Only the count is kept for that: the items (each event's JSON text) are not needed
   * once the body is written, and kept until the answer they would survive young collections.
   */
  const sendBatchAndRelease = (items: readonly BatchItem[]): Promise<Outcome> => {
    const count = items.length;
    return sendBatch(items).finally(() => {
      for (let i = 0; i < count; i++) slots.release();
    });
  };

  /** The items whose partition is still held; the others are marked dropped. */
  function liveItems(items: readonly BatchItem[]): readonly BatchItem[] {
    if (!items.some((i) => i.revoked?.aborted === true)) return items;
    for (const i of items) if (i.revoked?.aborted === true) i.dropped = true;
    return items.filter((i) => !i.dropped);
  }

  const noop = (): void => undefined;

  /**
   * A signal aborted once every item's partition is revoked (undefined when an item has none), and
   * `dispose` to call when the batch no longer waits on it. One listener per distinct partition
   * signal, removed by `dispose`: a listener per item, never removed, piled up on a partition's
   * `revoked` signal with every batch (each holding its batch's events) for as long as the partition
   * stayed assigned — Node warned "possible EventTarget memory leak" in batched push.
   */
  function everyRevoked(items: readonly BatchItem[]): { readonly signal: AbortSignal | undefined; dispose(): void } {
    if (items.some((i) => i.revoked === undefined)) return { signal: undefined, dispose: noop };
    const distinct = [...new Set(items.map((i) => i.revoked!))];
    if (distinct.length === 1) return { signal: distinct[0], dispose: noop };
    const c = new AbortController();
    const check = (): void => {
      if (distinct.every((r) => r.aborted)) c.abort(distinct[0]!.reason);
    };
    for (const r of distinct) r.addEventListener('abort', check, { once: true });
    check();
    return { signal: c.signal, dispose: () => distinct.forEach((r) => r.removeEventListener('abort', check)) };
  }

  let batcher = s.batch === undefined ? undefined : new MicroBatcher<BatchItem, Outcome>(batchLimits(s), sendBatchAndRelease);

  /**
   * Not async: no promise of its own per event (every event of a batch gets the batch's). The
   * event's slot is given back with its batch ({@link sendBatchAndRelease}), or at once when it
   * cannot be encoded.
   */
  function batched(b: MicroBatcher<BatchItem, Outcome>, event: Parameters<EventHandler>[0], ctx: Parameters<EventHandler>[1]): Promise<Outcome> {
    let element: BatchElement;
    try {
      element = batchElement(event, ctx.record, s, deps.codec);
    } catch (err) {
      slots.release();
      return Promise.resolve(deadLetter(`cannot encode the event for the sink: ${errorMessage(err)}`, { sink: urlSinkName(s.url) }));
    }
    const a = event.attributes;
    const r = ctx.record;
    const item: BatchItem = { source: a.source, id: a.id, topic: r?.topic ?? '', partition: r?.partition ?? 0, offset: r?.offset ?? 0n, element, signal: ctx.signal, revoked: ctx.revoked, dropped: false };
    const out = b.add(item, element.bytes);
    // Without a partition signal no event can be dropped: the batch's own promise, none per event.
    return ctx.revoked === undefined ? out : out.then((o) => (item.dropped ? notSent(urlSinkName(s.url)) : o));
  }

  // Per event: a slot taken at once when free (no promise for it), released when the delivery settles.
  const released = (out: Outcome): Outcome => {
    slots.release();
    return out;
  };
  const releasedThrow = (err: unknown): never => {
    slots.release();
    throw err;
  };
  const withSlot = (event: Parameters<EventHandler>[0], ctx: Parameters<EventHandler>[1]): Promise<Outcome> =>
    batcher === undefined ? attempt(event, ctx).then(released, releasedThrow) : batched(batcher, event, ctx);
  const handler: EventHandler = (event, ctx) => {
    if (gone) return heldWhileGone(retry('the subscription is gone', GONE_PARK_MS), ctx.signal);
    if (inactive()) return whileInactive(ctx.signal).then(() => handler(event, ctx));
    if (ctx.revoked?.aborted === true) return Promise.resolve(notSent(urlSinkName(s.url)));
    if (slots.tryAcquire()) return withSlot(event, ctx);
    return slots.acquire(ctx.signal, ctx.revoked).then((got) => (got ? withSlot(event, ctx) : notSent(urlSinkName(s.url))));
  };

  return {
    handler,
    update(next) {
      if (next.concurrency !== s.concurrency) slots.resize(next.concurrency, s.concurrency);
      if (next.url !== s.url) {
        handshakes.keepOnly(subscription, next.url);
        // A PATCH of the URL (back to one that refused, too) asks at once.
        refusals.clear();
      }
      if (next.url !== s.url || next.rateLimit !== s.rateLimit) accepted = undefined;
      if (next.url !== s.url || !sameStrings(next.secrets, s.secrets) || !sameHeaders(next.headers, s.headers)) generation++;
      keys = next.secrets.map(secretKey);
      if (next.headers !== s.headers) own = ownHeaders(next.headers);
      s = next;
      if (s.batch === undefined) batcher?.flush();
      batcher = s.batch === undefined ? undefined : (batcher ?? new MicroBatcher<BatchItem, Outcome>(batchLimits(s), sendBatchAndRelease));
      batcher?.setLimits(batchLimits(s));
    },
    async close() {
      await agents.close();
    },
  };
}

/** Shortest and longest time a refused validation handshake stands before the sink is asked again, ms. */
export const HANDSHAKE_REFUSAL_MIN_MS = 1_000;
export const HANDSHAKE_REFUSAL_MAX_MS = 60_000;
/** The end of a refusal window counted as over already, ms at most (see `windowOver`). */
export const HANDSHAKE_REFUSAL_SLACK_MS = 1_500;

const sameStrings = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

function sameHeaders(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  if (a === b) return true;
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** Header values keyed apart from another record's (both sets' values are kept when merged). */
function prefixed(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [`current:${k}`, v]));
}

/** W3C Trace Context headers (RFC 9110 names are case-insensitive). */
const TRACE_CONTEXT_HEADER = /^(traceparent|tracestate)$/i;

/**
 * A subscription's own headers, also without its W3C Trace Context ones: a call the gateway gives a
 * `traceparent` must not carry a second one in other letter case, nor a `tracestate` of another
 * trace (W3C Trace Context §3.3: tracestate belongs to its traceparent). Without a trace of the
 * gateway's, the subscription's own go out as given.
 */
function ownHeaders(headers: Readonly<Record<string, string>>): { readonly withoutTrace: Readonly<Record<string, string>> } {
  const names = Object.keys(headers);
  if (!names.some((n) => TRACE_CONTEXT_HEADER.test(n))) return { withoutTrace: headers };
  return { withoutTrace: Object.fromEntries(Object.entries(headers).filter(([n]) => !TRACE_CONTEXT_HEADER.test(n))) };
}

/** A batch holds at most `concurrency` events: no more are in hand at once. */
function batchLimits(s: PushSettings): BatchLimits {
  const b = s.batch!;
  return { maxEvents: Math.min(b.maxEvents, s.concurrency), maxBytes: b.maxBytes, maxDelayMs: b.maxDelayMs };
}

/**
 * The create-time rule on top of {@link checkTargetUrl}: any `#` in a new URL is refused, an empty
 * fragment too (`…/hook#` parses to no fragment but stays in the stored text). Used by
 * {@link targetChecker} (`POST`/`PATCH /subscriptions`) and by the connector loader (files).
 * Errors: CEG_WEBHOOK_TARGET_REFUSED naming `delivery.url`.
 */
export function refuseFragment(url: string): void {
  if (url.includes('#')) throw new GatewayError('CEG_WEBHOOK_TARGET_REFUSED', 'a fragment is never sent; remove it', { retriable: false, details: { field: 'delivery.url' } });
}

/**
 * The error a sink reports for a target refused at create time (the service's `checkTarget`: a new
 * or changed URL). Stricter than the check before each attempt in one point: an empty fragment
 * (`…/hook#`, which parses to no fragment but is kept in the stored text) is refused here, while
 * a URL stored with one before this rule still delivers. A refusal that depends on DNS says only
 * {@link TARGET_NOT_ALLOWED} (the caller is a partner); what was resolved goes to `log` (info).
 */
export function targetChecker(allow: AllowList, lookup?: Lookup, log?: Logger): (url: string) => Promise<void> {
  return async (url) => {
    refuseFragment(url);
    try {
      await resolveTarget(url, allow, lookup);
    } catch (err) {
      // A name that does not resolve now is refused at create (nothing could be checked), with the
      // same text as one that resolves to a refused address: a partner learns nothing of the DNS.
      const detail = hiddenDetail(err);
      if (detail !== undefined) {
        log?.info({ sink: urlSinkName(url), detail }, 'webhook target refused at create: not allowed or not reachable');
        throw new GatewayError('CEG_WEBHOOK_TARGET_REFUSED', TARGET_NOT_ALLOWED, { retriable: false, details: { field: 'delivery.url' } });
      }
      if (isGatewayError(err, 'CEG_SINK_FAILED')) throw new GatewayError('CEG_WEBHOOK_TARGET_REFUSED', `${err.message}: the target cannot be checked`, { retriable: false, details: { field: 'delivery.url' } });
      throw err;
    }
  };
}
