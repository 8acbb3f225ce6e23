/**
 * One HTTP attempt of a push delivery, and what its answer means.
 * - The connection goes to the address the target check passed (an undici Agent per sink origin
 *   and address whose `lookup` answers only that address; TLS still verifies the host name, SNI
 *   included). A new address means a new Agent: a kept-alive connection never outlives the check
 *   that allowed it.
 * - Redirects are not followed (undici follows none unless told); a 3xx counts as a failure.
 * - One deadline per attempt (connect, send, headers, body); the response body is read up to
 *   1 KiB for the excerpt and at most 64 KiB in all, the rest dropped.
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
import type { ResolvedTarget } from './target.js';

/** Most bytes of a sink's answer read at all. */
const MAX_READ_BYTES = 64 * 1024;

/** What one attempt came to. */
export type AttemptResult =
  | { readonly kind: 'handled'; readonly status: number }
  | { readonly kind: 'gone'; readonly status: number; readonly excerpt: string }
  | { readonly kind: 'retry'; readonly status?: number; readonly excerpt?: string; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly kind: 'deadLetter'; readonly status: number; readonly excerpt: string; readonly reason: string };

/** Agents per origin and validated address; idle ones are closed by undici's keep-alive timeout. */
export class PinnedAgents {
  readonly #agents = new Map<string, Agent>();

  /** The agent that connects `target`'s origin to `target.address` only. */
  for(target: ResolvedTarget): Agent {
    const key = `${target.url.origin}|${target.address}`;
    let a = this.#agents.get(key);
    if (a === undefined) {
      const pinned: LookupFunction = (_host, opts, cb) => {
        if (typeof opts === 'object' && opts.all === true) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
        else cb(null, target.address, target.family);
      };
      a = new Agent({ connect: { lookup: pinned, timeout: 10_000 }, keepAliveTimeout: 30_000, connections: 64 });
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

/** `Retry-After` as ms from now (delay-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined;
}

async function excerptOf(body: Dispatcher.ResponseData['body']): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (keptBytes < MAX_EXCERPT_BYTES) {
      const part = chunk.subarray(0, MAX_EXCERPT_BYTES - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (total > MAX_READ_BYTES) {
      body.destroy();
      break;
    }
  }
  return utf8Prefix(Buffer.concat(kept).toString('utf8'), MAX_EXCERPT_BYTES);
}

function header(h: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/** What an answer's status means (see the module comment). */
export function classify(status: number, excerpt: string, retryAfter: string | undefined, capMs: number): AttemptResult {
  if (status >= 200 && status <= 299) return { kind: 'handled', status };
  if (status === 410) return { kind: 'gone', status, excerpt };
  if (status === 429 || status === 503) {
    const after = retryAfterMs(retryAfter);
    return { kind: 'retry', status, excerpt, reason: `sink answered ${status}${after === undefined ? '' : ` (Retry-After ${Math.round(after / 1000)} s)`}`, ...(after === undefined ? {} : { retryAfterMs: Math.min(after, capMs) }) };
  }
  if (status >= 300 && status <= 399) return { kind: 'retry', status, excerpt, reason: `sink answered ${status} (redirects are not followed)` };
  if (status === 408 || status >= 500) return { kind: 'retry', status, excerpt, reason: `sink answered ${status}` };
  return { kind: 'deadLetter', status, excerpt, reason: `sink answered ${status}: refused for good` };
}

export interface AttemptRequest {
  readonly target: ResolvedTarget;
  readonly method: 'POST' | 'OPTIONS';
  readonly headers: Readonly<Record<string, string>>;
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

/** The raw answer of an attempt (status, a header reader, the excerpt) or the error that prevented one. */
export type RawAnswer = { readonly ok: true; readonly status: number; readonly header: (name: string) => string | undefined; readonly excerpt: string } | { readonly ok: false; readonly reason: string; readonly aborted: boolean };

/**
 * Sends one request to the pinned address. Never throws. The deadline is undici's own (connect,
 * headers, body: each at most `timeoutMs`), so an attempt costs no timer of its own; the
 * subscription's stop aborts it through {@link watchStop}.
 */
export async function send(agents: PinnedAgents, r: AttemptRequest): Promise<RawAnswer> {
  if (stopped(r.signal)) return { ok: false, reason: 'subscription stopping', aborted: true };
  try {
    const res = await agents.for(r.target).request({
      origin: r.target.url.origin,
      path: `${r.target.url.pathname}${r.target.url.search}`,
      method: r.method,
      headers: { ...r.headers, ...(r.body === undefined ? {} : { 'content-length': String(r.body.length) }) },
      ...(r.body === undefined ? {} : { body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) }),
      headersTimeout: r.timeoutMs,
      bodyTimeout: r.timeoutMs,
    });
    const excerpt = await excerptOf(res.body);
    return { ok: true, status: res.statusCode, header: (n) => header(res.headers, n), excerpt };
  } catch (err) {
    const aborted = stopped(r.signal); // may have fired during the attempt
    const code = (err as { code?: string }).code;
    const timedOut = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT';
    const reason = timedOut ? `no answer within ${r.timeoutMs} ms (${code})` : `request failed: ${errorMessage(err)}`;
    return { ok: false, reason, aborted };
  }
}
