/**
 * One HTTP attempt of a push delivery, and what its answer means.
 * - The connection goes to the address the target check passed (an undici Agent per sink origin
 *   and address whose `lookup` answers only that address; TLS still verifies the host name, SNI
 *   included). A new address means a new Agent: a kept-alive connection never outlives the check
 *   that allowed it.
 * - Redirects are not followed (undici follows none unless told); a 3xx counts as a failure.
 * - One deadline per attempt (connect, send, headers, body); the response body is read up to
 *   1 KiB for the excerpt (plus redact.ts's margin, cut after redaction) and at most 64 KiB in
 *   all, the rest dropped.
 * Outcomes: 2xx handled; 410 gone; 429 and 503 retried after `Retry-After` (seconds or an HTTP
 * date) capped by the policy; 408 and other 5xx, 3xx, timeouts and connection errors retried;
 * every other 4xx dead-lettered at once.
 * Spec: issue 8 ("Outcomes"); RFC 9110 §10.2.3 (Retry-After), §15.4 (3xx), §15.5.11 (410);
 *   RFC 6585 §4 (429); CloudEvents Web Hooks 1.0.2 §2.2 (delivery response).
 */
import type { LookupFunction } from 'node:net';
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import { errorMessage } from '../../../core/errors.js';
import { MAX_EXCERPT_BYTES, utf8Prefix } from '../../../bus/subscriber/index.js';
import { REDACTION_MARGIN_BYTES } from './redact.js';
import type { ResolvedTarget } from './target.js';

/** An answer's headers as undici hands them to a dispatch handler (lower-case names). */
type ResponseHeaders = Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2];

/** Most bytes of a sink's answer read at all. */
const MAX_READ_BYTES = 64 * 1024;
/** Bytes of the answer's start kept: the excerpt and the margin its redaction needs (./redact.ts). */
const KEPT_BYTES = MAX_EXCERPT_BYTES + REDACTION_MARGIN_BYTES;

/** What one attempt came to. */
export type AttemptResult =
  | { readonly kind: 'handled'; readonly status: number }
  | { readonly kind: 'gone'; readonly status: number; readonly excerpt: string }
  | { readonly kind: 'retry'; readonly status?: number; readonly excerpt?: string; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly kind: 'deadLetter'; readonly status: number; readonly excerpt: string; readonly reason: string };

/** How often the attempts in flight are looked at for their deadline, ms (see {@link DeadlineSweeper}). */
export const DEADLINE_SWEEP_MS = 250;
/**
 * How long past its deadline an attempt is left to undici's own timeouts, ms: they name the phase
 * that ran out (`UND_ERR_HEADERS_TIMEOUT`, `UND_ERR_BODY_TIMEOUT`…) and run on undici's timer wheel
 * (headers and body: ~0.5 s ticks, so up to about 1 s late).
 */
export const DEADLINE_GRACE_MS = 1_000;

/** An attempt the sweeper can end: its deadline (performance.now() ms) and how to end it. */
interface Expiring {
  readonly deadline: number;
  expire(): void;
}

/**
 * Ends the attempts past their deadline (after {@link DEADLINE_GRACE_MS}, within one more tick):
 * one timer per sink while attempts are in flight (ticking every {@link DEADLINE_SWEEP_MS}), not one
 * per attempt. undici's own timeouts bound each phase
 * (connect, headers, a pause in the body) by `timeoutMs`, so an answer whose headers came just in
 * time and whose body then stopped held the attempt about twice `timeoutMs` (three times with a
 * slow connect); the deadline covers the whole attempt.
 */
class DeadlineSweeper {
  readonly #pending = new Set<Expiring>();
  #timer: NodeJS.Timeout | undefined;

