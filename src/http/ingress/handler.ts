/**
 * `POST /events`: the CloudEvents HTTP binding (binary, structured, batch) to Kafka records.
 * Answers `202` only after the broker acknowledged every event of the request. The
 * acknowledgement deadline (`ackTimeoutMs`) runs from the request's arrival, body reading and
 * validation included; when it passes, or the broker refuses, the answer is `503` (or the
 * refusal's own status) listing each event as `stored`, `notStored` (provably not written: never
 * sent, withdrawn from the queue at the deadline, or refused appending nothing) or `unconfirmed`
 * (a send was under way: it may be stored; retry with the same id). Runs on node:http ahead of
 * express (DESIGN "Performance notes"): the router and the SDK parser stay off this hot path.
 * Spec: DESIGN "Known traps" (a produce that timed out is indeterminate).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { onAbort } from '../../core/abort-fanout.js';
import { GatewayError } from '../../core/errors.js';
import { ingressChannel } from '../../core/stage-channels.js';
import type { IngressStages } from '../../core/stage-channels.js';
import { deliveryFate } from '../../bus/publisher/index.js';
import type { RecordPublisher, Settled } from '../../bus/publisher/index.js';
import type { EventCodec } from '../../codec/event/index.js';
import { BatchViolationsError, parseHttpRequest, toProblem } from '../../codec/http/index.js';
import type { ParsedHttpRequest } from '../../codec/http/index.js';
import type { EnvelopeLimits, Violation } from '../../envelope/index.js';
import type { Logger } from '../../observability/index.js';
import { LogThrottle, validTraceparent } from '../../observability/index.js';
import type { ActiveSpan, Tracing } from '../../observability/index.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import { checkBodyFraming, readBody } from '../body.js';
import type { IngressAdmission } from '../auth/index.js';
import type { RefusalLog, RefusedBy } from '../refusals.js';
import { sendJson, sendProblem } from '../respond.js';
import { prepareEvents } from './prepare.js';
import type { PreparedEvent } from './prepare.js';
import { validTracestate } from './tracestate.js';
import { neverRejects } from '../../core/never-rejects.js';

export interface IngressOptions {
  /** Largest request body, bytes (after decoding a gzip content coding too). */
  readonly maxBodyBytes: number;
  /** Most events in one batch request. */
  readonly maxBatchEvents: number;
  /** How long after the request's arrival the answer comes at the latest, ms. */
  readonly ackTimeoutMs: number;
  /** `Retry-After` on 503, seconds. */
  readonly retryAfterS: number;
  readonly dataschemaBase: string;
  /** Attribute count and bytes per event (default: envelope DEFAULT_ENVELOPE_LIMITS). */
  readonly limits?: EnvelopeLimits;
  /** A topic's `max.message.bytes`, read at start-up; undefined = not known. */
  readonly maxMessageBytes?: (topic: string) => number | undefined;
}

export interface IngressDeps {
  readonly codec: EventCodec;
  readonly publisher: RecordPublisher;
  readonly log: Logger;
  readonly options: IngressOptions;
  /** Where events are counted by kind and outcome (issue 15); none = not counted. */
  readonly instruments?: Pick<GatewayMetrics, 'ingressEvents'>;
  /** Producer spans per event (issue 15 "Tracing"); none or off = no spans (the traceparent still flows). */
  readonly tracing?: () => Tracing;
}

/** What the server knows of the request besides itself. */
export interface RequestContext {
  /** `performance.now()` when the request's headers were in. */
  readonly arrivedAtMs: number;
  /** Time to receive the whole request, ms (then 408). */
  readonly requestTimeoutMs: number;
  readonly refusals?: RefusalLog;
  /** Whom refusals are counted under (client address, partner id); default the TCP peer. */
  readonly refusedBy?: RefusedBy;
  /** Aborted when the gateway is shutting down and requests must answer now (503 with each event's fate). */
  readonly shutdown?: AbortSignal;
  /** The partner's bounds and checks (issue 11); undefined = none (the gateway's bounds only). */
  readonly admission?: IngressAdmission;
}


