/**
 * Pull delivery over HTTP (issue 9), for subscriptions with `delivery.mode: "pull"`:
 * - `GET /subscriptions/{name}/events?max=N&wait=S[&maxBytes=B][&cursor=C][&partitions=0,2]` → 200
 *   with up to N events as `application/cloudevents-batch+json` (a JSON array; `[]` when `wait`
 *   runs out) and the cursor after them in the `ce-gateway-cursor` response header. `max` 1–1000
 *   (default 100), `wait` 0–30 seconds (default 0: answer at once), decimals allowed. `maxBytes`
 *   1024–4194304 bytes (default and ceiling 4 MiB, {@link MAX_PULL_BYTES}): the most UTF-8 bytes of
 *   the answer body; the answer stops before the event that would pass it (its cursor points right
 *   after the last event in it), except that a single larger event goes alone.
 * - `POST /subscriptions/{name}/cursors` with `{ "cursor": "…" }` → 204 once committed (any instance).
 * - `GET /subscriptions/{name}/stream[?cursor=C][&partitions=…][&heartbeat=S]` → `text/event-stream`,
 *   one event per message (`id:` = the cursor after it, `data:` = the event in the JSON format),
 *   read in answers of up to 100 events and {@link MAX_PULL_BYTES} of their JSON text;
 *   `Last-Event-ID` resumes (it wins over `cursor`, as a reconnecting EventSource keeps its URL);
 *   a `: heartbeat` comment after every `heartbeat` seconds (1–60, default 15) without events keeps
 *   proxies from closing the connection. The stream never commits: the client commits the `id:` it
 *   has processed. A failure after the stream started ends it with an `event: error` message whose
 *   `data:` is the problem+json object — so does the subscription being paused (409, `state`) or
 *   deleted (404) while the stream waits; a long-poll waiting then answers that problem instead.
 *   Heartbeats run on their own timer (they go on while a read hangs on a stalled broker); a
 *   retriable read failure (broker or registry unavailable) does not end a stream: it is retried
 *   after {@link STREAM_RETRY_MIN_MS}…{@link STREAM_RETRY_MAX_MS} ms, from after the last event
 *   sent. A long-poll's broker calls are bounded (`wait` + PULL_BROKER_GRACE_MS, a commit's by
 *   PULL_BROKER_GRACE_MS): past that, 503 CEG_BROKER_UNAVAILABLE with `Retry-After`.
 * Bad parameters are RFC 9457 problems naming the `field` (`max`, `wait`, `cursor`, `partitions`…).
 * Concurrency (defect E7): every long-poll and stream in progress holds one of its caller's slots
 * ({@link PullSlots}, `PULL_MAX_CONCURRENT_PER_PARTNER`, default 32 per partner and instance; callers
 * without a partners file share the `anonymous` one) until its response closes; one more is a 429
 * CEG_RATE_LIMITED with `Retry-After`, before anything is read. A client that stops reading
 * without closing does not hold it for ever: an answer (a stream's, or a long-poll's larger than the
 * socket buffers) whose bytes the connection has not taken for `sendStallMs` (default
 * {@link STREAM_SEND_STALL_MS}, 60 s) is cut (./send-stall.ts). That cut cannot see a client that
 * stopped reading an idle stream: the kernel's buffers of a connection (~3.9 MB measured on the
 * loopback) take its heartbeats for days, and Node tells nothing of what the peer acknowledged.
 * So a stream also ends after `streamMaxLifeMs` (default {@link STREAM_MAX_LIFE_MS}, 10 min), with a
 * closing comment and a clean end: a client that reads reconnects with `Last-Event-ID` and loses
 * nothing (the stream never commits); one that stopped reading gives its slot back.
 * Ownership (issue 11): the caller's own subscription; an admin names another owner with `?owner=`;
 * another partner's subscription is 404. A commit to another owner's subscription is written to
 * the audit log (action `commit-cursor`, with its outcome); reads move no position and are not.
 * Spec: issue 9; WHATWG HTML §9.2 (server-sent events: `id`, `data`, comments, Last-Event-ID);
 *   CloudEvents JSON format 1.0.2 §4 (batch); RFC 9457.
 */
