/**
 * One push attempt against a real HTTP server on loopback (`send` in
 * src/connectors/sinks/webhook/deliver.ts): the status, the headers and the body's first KiB as
 * the excerpt; a body past 64 KiB is not read to its end; timeouts, refused connections and a
 * stopped subscription are failures with a reason, never a rejection. Spec: issue 8 ("Outcomes",
 * "a response excerpt (≤ 1 KiB)").
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PinnedAgents, classify, retryAfterMs, send } from '../../../src/connectors/sinks/webhook/deliver.js';
import type { AttemptRequest, RawAnswer } from '../../../src/connectors/sinks/webhook/deliver.js';
import { checkTargetUrl, parseAllowList } from '../../../src/connectors/sinks/webhook/target.js';
import { createWebhookSink } from '../../../src/connectors/sinks/webhook/sink.js';
import { REDACTION_MARGIN_BYTES, redactedExcerpt } from '../../../src/connectors/sinks/webhook/redact.js';
import { silentLogger } from '../../../src/observability/index.js';
import type { ResolvedTarget } from '../../../src/connectors/sinks/webhook/target.js';

type Route = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

let server: Server;
let port = 0;
const routes = new Map<string, Route>();
/** Bytes of an answer's start an attempt keeps: the 1 KiB excerpt and the redaction margin. */
const KEPT = 1024 + REDACTION_MARGIN_BYTES;
/** Bytes the /endless route managed to write before the client went away. */
let endlessWritten = 0;
let endlessClosed: Promise<void> = Promise.resolve();

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => routes.get(new URL(req.url ?? '/', 'http://x').pathname)?.(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const allow = parseAllowList('127.0.0.1');
const target = (path: string, p = port): ResolvedTarget => ({ ...checkTargetUrl(`http://127.0.0.1:${p}${path}`, allow), address: '127.0.0.1', family: 4 });
const attempt = (path: string, extra: Partial<AttemptRequest> = {}): AttemptRequest => ({ target: target(path), method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from('{"a":1}'), timeoutMs: 2_000, retryAfterCapMs: 60_000, ...extra });
const answered = (a: RawAnswer): Extract<RawAnswer, { ok: true }> => {
  if (!a.ok) throw new Error(`expected an answer, got: ${a.reason}`);
  return a;
};

describe('send: one attempt against a loopback sink', () => {
  const agents = new PinnedAgents();
  afterAll(() => agents.close());

  it('hands over the body and headers with content-length, and reads status, headers and an empty body', async () => {
    let seen: { body: string; length: string | undefined; type: string | undefined } | undefined;
    routes.set('/ok', (req, res, body) => {
      seen = { body: body.toString(), length: req.headers['content-length'], type: req.headers['content-type'] };
      res.writeHead(204, { 'retry-after': '7', 'x-two': ['a', 'b'] }).end();
    });
    const a = answered(await send(agents, attempt('/ok')));
    expect(a.status).toBe(204);
    expect(a.bodyStart).toBe('');
    expect(a.header('retry-after')).toBe('7');
    expect(a.header('x-two')).toBe('a');
    expect(a.header('absent')).toBeUndefined();
    expect(seen).toEqual({ body: '{"a":1}', length: '7', type: 'application/json' });
  });

  it('keeps the first KiB of any answer body as the excerpt, plus the margin its redaction needs, cut at character boundaries', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 900 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 12 }), async (text, parts, copies) => {
        const body = Buffer.from(text.repeat(copies), 'utf8');
        routes.set('/text', (_req, res) => {
          res.writeHead(500);
          // Several writes, so the excerpt is assembled from several chunks.
          const step = Math.ceil(body.length / parts) || 1;
          for (let at = 0; at < body.length; at += step) res.write(body.subarray(at, at + step));
          res.end();
        });
        const a = answered(await send(agents, attempt('/text')));
        expect(a.status).toBe(500);
        const whole = body.toString('utf8');
        expect(Buffer.byteLength(a.bodyStart)).toBeLessThanOrEqual(KEPT);
        expect(whole.startsWith(a.bodyStart)).toBe(true);
        if (body.length <= KEPT) expect(a.bodyStart).toBe(whole);
        else expect(Buffer.byteLength(a.bodyStart)).toBeGreaterThan(KEPT - 4);
        const excerpt = redactedExcerpt(a.bodyStart, []);
        expect(Buffer.byteLength(excerpt)).toBeLessThanOrEqual(1024);
        expect(whole.startsWith(excerpt)).toBe(true);
        if (body.length <= 1024) expect(excerpt).toBe(whole);
        else expect(Buffer.byteLength(excerpt)).toBeGreaterThan(1024 - 4);
      }),
      { numRuns: 30 },
    );
  });

  it("keeps nothing of a delivery's 2xx body (never an excerpt), but keeps a handshake's, which may be a refusal", async () => {
    const body = 'ok '.repeat(4000); // past the kept bytes, in several chunks
    routes.set('/big-ok', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(body);
    });
    const delivered = answered(await send(agents, attempt('/big-ok')));
    expect(delivered).toMatchObject({ status: 200, bodyStart: '' });
    const handshake = answered(await send(agents, attempt('/big-ok', { method: 'OPTIONS', body: undefined })));
    expect(handshake.status).toBe(200);
    expect(handshake.bodyStart).toBe(body.slice(0, KEPT));
  });

  it('stops reading a body past 64 KiB: the answer counts, the rest is dropped with the connection', async () => {
    routes.set('/endless', (_req, res) => {
      endlessWritten = 0;
      endlessClosed = new Promise<void>((done) => {
        res.on('close', () => done());
        const chunk = Buffer.alloc(16 * 1024, 0x61);
        const pump = (): void => {
          // 64 MiB at most, written only as fast as the client reads.
          while (endlessWritten < 64 * 1024 * 1024 && !res.destroyed) {
            endlessWritten += chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        res.writeHead(503, { 'retry-after': '2' });
        pump();
      });
    });
    const a = answered(await send(agents, attempt('/endless')));
    expect(a.status).toBe(503);
    expect(a.header('retry-after')).toBe('2');
    expect(a.bodyStart).toBe('a'.repeat(KEPT));
    await endlessClosed;
    expect(endlessWritten).toBeLessThan(16 * 1024 * 1024);
  });

  it('no answer within the timeout, a refused connection and a stopped subscription are failures with a reason', async () => {
    routes.set('/silent', () => undefined); // never answers
    const slow = await send(agents, attempt('/silent', { timeoutMs: 200 }));
    expect(slow).toMatchObject({ ok: false, aborted: false });
    expect(!slow.ok && slow.reason).toMatch(/^no answer within 200 ms \(UND_ERR_HEADERS_TIMEOUT\)$/);

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = await send(agents, { ...attempt('/'), target: target('/', closedPort) });
    expect(refused).toMatchObject({ ok: false, aborted: false });
    expect(!refused.ok && refused.reason).toMatch(/^request failed: .*ECONNREFUSED/);

    const stop = new AbortController();
    stop.abort(new Error('stopping'));
    expect(await send(agents, attempt('/ok', { signal: stop.signal }))).toEqual({ ok: false, reason: 'subscription stopping', aborted: true });
  });

  it('an answer whose body trickles in fails once timeoutMs has passed since the send (undici times only the pauses)', async () => {
    let writes = 0;
    routes.set('/trickle', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const tick = setInterval(() => {
        if (res.destroyed || ++writes > 100) {
          clearInterval(tick);
          res.end();
          return;
        }
        res.write('x');
      }, 50);
      res.on('close', () => clearInterval(tick));
    });
    const a = await send(agents, attempt('/trickle', { timeoutMs: 300 }));
    expect(a).toMatchObject({ ok: false, aborted: false });
    expect(!a.ok && a.reason).toMatch(/^sink answered 200, then its body was not complete within 300 ms \(CEG_BODY_DEADLINE\)$/);
    // A delivery's 2xx body is not kept: no excerpt from it, even when it fails.
    expect(a).not.toHaveProperty('bodyStart');
    // Cut off after about 300 ms of 50 ms writes, not after the whole 5 s body.
    expect(writes).toBeLessThan(50);
  });

  it('an answer whose body stalls or whose socket closes mid-body keeps its status and the bytes received (F8)', async () => {
    routes.set('/stall', (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.write('partial error: db down');
      // never ends: the body deadline (bodyTimeout) cuts it
    });
    routes.set('/cut', (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain', 'content-length': '1000' });
      res.write('half an answer', () => res.socket?.destroy());
    });
    const stalled = await send(agents, attempt('/stall', { timeoutMs: 300 }));
    expect(stalled).toMatchObject({ ok: false, aborted: false, status: 500, bodyStart: 'partial error: db down' });
    expect(!stalled.ok && stalled.reason).toMatch(/^sink answered 500, then its body was not complete within 300 ms \(UND_ERR_BODY_TIMEOUT\)$/);
    const cut = await send(agents, attempt('/cut'));
    expect(cut).toMatchObject({ ok: false, aborted: false, status: 503, bodyStart: 'half an answer' });
    expect(!cut.ok && cut.reason).toMatch(/^sink answered 503, then the body failed: /);
    // Through the sink: the retry outcome's failure carries them (the dead letter's dlq_last_status and excerpt).
    const sink = createWebhookSink(
      { url: `http://127.0.0.1:${port}/stall`, contentMode: 'binary', data: 'json', handshake: false, secrets: [], headers: {}, timeoutMs: 300, retryAfterCapMs: 1000, rateLimit: null, concurrency: 1 },
      { log: silentLogger(), allow, origin: 'gateway.test', ctx: { markGone: () => undefined, share: () => 1 } },
    );
    try {
      const out = await sink.handler({ attributes: { specversion: '1.0', id: 'f8', source: '/t', type: 't.x' }, data: { kind: 'json', value: {} } }, { subscription: 's', topic: 't', partition: 0, offset: 0n, attempt: 1 });
      expect(out).toMatchObject({ kind: 'retry', failure: { status: 500, excerpt: 'partial error: db down' } });
    } finally {
      await sink.close();
    }
  });

  it('a connect that hangs (the sink\'s accept queue is full) fails at timeoutMs, not at undici\'s 10 s', async () => {
    // A listener that never accepts: with its backlog full, further SYNs go unanswered.
    const py = spawn('python3', ['-c', 'import socket,time\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)']);
    try {
      const hungPort = await new Promise<number>((resolve, reject) => {
        py.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
        py.once('error', reject);
      });
      const fillers: Socket[] = [];
      for (let i = 0; i < 4; i++) fillers.push(connect(hungPort, '127.0.0.1').on('error', () => undefined));
      await new Promise((r) => setTimeout(r, 200));
      const own = new PinnedAgents();
      const t0 = performance.now();
      const a = await send(own, { ...attempt('/', { timeoutMs: 300 }), target: target('/', hungPort) });
      const tookMs = performance.now() - t0;
      await own.close();
      for (const f of fillers) f.destroy();
      expect(a).toMatchObject({ ok: false, aborted: false });
      expect(!a.ok && a.reason).toMatch(/^no answer within 300 ms \(UND_ERR_CONNECT_TIMEOUT\)$/);
      // Behavioural bound: the agent's connect timeout is the attempt's, not 10 s.
      expect(tookMs).toBeLessThan(5_000);
    } finally {
      py.kill();
    }
  });

  it('an attempt in flight when the agents abort settles as aborted', async () => {
    const own = new PinnedAgents();
    routes.set('/hang', () => undefined);
    const stop = new AbortController();
    const pending = send(own, attempt('/hang', { signal: stop.signal, timeoutMs: 10_000 }));
    await new Promise((r) => setTimeout(r, 50));
    stop.abort(new Error('stopping'));
    own.abortAll(stop.signal.reason);
    const a = await pending;
    expect(a).toMatchObject({ ok: false, aborted: true });
  });
});