/**
 * Node joins repeated headers with ", " — which would turn two `ce-id` headers into one id.
 * CloudEvents attributes appear once: a repeated `ce-` header or Content-Type is refused.
 * Errors: CEG_INVALID_ATTRIBUTE naming each repeated attribute.
 */
function refuseRepeatedHeaders(req: IncomingMessage): void {
  // Counted on rawHeaders, in arrival order: only names starting with "c" can matter, and
  // `headersDistinct` would build an array per header of every request (issue 14).
  let counts: Map<string, number> | undefined;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const first = raw[i]!.charCodeAt(0) | 0x20;
    if (first !== 0x63) continue; // "c" or "C"
    const name = raw[i]!.toLowerCase();
    if (!name.startsWith('ce-') && name !== 'content-type' && name !== 'content-encoding') continue;
    counts ??= new Map();
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  if (counts === undefined) return;
  const violations: Violation[] = [];
  for (const [name, count] of counts) {
    if (count < 2) continue;
    if (name.startsWith('ce-')) violations.push({ attribute: name.slice(3), reason: `header ${name} appears ${count} times; an attribute has one value`, code: 'CEG_INVALID_ATTRIBUTE' });
    else if (name === 'content-type') violations.push({ attribute: 'datacontenttype', reason: 'Content-Type appears more than once', code: 'CEG_INVALID_ATTRIBUTE' });
    else violations.push({ field: 'headers', reason: 'Content-Encoding appears more than once', code: 'CEG_INVALID_ATTRIBUTE' });
  }
  if (violations.length > 0) throw new GatewayError('CEG_INVALID_ATTRIBUTE', violations.map((v) => v.reason).join('; '), { retriable: false, details: { violations } });
}

function isClientAbort(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_PREMATURE_CLOSE';
}

/** Handles one `POST /events`; never rejects (every failure becomes a problem+json answer). */
export async function handleIngress(req: IncomingMessage, res: ServerResponse, deps: IngressDeps, ctx: RequestContext = { arrivedAtMs: performance.now(), requestTimeoutMs: 30_000 }): Promise<void> {
  const { options: o } = deps;
  // Read now: once the client hangs up, the socket no longer knows its peer.
  const by: RefusedBy = ctx.refusedBy ?? { ...(req.socket.remoteAddress === undefined ? {} : { client: req.socket.remoteAddress }) };
  const admission = ctx.admission;
  const maxBodyBytes = Math.min(o.maxBodyBytes, admission?.maxBodyBytes ?? Infinity);
  const maxBatchEvents = Math.min(o.maxBatchEvents, admission?.maxBatchEvents ?? Infinity);
  const deadlineAt = ctx.arrivedAtMs + o.ackTimeoutMs;
  let prepared: PreparedEvent[] = [];
  let parsedEvents: readonly ({ readonly attributes: { readonly type?: unknown } } | undefined)[] = [];
  try {
    const encoding = checkBodyFraming(req, maxBodyBytes);
    const body = await readBody(req, maxBodyBytes, { timeoutMs: ctx.arrivedAtMs + ctx.requestTimeoutMs - performance.now(), ...(encoding === undefined ? {} : { encoding }), ...(ctx.shutdown === undefined ? {} : { signal: ctx.shutdown }) });
    const bodyAt = ingressChannel.hasSubscribers ? performance.now() : 0;
    refuseRepeatedHeaders(req);
    let parsed: ParsedHttpRequest | { mode: 'batch'; events: readonly (ParsedHttpRequest['events'][number] | undefined)[] };
    let earlier: Violation[] = [];
    try {
      parsed = parseHttpRequest(req.headers, body, { maxBatchEvents, ...(o.limits === undefined ? {} : { limits: o.limits }) });
    } catch (err) {
      // A batch with some malformed events: check the others too, so every bad event is listed.
      if (!(err instanceof BatchViolationsError)) throw err;
      parsed = { mode: 'batch', events: err.partial };
      earlier = ((err.details.violations ?? []) as Violation[]).map((v) => ({ ...v, code: v.code ?? err.code }));
    }
    parsedEvents = parsed.events;
    const batch = parsed.mode === 'batch';
    const traceparent = validTraceparent(req.headers.traceparent);
    // The tracestate travels with its traceparent and is read only when that one is valid (W3C
    // Trace Context §3.1); an invalid one is dropped, not a reason to refuse the events.
    const tracestate = traceparent === undefined ? undefined : validTracestate(req.headers.tracestate);
    // Who may publish what is decided from `type` and `source` before the data is validated
    // (issue 11); the events/s bucket is charged only for requests that may publish at all.
    admission?.admit(parsed.events, batch, (name, value) => {
      const before = res.getHeader(name);
      res.setHeader(name, typeof before === 'string' ? `${before}, ${value}` : value);
    });
    prepared = prepareEvents(parsed.events, deps.codec, { dataschemaBase: o.dataschemaBase, limits: o.limits, maxMessageBytes: o.maxMessageBytes, ...(traceparent === undefined ? {} : { traceparent }), ...(tracestate === undefined ? {} : { tracestate }), ...(deps.tracing?.().enabled === true ? { reserveTraceparent: true } : {}) }, batch, earlier);
    if (prepared.length === 0) {
      sendJson(res, 202, { events: [] });
      return;
    }
    await publish(res, deps, prepared, batch, deadlineAt, ctx.shutdown, bodyAt === 0 ? undefined : { arrivedAt: ctx.arrivedAtMs, bodyAt });
  } catch (err) {
    if (res.headersSent) return; // answered already (the server answered a broken body itself)
    if (isClientAbort(err)) {
      ctx.refusals?.count('aborted', by);
      return;
    }
    if (!(err instanceof GatewayError)) deps.log.error({ err }, 'ingress: unexpected failure');
    else if (!err.retriable) ctx.refusals?.count(`${toProblem(err).status} ${err.code}`, by);
    countRefused(deps, prepared.length > 0 ? prepared.map((p) => p.kind) : parsedEvents.map((e) => kindName(deps, e?.attributes.type)), err instanceof GatewayError && err.retriable ? 'failed' : 'refused');
    // Refused before the body was read whole: the rest of it must not be parsed as a next request.
    const close = !req.complete;
    if (close) req.resume();
    // A full queue took nothing: every event is provably not written.
    const extra = err instanceof GatewayError && err.code === 'CEG_QUEUE_FULL' ? { stored: [], notStored: listed(prepared.map((p) => ({ index: p.index, id: p.id })), prepared.length > 1), unconfirmed: [] } : undefined;
    sendProblem(res, err, { retryAfterS: o.retryAfterS, close, ...(extra === undefined ? {} : { extra }) });
  }
}