import express from 'express';
import { loadedApi, notAllowed, queryParams as query, subscriptionName } from './route-parts.js';
import { isContentType, jsonBody } from '../json-body.js';
import type { Request, Response } from 'express';
import { GatewayError, errorMessage } from '../../../core/errors.js';
import { linkedSignal } from '../../../core/abort-fanout.js';
import { sleep } from '../../../core/retry.js';
import { BATCH_JSON } from '../../../codec/json/index.js';
import { streamErrorMessage } from '../errors.js';
import { MAX_CURSOR_CHARS, MAX_PULL_BYTES, MAX_PULL_EVENTS, MAX_PULL_WAIT_MS } from '../../../bus/subscriptions/index.js';
import type { PullOptions, PullSession } from '../../../bus/subscriptions/index.js';
import type { Logger } from '../../../observability/index.js';
import { accessOf } from '../../auth/index.js';
import { DEFAULT_PULL_SLOTS, PullSlots } from './pull-slots.js';
import { STREAM_SEND_STALL_MS, cutWhenStalled, writeWithBackpressure } from './send-stall.js';

/** What the routes need (PullService fits). `owner`: whose subscription (issue 11: the caller, or `?owner=` for an admin). */
export interface PullApi {
  open(name: string, o: PullOptions, owner: string): Promise<PullSession>;
  commit(name: string, cursor: string, owner: string): Promise<void>;
}

/** Response header carrying the cursor after a long-poll's events. */
export const CURSOR_HEADER = 'ce-gateway-cursor';
/** Default and bounds of the query parameters; `minBytes`: the lowest `maxBytes`, bytes (the default and ceiling is {@link MAX_PULL_BYTES}). */
export const PULL_DEFAULTS = Object.freeze({ max: 100, waitS: 0, heartbeatS: 15, maxHeartbeatS: 60, streamBatch: 100, minBytes: 1024 });
const MAX_PARTITION_LIST = 1000;
/**
 * Backoff of a stream retrying a read that failed retriably, ms: doubled from the first to the
 * last, reset by an answer. Source: docs/subscriptions.md "Pull delivery" (a stream outlives a
 * broker stall).
 */
export const STREAM_RETRY_MIN_MS = 500;
export const STREAM_RETRY_MAX_MS = 5_000;
/**
 * How long one SSE stream runs at most, ms (10 min): the bound on how long a client that stopped
 * reading an idle stream holds its partner's slot (see the module comment). A reading client pays
 * one reconnect per bound. Source: docs/subscriptions.md "Pull delivery" ("A client that stops reading").
 */
export const STREAM_MAX_LIFE_MS = 10 * 60_000;

function param(field: string, why: string): GatewayError {
  return new GatewayError('CEG_INVALID_PARAMETER', `${field}: ${why}`, { retriable: false, details: { field } });
}

function intIn(q: Map<string, string>, field: string, min: number, max: number, dflt: number): number {
  const v = q.get(field);
  if (v === undefined) return dflt;
  if (!/^\d{1,7}$/.test(v) || Number(v) < min || Number(v) > max) throw param(field, `an integer ${min}–${max}`);
  return Number(v);
}

function secondsIn(q: Map<string, string>, field: string, min: number, maxS: number, dflt: number): number {
  const v = q.get(field);
  if (v === undefined) return dflt * 1000;
  if (!/^\d{1,5}(\.\d{1,3})?$/.test(v) || Number(v) < min || Number(v) > maxS) throw param(field, `seconds, ${min}–${maxS} (up to 3 decimals)`);
  return Math.round(Number(v) * 1000);
}

function partitionsIn(q: Map<string, string>): number[] | undefined {
  const v = q.get('partitions');
  if (v === undefined) return undefined;
  const parts = v.split(',');
  if (parts.length > MAX_PARTITION_LIST || parts.some((p) => !/^\d{1,5}$/.test(p))) throw param('partitions', 'comma-separated partition numbers, e.g. 0,2');
  const nums = parts.map(Number);
  if (new Set(nums).size !== nums.length) throw param('partitions', 'a partition twice');
  return nums;
}