describe('Retry-After (RFC 9110 §10.2.3) and the policy cap', () => {
  it('delay-seconds of any length count; a value past any cap waits the cap, never retries early', () => {
    // A tester's find: more than 10 digits fell through to Date.parse (NaN) and the sink's wait was ignored.
    fc.assert(fc.property(fc.stringMatching(/^[1-9]\d{0,400}$/), fc.integer({ min: 1, max: 3_600_000 }), (digits, capMs) => {
      const after = retryAfterMs(digits);
      expect(after).toBe(Number(digits) * 1000);
      const r = classify(503, '', digits, capMs);
      expect(r.kind).toBe('retry');
      expect(r.kind === 'retry' ? r.retryAfterMs : undefined).toBe(Math.min(Number(digits) * 1000, capMs));
    }));
    expect(classify(429, '', '99999999999', 5000)).toMatchObject({ kind: 'retry', retryAfterMs: 5000 });
    expect(classify(429, '', '9'.repeat(400), 5000)).toMatchObject({ kind: 'retry', retryAfterMs: 5000, reason: "sink answered 429 (Retry-After beyond any cap, waiting the policy's cap of 5 s)" });
    // F9: a huge delay-seconds was written "1e+23 s"; now a plain figure or "beyond any cap", and the wait granted.
    expect(classify(503, '', '99999999999999999999999', 60_000)).toMatchObject({ retryAfterMs: 60_000, reason: "sink answered 503 (Retry-After beyond any cap, waiting the policy's cap of 60 s)" });
    expect(classify(503, '', '3600', 60_000)).toMatchObject({ retryAfterMs: 60_000, reason: "sink answered 503 (Retry-After 3600 s, waiting the policy's cap of 60 s)" });
    expect(classify(503, '', '7', 60_000)).toMatchObject({ retryAfterMs: 7000, reason: 'sink answered 503 (Retry-After 7 s)' });
  });

  it('an HTTP date counts from now; anything else is no Retry-After', () => {
    const now = Date.UTC(2026, 11, 4, 7, 0, 0);
    expect(retryAfterMs('Fri, 04 Dec 2026 07:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Fri, 04 Dec 2026 06:00:00 GMT', now)).toBe(0);
    for (const bad of ['-1', '1.5', 'soon', '', '0x10']) expect(retryAfterMs(bad, now), bad).toBeUndefined();
  });
});