/**
 * The `kind` label of an event's `type`: the kind's business name, or `unknown` (bounded: never the
 * partner's text). An internal kind is `unknown` too: it is never accepted over HTTP, and `/metrics`
 * may be readable by partners (`METRICS_AUTH=public`), so its name must not appear there when
 * someone posts its eventId (issue 11, docs/security.md "Internal kinds").
 */
function kindName(deps: IngressDeps, type: unknown): string {
  if (typeof type !== 'string') return 'unknown';
  const kind = deps.codec.catalog.byEventId(type);
  return kind === undefined || kind.internal ? 'unknown' : kind.name;
}

function countRefused(deps: IngressDeps, kinds: readonly string[], outcome: 'refused' | 'failed'): void {
  if (deps.instruments === undefined) return;
  const n = new Map<string, number>();
  for (const k of kinds.length === 0 ? ['unknown'] : kinds) n.set(k, (n.get(k) ?? 0) + 1);
  for (const [k, c] of n) deps.instruments.ingressEvents(k, outcome, c);
}

function listed<T extends { index: number }>(xs: readonly T[], batch: boolean): (T | Omit<T, 'index'>)[] {
  return batch ? [...xs] : xs.map(({ index: _i, ...e }) => e);
}

/** The header of the event's `traceparent` in a record (CloudEvents Kafka binding, binary mode). */
const TRACEPARENT_HEADER = 'ce_traceparent';

/**
 * One producer span per event when tracing is on ("send <topic>", messaging semantic conventions),
 * child of the event's traceparent (the partner's, or the request's `traceparent` header).
 */