function cursorIn(v: string | undefined, field = 'cursor'): string | undefined {
  if (v === undefined) return undefined;
  if (v.length === 0 || v.length > MAX_CURSOR_CHARS) throw new GatewayError('CEG_INVALID_CURSOR', `${field}: not a cursor of this gateway`, { retriable: false, details: { field: 'cursor' } });
  return v;
}

/** Aborted when the client goes away before the answer is complete. */
function clientGone(req: Request, res: Response): AbortSignal {
  const ac = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) ac.abort(new GatewayError('CEG_CLOSED', 'the client closed the connection', { retriable: true }));
  });
  req.on('aborted', () => ac.abort());
  return ac.signal;
}

export interface PullRouterOptions {
  /** Where a stream's failure is logged (the answer has begun: no problem+json any more). */
  readonly log?: Logger;
  /**
   * Aborted when the gateway shuts down: a waiting long-poll answers with what it has (its cursor
   * included, so nothing is lost) and a stream ends, instead of holding the shutdown up.
   */
  readonly closing?: AbortSignal;
  /**
   * Long-polls and streams one caller (partner id) may have in progress at once on this instance
   * (`PULL_MAX_CONCURRENT_PER_PARTNER`), a whole number ≥ 1; default {@link DEFAULT_PULL_SLOTS}.
   */
  readonly maxConcurrentPerPartner?: number;
  /**
   * The slot counter to use instead of a new one (takes precedence over `maxConcurrentPerPartner`):
   * the app shares one with the console's live tail, so a partner's tails and pulls count together.
   */
  readonly slots?: PullSlots;
  /**
   * How long an answer being sent may make no progress (a client that stopped reading without
   * closing), ms, a whole number ≥ 1; past it the connection is closed and the caller's slot comes
   * back. Default {@link STREAM_SEND_STALL_MS}.
   */
  readonly sendStallMs?: number;
  /**
   * How long an SSE stream runs at most, ms, a whole number ≥ 1; then it ends cleanly (the client
   * reconnects with `Last-Event-ID`). Default {@link STREAM_MAX_LIFE_MS}.
   */
  readonly streamMaxLifeMs?: number;
}

/**
 * The router; `api()` is undefined while the subscriptions load (503).
 * Errors (answered as problem+json): besides the parameters' and the service's, CEG_RATE_LIMITED
 *   (429, `Retry-After`) for a long-poll or stream over the caller's concurrency cap.
 *   RangeError (thrown here) when `opts.maxConcurrentPerPartner` or `opts.sendStallMs` is not a
 *   whole number ≥ 1.
 */