  add(a: Expiring): void {
    this.#pending.add(a);
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      const now = performance.now();
      // Where undici's own timeout is due at the deadline, it comes first and names the phase.
      for (const p of this.#pending) if (p.deadline + DEADLINE_GRACE_MS <= now) p.expire();
    }, DEADLINE_SWEEP_MS);
    this.#timer.unref();
  }

  delete(a: Expiring): void {
    this.#pending.delete(a);
    if (this.#pending.size > 0 || this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/** Agents per origin and validated address; idle ones are closed by undici's keep-alive timeout. */
export class PinnedAgents {
  readonly #agents = new Map<string, Agent>();
  /** The deadlines of this sink's attempts in flight. */
  readonly deadlines = new DeadlineSweeper();

  /** The agent that connects `target`'s origin to `target.address` only. */
  for(target: ResolvedTarget, timeoutMs: number): Agent {
    // The connect timeout is the attempt's (an agent per timeout in use): a sink whose accept
    // queue is full otherwise held each attempt for undici's 10 s, whatever `timeoutMs` said.
    const key = `${target.url.origin}|${target.address}|${timeoutMs}`;
    let a = this.#agents.get(key);
    if (a === undefined) {
      const pinned: LookupFunction = (_host, opts, cb) => {
        if (typeof opts === 'object' && opts.all === true) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
        else cb(null, target.address, target.family);
      };
      a = new Agent({ connect: { lookup: pinned, timeout: timeoutMs }, keepAliveTimeout: 30_000, connections: 64 });
      // Drop agents of addresses no longer in use (the host moved): at most a handful per sink.
      if (this.#agents.size >= 8) {
        const [oldKey, oldAgent] = this.#agents.entries().next().value as [string, Agent];
        this.#agents.delete(oldKey);
        void oldAgent.close().catch(() => undefined);
      }
      this.#agents.set(key, a);
    }
    return a;
  }

  /**
   * Aborts every request in flight on every agent (the subscription stops): one listener on the
   * stop signal per sink instead of one per request (adding and removing an abort listener per
   * delivery cost more than the rest of the bookkeeping).
   */
  abortAll(reason: unknown): void {
    const all = [...this.#agents.values()];
    this.#agents.clear();
    for (const a of all) void a.destroy(reason instanceof Error ? reason : new Error(String(reason))).catch(() => undefined);
  }

  async close(): Promise<void> {
    const all = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.allSettled(all.map((a) => a.close()));
  }
}

/**
 * `Retry-After` as ms from now (delay-seconds or an HTTP date, RFC 9110 §10.2.3); undefined when
 * absent or unreadable. Delay-seconds of any length count: a value too large for a number is
 * `Infinity`, which the policy's cap then bounds (a sink asking for a very long wait gets the
 * longest the policy allows, not an early retry).
 */
export function retryAfterMs(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date names a weekday and a month: V8's Date.parse also reads "-1" or "1.5" as dates.
  if (!/[A-Za-z]{3}/.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined;
}

/**
 * A Retry-After as the reason says it: whole seconds as a plain number, and the wait the policy
 * actually grants when the sink asked for more (`99999999999999999999999` read "Retry-After
 * 1e+23 s", neither what was sent nor what was waited).
 */
function retryAfterText(afterMs: number, capMs: number): string {
  if (afterMs <= capMs) return `Retry-After ${Math.round(afterMs / 1000)} s`;
  const capped = `waiting the policy's cap of ${Math.round(capMs / 1000)} s`;
  // Beyond a day's worth of digits, the figure says nothing more than "longer than the cap".
  return afterMs < 1e15 ? `Retry-After ${Math.round(afterMs / 1000)} s, ${capped}` : `Retry-After beyond any cap, ${capped}`;
}

/** What an answer's status means (see the module comment). */
export function classify(status: number, excerpt: string, retryAfter: string | undefined, capMs: number): AttemptResult {
  if (status >= 200 && status <= 299) return { kind: 'handled', status };
  if (status === 410) return { kind: 'gone', status, excerpt };
  if (status === 429 || status === 503) {
    const after = retryAfterMs(retryAfter);
    return { kind: 'retry', status, excerpt, reason: `sink answered ${status}${after === undefined ? '' : ` (${retryAfterText(after, capMs)})`}`, ...(after === undefined ? {} : { retryAfterMs: Math.min(after, capMs) }) };
  }
  if (status >= 300 && status <= 399) return { kind: 'retry', status, excerpt, reason: `sink answered ${status} (redirects are not followed)` };
  if (status === 408 || status >= 500) return { kind: 'retry', status, excerpt, reason: `sink answered ${status}` };
  return { kind: 'deadLetter', status, excerpt, reason: `sink answered ${status}: refused for good` };
}

export interface AttemptRequest {
  readonly target: ResolvedTarget;
  readonly method: 'POST' | 'OPTIONS';
  /** Handed over: {@link send} adds `content-length` to this object instead of copying it. */
  readonly headers: Record<string, string>;
  readonly body?: Uint8Array;
  readonly timeoutMs: number;
  /** Caps Retry-After, ms (the policy's largest backoff). */
  readonly retryAfterCapMs: number;
  /**
   * The subscription's stop signal. Not handed to undici: the caller aborts the requests in flight
   * with {@link PinnedAgents.abortAll} when it fires (see {@link watchStop}); here it only tells an
   * aborted attempt from a failed one.
   */
  readonly signal?: AbortSignal;
}

const stopped = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

/** Arranges, once per signal, that `agents` abort their requests when `signal` fires. */
export function watchStop(agents: PinnedAgents, signal: AbortSignal | undefined, watched: WeakSet<AbortSignal>): void {
  if (signal === undefined || watched.has(signal)) return;
  watched.add(signal);
  if (signal.aborted) return;
  signal.addEventListener('abort', () => agents.abortAll(signal.reason), { once: true });
}

/**
 * The raw answer of an attempt (status, a header reader, the body's start) or the error that
 * prevented one. `bodyStart`: the body's first bytes, whole characters, at most
 * {@link KEPT_BYTES} — neither redacted nor cut to the excerpt yet (./redact.ts redactedExcerpt);
 * '' (or absent, on a failure) for a 2xx answer to a POST, whose body is never kept.
 */
export type RawAnswer =
  | { readonly ok: true; readonly status: number; readonly header: (name: string) => string | undefined; readonly bodyStart: string }
  | {
      readonly ok: false;
      readonly reason: string;
      readonly aborted: boolean;
      /** The answer's status when it came before the failure (a body that never finished, a socket closed mid-body). */
      readonly status?: number;
      /** The body's first bytes received before the failure (as `bodyStart` above); with `status` only. */
      readonly bodyStart?: string;
    };

function header(h: ResponseHeaders, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Why an answer's body stopped being read: it passed {@link MAX_READ_BYTES}. */
class ReadEnough extends Error {}

/**
 * Reads one answer through undici's dispatch handler interface: the status, the headers and the
 * first KiB of the body, straight from the connection. `request()` would wrap the body in a
 * Readable stream read by async iteration: a stream, a handler and several promises per delivery
 * for a body a sink usually leaves empty (issue 8 profile: the HTTP client's share of push CPU).
 */
class AnswerReader implements Dispatcher.DispatchHandler, Expiring {
  readonly #r: AttemptRequest;
  /** The request's controller once undici started it (to abort it at the deadline). */
  #controller: Dispatcher.DispatchController | undefined;
  readonly #settle: (answer: RawAnswer) => void;
  #status = 0;
  #headers: ResponseHeaders | undefined;
  #kept: Buffer[] | undefined;
  #keptBytes = 0;
  /** Bytes of the body to keep: {@link KEPT_BYTES}, or none for a delivery's 2xx (see onResponseStart). */
  #keepBytes = KEPT_BYTES;
  #total = 0;
  #settled = false;
  /** performance.now() plus `timeoutMs`: the whole answer must be in by then. */
  readonly deadline: number;

  constructor(r: AttemptRequest, settle: (answer: RawAnswer) => void) {
    this.#r = r;
    this.#settle = settle;
    this.deadline = performance.now() + r.timeoutMs;
  }

  /** Also what makes undici treat this as a handler of its current interface (it checks for this method). */
  onRequestStart(c: Dispatcher.DispatchController): void {
    this.#controller = c;
  }

  /**
   * The attempt's deadline passed ({@link DeadlineSweeper}): it fails as a timeout and its request
   * is aborted (one not started yet ends with undici's connect timeout, unheeded).
   */
  expire(): void {
    if (this.#settled) return;
    const late = Object.assign(new Error('attempt deadline passed'), { code: 'CEG_ATTEMPT_DEADLINE' });
    this.failed(late);
    this.#controller?.abort(late);
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: ResponseHeaders): void {
    this.#status = statusCode;
    this.#headers = headers;
    // A delivery's 2xx has no excerpt (the event is handled): its body is read to keep the
    // connection, not kept or decoded. A handshake's 2xx may still be a refusal whose excerpt counts.
    if (this.#r.method === 'POST' && statusCode >= 200 && statusCode <= 299) this.#keepBytes = 0;
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#total += chunk.length;
    if (this.#keptBytes < this.#keepBytes) {
      const part = chunk.subarray(0, this.#keepBytes - this.#keptBytes);
      (this.#kept ??= []).push(part);
      this.#keptBytes += part.length;
    }
    // The rest is dropped with the connection (a sink sending megabytes costs no more).
    if (this.#total > MAX_READ_BYTES) {
      this.#answered();
      c.abort(new ReadEnough('answer body over 64 KiB: the rest is not read'));
      return;
    }
    // undici's bodyTimeout is the longest pause between chunks: a body trickling a byte at a time
    // would hold the attempt (and its lane) forever. Checked per chunk, so no timer per attempt; a
    // body that stops altogether meets bodyTimeout.
    if (performance.now() > this.deadline) {
      const late = Object.assign(new Error('answer body not complete in time'), { code: 'CEG_BODY_DEADLINE' });
      this.failed(late);
      c.abort(late);
    }
  }

  onResponseEnd(): void {
    this.#answered();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.failed(err);
  }

  /** The request failed before a whole answer (or its first 64 KiB) came; no-op once settled. */
  failed(err: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    const r = this.#r;
    const aborted = stopped(r.signal); // may have fired during the attempt
    const code = (err as { code?: string }).code;
    const timedOut = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'CEG_BODY_DEADLINE' || code === 'CEG_ATTEMPT_DEADLINE';
    const reason = timedOut ? `no answer within ${r.timeoutMs} ms (${code})` : `request failed: ${errorMessage(err)}`;
    // The status and the body's start already came (the body then stalled or the socket closed):
    // kept for the dead letter, which otherwise said only "no answer" with no status at all.
    if (this.#status === 0) this.#settle({ ok: false, reason, aborted });
    else {
      const failedReason = `sink answered ${this.#status}, then ${timedOut ? `its body was not complete within ${r.timeoutMs} ms (${code})` : `the body failed: ${errorMessage(err)}`}`;
      this.#settle({ ok: false, reason: failedReason, aborted, status: this.#status, ...(this.#keepBytes === 0 ? {} : { bodyStart: this.#bodyStart() }) });
    }
  }

  /** The body's kept bytes as text: whole characters, at most {@link KEPT_BYTES}; '' when none were kept. */
  #bodyStart(): string {
    const kept = this.#kept;
    return kept === undefined ? '' : utf8Prefix((kept.length === 1 ? kept[0]! : Buffer.concat(kept)).toString('utf8'), this.#keepBytes);
  }

  #answered(): void {
    if (this.#settled) return;
    this.#settled = true;
    const headers = this.#headers ?? {};
    this.#settle({ ok: true, status: this.#status, header: (n) => header(headers, n), bodyStart: this.#bodyStart() });
  }
}

/**
 * Sends one request to the pinned address. Never rejects. The attempt ends `timeoutMs` after the
 * send at the latest (plus {@link DEADLINE_GRACE_MS} and a tick, ~1.25 s): undici's own deadlines bound each phase
 * (connect, headers, a pause in the body), a chunk arriving late fails at once, and the sink's
 * {@link DeadlineSweeper} (one timer per sink, not per attempt) ends an answer that stopped
 * altogether; the subscription's stop aborts it through {@link watchStop}. The answer's body is read up to 64 KiB
 * ({@link MAX_READ_BYTES}), its first {@link KEPT_BYTES} kept as `bodyStart`, of which
 * ./redact.ts redactedExcerpt makes the excerpt.
 */
export function send(agents: PinnedAgents, r: AttemptRequest): Promise<RawAnswer> {
  if (stopped(r.signal)) return Promise.resolve({ ok: false, reason: 'subscription stopping', aborted: true });
  return new Promise<RawAnswer>((resolve) => {
    const reader: AnswerReader = new AnswerReader(r, (answer) => {
      agents.deadlines.delete(reader);
      resolve(answer);
    });
    agents.deadlines.add(reader);
    const headers = r.headers;
    if (r.body !== undefined) headers['content-length'] = String(r.body.length);
    try {
      agents.for(r.target, r.timeoutMs).dispatch(
        {
          origin: r.target.url.origin,
          path: `${r.target.url.pathname}${r.target.url.search}`,
          method: r.method,
          headers,
          ...(r.body === undefined ? {} : { body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) }),
          headersTimeout: r.timeoutMs,
          bodyTimeout: r.timeoutMs,
        },
        reader,
      );
    } catch (err) {
      // Invalid options or a closed agent throw at once instead of reaching the handler.
      reader.failed(err instanceof Error ? err : new Error(String(err)));
    }
  });
}