function producerSpans(deps: IngressDeps, prepared: readonly PreparedEvent[]): (ActiveSpan | undefined)[] {
  const tracing = deps.tracing?.();
  if (tracing?.enabled !== true) return [];
  return prepared.map((p) => {
    const h = p.record.headers.find(([n]) => n === TRACEPARENT_HEADER);
    const parent = h === undefined ? undefined : Buffer.from(h[1]).toString('latin1');
    return tracing.start(`send ${p.topic}`, 'producer', parent, {
      'messaging.system': 'kafka',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.destination.name': p.topic,
      'messaging.message.id': p.id,
      ...(p.record.key === null ? {} : { 'messaging.kafka.message.key': Buffer.from(p.record.key).toString('utf8') }),
    });
  });
}

/**
 * The record with its `ce_traceparent` set to `traceparent`: the same length as one it had, or the
 * one prepare already counted (PrepareOptions.reserveTraceparent), so the size bounds still hold.
 */
function withTraceparent(record: PreparedEvent['record'], traceparent: string): PreparedEvent['record'] {
  const value = new TextEncoder().encode(traceparent);
  const headers = record.headers.some(([n]) => n === TRACEPARENT_HEADER) ? record.headers.map((h) => (h[0] === TRACEPARENT_HEADER ? ([TRACEPARENT_HEADER, value] as const) : h)) : [...record.headers, [TRACEPARENT_HEADER, value] as const];
  return { ...record, headers };
}

/** One line per 30 s at most for requests the broker did not confirm (they come in bursts during an outage). */
const unconfirmedLines = new LogThrottle(30_000);

/** Counts stored events (`accepted`, with their record bytes) and the others (`failed`) per kind. */
function countAccepted(deps: IngressDeps, prepared: readonly PreparedEvent[], settled: readonly (Settled | undefined)[]): void {
  const m = deps.instruments;
  if (m === undefined) return;
  const per = new Map<string, { ok: number; bytes: number; failed: number }>();
  prepared.forEach((p, i) => {
    let c = per.get(p.kind);
    if (c === undefined) per.set(p.kind, (c = { ok: 0, bytes: 0, failed: 0 }));
    if (settled[i]?.ok === true) {
      c.ok++;
      c.bytes += p.bytes;
    } else c.failed++;
  });
  for (const [kind, c] of per) {
    m.ingressEvents(kind, 'accepted', c.ok, c.bytes);
    m.ingressEvents(kind, 'failed', c.failed);
  }
}

function endSpans(spans: readonly (ActiveSpan | undefined)[], results: readonly Settled[]): void {
  results.forEach((r, i) => {
    const span = spans[i];
    if (span === undefined) return;
    if (r.ok) span.set({ 'messaging.destination.partition.id': String(r.position.partition), 'messaging.kafka.offset': Number(r.position.offset) });
    span.end(r.ok ? undefined : r.error);
  });
}

/** True when each of the `count` records settled stored. */
function allStored(settled: readonly (Settled | undefined)[], count: number): boolean {
  for (let i = 0; i < count; i++) if (settled[i]?.ok !== true) return false;
  return true;
}