export function pullRouter(api: () => PullApi | undefined, opts: PullRouterOptions = {}): express.Router {
  const r = express.Router();
  // Held by the caller (not `?owner=`'s owner): it is the caller's connections that are being used up.
  const slots = opts.slots ?? new PullSlots(opts.maxConcurrentPerPartner ?? DEFAULT_PULL_SLOTS);
  const log = opts.log;
  const stallMs = opts.sendStallMs ?? STREAM_SEND_STALL_MS;
  if (!Number.isInteger(stallMs) || stallMs < 1) throw new RangeError(`sendStallMs: a whole number ≥ 1, not ${String(stallMs)}`);
  const maxLifeMs = opts.streamMaxLifeMs ?? STREAM_MAX_LIFE_MS;
  if (!Number.isInteger(maxLifeMs) || maxLifeMs < 1) throw new RangeError(`streamMaxLifeMs: a whole number ≥ 1, not ${String(maxLifeMs)}`);
  // A client that stopped reading: its answer is cut, its slot comes back (./send-stall.ts).
  const cutStalled = (res: Response, n: string): void =>
    cutWhenStalled(res, stallMs, (waitingBytes) => log?.warn({ subscription: n, waitingBytes, stallMs }, 'pull: the client read nothing of the answer for the send-stall bound; connection closed'));
  // Linked to the gateway's `closing` only until the response closes: AbortSignal.any kept one
  // entry per request on `closing` for the life of the process (core/abort-fanout linkedSignal).
  const until = (req: Request, res: Response, ...also: AbortSignal[]): AbortSignal => {
    const gone = clientGone(req, res);
    const sources = [gone, ...also, ...(opts.closing === undefined ? [] : [opts.closing])];
    if (sources.length === 1) return gone;
    const linked = linkedSignal(sources);
    res.once('close', () => linked.release());
    return linked.signal;
  };
  const need = loadedApi(api);
  const name = (req: Request): string => subscriptionName(req);

  // express answers HEAD with the GET handler: that would run a pull (or hold a stream open) for nothing.
  r.head(['/subscriptions/:name/events', '/subscriptions/:name/stream'], notAllowed('GET', false));
  r.get('/subscriptions/:name/events', async (req, res) => {
    const q = query(req, ['max', 'maxBytes', 'wait', 'cursor', 'partitions', 'owner']);
    const owner = accessOf(req).owner(q.get('owner'));
    const max = intIn(q, 'max', 1, MAX_PULL_EVENTS, PULL_DEFAULTS.max);
    const maxBytes = intIn(q, 'maxBytes', PULL_DEFAULTS.minBytes, MAX_PULL_BYTES, MAX_PULL_BYTES);
    const waitMs = secondsIn(q, 'wait', 0, MAX_PULL_WAIT_MS / 1000, PULL_DEFAULTS.waitS);
    const cursor = cursorIn(q.get('cursor'));
    const partitions = partitionsIn(q);
    // Before open(): a refused pull costs the broker nothing.
    slots.take(accessOf(req).partner.id, res);
    const session = await need().open(name(req), { ...(cursor === undefined ? {} : { cursor }), ...(partitions === undefined ? {} : { partitions }) }, owner);
    const answer = await session.next({ max, maxBytes, waitMs, signal: until(req, res) });
    if (res.destroyed) return;
    // The texts the byte budget counted, joined as counted: `[` e1 `,` e2 … `]`.
    res.status(200).set('cache-control', 'no-store').set(CURSOR_HEADER, answer.cursor).type(`${BATCH_JSON}; charset=utf-8`).send(`[${answer.events.map((e) => e.text).join(',')}]`);
    // An answer larger than the socket buffers waits for the client to read it; not for ever.
    cutStalled(res, name(req));
  });
  r.all('/subscriptions/:name/events', notAllowed('GET', false));

  const json = jsonBody({ limit: MAX_CURSOR_CHARS + 1024, type: () => true });
  r.post('/subscriptions/:name/cursors', (req, _res, next) => {
    // By the header alone: req.is() answers null without a body (an empty POST is then read as `{}`: `cursor` required).
    if (!isContentType(req, ['application/json'])) {
      next(new GatewayError('CEG_UNSUPPORTED_MEDIA_TYPE', 'send { "cursor": "…" } as application/json', { retriable: false, details: { field: 'body', contentType: String(req.headers['content-type'] ?? '').slice(0, 100), supported: ['application/json'] } }));
      return;
    }
    next();
  }, json, async (req, res) => {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new GatewayError('CEG_MALFORMED_REQUEST', 'body: an object { "cursor": "…" }', { retriable: false, details: { field: 'body' } });
    const extra = Object.keys(body).filter((k) => k !== 'cursor');
    // A JSON body's unknown member, as the other routes' bodies answer it (CEG_INVALID_PARAMETER is for query parameters).
    if (extra.length > 0) throw new GatewayError('CEG_MALFORMED_REQUEST', `${extra[0]!.slice(0, 50)}: unknown field (the body is { "cursor": "…" })`, { retriable: false, details: { field: extra[0]!.slice(0, 50) } });
    const c = (body as { cursor?: unknown }).cursor;
    if (typeof c !== 'string') throw new GatewayError('CEG_INVALID_CURSOR', 'cursor: required, a string (the ce-gateway-cursor header or an SSE id)', { retriable: false, details: { field: 'cursor' } });
    const access = accessOf(req);
    const owner = access.owner(query(req, ['owner']).get('owner'));
    const n = name(req);
    const cursor = cursorIn(c)!;
    // Committing moves the group's position: a change to the subscription, audited (with its
    // outcome) when an admin makes it to another owner's (issue 11). Reads are not: they change
    // no committed position (the stream and long-poll never commit).
    await access.audited('commit-cursor', { owner, subscription: n }, () => need().commit(n, cursor, owner));
    res.status(204).end();
  });
  r.all('/subscriptions/:name/cursors', notAllowed('POST'));

  r.get('/subscriptions/:name/stream', async (req, res) => {
    const q = query(req, ['cursor', 'partitions', 'heartbeat', 'owner']);
    const owner = accessOf(req).owner(q.get('owner'));
    const heartbeatMs = secondsIn(q, 'heartbeat', 1, PULL_DEFAULTS.maxHeartbeatS, PULL_DEFAULTS.heartbeatS);
    const lastEventId = req.headers['last-event-id'];
    const cursor = cursorIn(typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : q.get('cursor'));
    const partitions = partitionsIn(q);
    const n = name(req);
    // For the stream's whole life, idle heartbeat waits included: its polling rounds are what costs.
    slots.take(accessOf(req).partner.id, res);
    // Opened before the stream starts, so a bad subscription, cursor or partition is still a problem+json answer.
    const session = await need().open(n, { ...(cursor === undefined ? {} : { cursor }), ...(partitions === undefined ? {} : { partitions }) }, owner);
    // The stream's lifetime (STREAM_MAX_LIFE_MS): ends it like a shutdown does, between two events.
    const life = new AbortController();
    const lifeTimer = setTimeout(() => life.abort(), maxLifeMs);
    res.once('close', () => clearTimeout(lifeTimer));
    const signal = until(req, res, life.signal);
    res.status(200).set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    cutStalled(res, n);
    // Nothing written to a response that is gone; a backed-up socket waited out (./send-stall.ts).
    const write = async (text: string): Promise<void> => writeWithBackpressure(res, text);
    // Heartbeats on their own timer, re-armed by every write: they go on while a read hangs on a
    // stalled broker or the stream waits to retry one. Skipped while the socket is backed up
    // (something is being sent anyway). Never re-armed for a response that is gone.
    let beat: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(beat);
      if (res.destroyed || signal.aborted) return;
      beat = setTimeout(() => {
        if (!res.writableNeedDrain && !res.destroyed) res.write(': heartbeat\n\n');
        arm();
      }, heartbeatMs);
    };
    arm();
    let backoffMs = STREAM_RETRY_MIN_MS;
    try {
      while (!signal.aborted) {
        let answer: Awaited<ReturnType<PullSession['next']>>;
        try {
          answer = await session.next({ max: PULL_DEFAULTS.streamBatch, maxBytes: MAX_PULL_BYTES, waitMs: heartbeatMs, signal });
        } catch (err) {
          // A retriable failure (broker or registry unavailable) does not end the stream: the
          // session still stands after its last answer; try again after a backoff, heartbeats going on.
          if (signal.aborted || !(err instanceof GatewayError) || !err.retriable) throw err;
          log?.warn({ subscription: n, err: errorMessage(err), retryInMs: backoffMs }, 'pull stream: a read failed; retrying');
          await sleep(backoffMs, signal).catch(() => undefined);
          backoffMs = Math.min(backoffMs * 2, STREAM_RETRY_MAX_MS);
          continue;
        }
        backoffMs = STREAM_RETRY_MIN_MS;
        if (signal.aborted) break;
        for (const e of answer.events) {
          // The client may go away while a write waits for 'drain': the rest of the answer is not written.
          if (signal.aborted || res.destroyed) break;
          arm();
          await write(`id: ${e.cursor}\ndata: ${e.text}\n\n`);
        }
      }
    } catch (err) {
      if (!signal.aborted) {
        log?.warn({ subscription: n, err: errorMessage(err) }, 'pull stream ended on a failure');
        await write(streamErrorMessage(err, req.originalUrl));
      }
    } finally {
      clearTimeout(beat);
      clearTimeout(lifeTimer);
      // Said before the end, so a client reading the raw stream knows to reconnect (an EventSource does anyway).
      if (life.signal.aborted && !res.destroyed) res.write(`: the stream ends after ${String(maxLifeMs / 1000)} s; reconnect with Last-Event-ID to go on\n\n`);
      res.end();
    }
  });
  r.all('/subscriptions/:name/stream', notAllowed('GET', false));
  return r;
}