/** Hands the records to the publisher and answers when all are confirmed or the deadline passes. */
async function publish(res: ServerResponse, deps: IngressDeps, prepared: readonly PreparedEvent[], batch: boolean, deadlineAt: number, shutdown?: AbortSignal, probe?: { arrivedAt: number; bodyAt: number }): Promise<void> {
  const o = deps.options;
  const preparedAt = probe === undefined ? 0 : performance.now();
  const remaining = deadlineAt - performance.now();
  if (remaining <= 0) {
    // Body and validation used the whole deadline: nothing is sent, so nothing is stored.
    const err = new GatewayError('CEG_DELIVERY_TIMEOUT', `the request took its whole deadline (${o.ackTimeoutMs} ms) before the events could be sent; nothing was produced, retry the request`, { retriable: true });
    countRefused(deps, prepared.map((p) => p.kind), 'failed');
    sendProblem(res, err, { retryAfterS: o.retryAfterS, extra: { stored: [], notStored: listed(prepared.map((p) => ({ index: p.index, id: p.id })), batch), unconfirmed: [] } });
    return;
  }
  const spans = producerSpans(deps, prepared);
  // A prepared event is already the publisher's item (topic, record, bytes): no copy unless a span changes the record.
  const items = spans.length === 0 ? prepared : prepared.map((p, i) => ({ topic: p.topic, record: spans[i] === undefined ? p.record : withTraceparent(p.record, spans[i].traceparent), bytes: p.bytes }));
  const sent = deps.publisher.sendAll(items);
  // One promise for the request (issue 14); each span ends with its record's outcome.
  // `done` never rejects (record-publisher.ts): it resolves once every record has settled.
  if (spans.length > 0) neverRejects(sent.done.then((results) => endSpans(spans, results)));
  const settled = sent.results;
  // The deadline, or a shutdown past its grace period, withdraws what was not sent and ends the
  // wait: the answer lists each event's fate. One timer and one promise per request; the shutdown
  // listener is shared by every request waiting (src/core/abort-fanout.ts).
  let timer: NodeJS.Timeout | undefined;
  let unwatch: (() => void) | undefined;
  const timedOut = await new Promise<boolean>((resolve) => {
    const giveUp = (reason: GatewayError): void => {
      sent.withdraw(reason); // withdrawals settle their records synchronously
      resolve(true);
    };
    timer = setTimeout(() => giveUp(new GatewayError('CEG_DELIVERY_TIMEOUT', 'deadline', { retriable: true })), remaining);
    if (shutdown !== undefined) unwatch = onAbort(shutdown, () => giveUp(new GatewayError('CEG_CLOSED', 'shutting down', { retriable: true })));
    neverRejects(sent.done.then(() => resolve(false)));
  });
  const ackedAt = probe === undefined ? 0 : performance.now();
  clearTimeout(timer);
  unwatch?.();
  if (timedOut) await new Promise<void>((r) => setImmediate(r));

  countAccepted(deps, prepared, settled);
  if (!timedOut && allStored(settled, prepared.length)) {
    // The common answer, built in one pass: one object per event (issue 14).
    const events = new Array<{ id: string; topic: string; partition: number; offset: string }>(prepared.length);
    for (let i = 0; i < prepared.length; i++) {
      const { position } = settled[i] as Extract<Settled, { ok: true }>;
      events[i] = { id: prepared[i]!.id, topic: position.topic, partition: position.partition, offset: position.offset.toString() };
    }
    sendJson(res, 202, { events });
    if (probe !== undefined) ingressChannel.publish({ events: prepared.length, arrivedAt: probe.arrivedAt, bodyAt: probe.bodyAt, preparedAt, ackedAt, answeredAt: performance.now() } satisfies IngressStages);
    return;
  }
  const stored = prepared.flatMap((p, i) => {
    const s = settled[i];
    return s?.ok ? [{ index: p.index, id: p.id, topic: s.position.topic, partition: s.position.partition, offset: s.position.offset.toString() }] : [];
  });
  const notStored: { index: number; id: string }[] = [];
  const unconfirmed: { index: number; id: string }[] = [];
  prepared.forEach((p, i) => {
    const s = settled[i];
    if (s?.ok === true) return;
    (s !== undefined && deliveryFate(s.error) === 'notStored' ? notStored : unconfirmed).push({ index: p.index, id: p.id });
  });
  // The broker's own refusal names the cause; a deadline is only the cause when nothing else is known.
  const failure = settled.find((s): s is { ok: false; error: GatewayError } => s !== undefined && !s.ok && s.error.code !== 'CEG_DELIVERY_TIMEOUT')?.error;
  unconfirmedLines.run((repeated) => deps.log.warn({ timedOut, stored: stored.length, notStored: notStored.length, unconfirmed: unconfirmed.length, code: failure?.code, repeated }, 'ingress: broker did not confirm every event (later requests within 30 s are counted in `repeated` of the next line)'));
  const err =
    failure === undefined
      ? new GatewayError(
          'CEG_DELIVERY_TIMEOUT',
          `the broker did not confirm every event within ${o.ackTimeoutMs} ms of the request's arrival; retry the events listed as notStored or unconfirmed with the same id (unconfirmed ones may be stored already: consumers drop duplicates by source+id)`,
          { retriable: true },
        )
      : failure;
  sendProblem(res, err, { retryAfterS: o.retryAfterS, extra: { stored: listed(stored, batch), notStored: listed(notStored, batch), unconfirmed: listed(unconfirmed, batch) } });
}
