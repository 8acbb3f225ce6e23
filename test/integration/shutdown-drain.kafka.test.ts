/**
 * Issue 15 "A shutdown that drains", on the real gateway process (`ce-gateway serve`, run with
 * tsx) and the stack's Kafka: keep-alive clients keep posting events, the process gets SIGTERM
 * under that load, and
 * - it exits with code 0 within SHUTDOWN_TIMEOUT_MS (its default, 10 s) — however the clients behave;
 * - every event answered 202 is on Kafka;
 * - every request got an answer or a closed connection before it was read: an event whose request
 *   got no answer (connection closed or refused) or a 503 that stored nothing is not on Kafka;
 * - keep-alive clients were told to go: a request in progress at SIGTERM (its body still arriving)
 *   is answered 202 with `Connection: close`, and every request sent after SIGTERM was handled is
 *   answered with it.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { transportOn } from '../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../helpers/ports.js';
import { serveEnv } from '../helpers/serve-env.js';
import { idsOnTopic } from '../helpers/topic-ids.js';
import { loadCatalog } from '../../src/catalog/index.js';
import type { Transport } from '../../src/transport/port.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const CLIENTS = 8;
const catalog = catalogWithOwnTopics(uniqueName('drain'));
let transport: Transport;

beforeAll(() => {
  transport = transportOn({ brokers: stackEnv().kafkaBrokers, clientId: uniqueName('drain-check') });
});
afterAll(async () => {
  await transport?.close();
  catalog.cleanup();
});

interface Exchange {
  readonly id: string;
  readonly sentAtMs: number;
  readonly doneAtMs: number;
  readonly status?: number;
  readonly connection?: string;
  readonly code?: string;
  readonly stored?: readonly { id: string }[];
  readonly error?: string;
}

/** `hold`: the body's second half is sent only once it settles (a request in progress, its body still arriving). */
function post(agent: Agent, port: number, id: string, seq: number, hold?: Promise<unknown>): Promise<Exchange> {
  const body = JSON.stringify(structuredPriceEvent({ id }, priceLoaded('EUR/USD', 'M1', String(22031500 + (seq % 90)))));
  const sentAtMs = performance.now();
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/events', method: 'POST', agent, headers: { 'content-type': 'application/cloudevents+json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const parsed = (() => {
          try {
            return JSON.parse(text) as { code?: string; stored?: { id: string }[] };
          } catch {
            return {};
          }
        })();
        resolve({ id, sentAtMs, doneAtMs: performance.now(), status: res.statusCode, connection: res.headers.connection, code: parsed.code, stored: parsed.stored });
      });
      res.on('error', (err) => resolve({ id, sentAtMs, doneAtMs: performance.now(), error: err.message }));
    });
    req.on('error', (err: Error & { code?: string }) => resolve({ id, sentAtMs, doneAtMs: performance.now(), error: err.code ?? err.message }));
    if (hold === undefined) req.end(body);
    else {
      const half = Math.floor(body.length / 2);
      req.write(body.slice(0, half));
      const rest = (): void => void req.end(body.slice(half));
      void hold.then(rest, rest);
    }
  });
}

describe('SIGTERM under load with keep-alive clients (issue 15)', () => {
  it('exits within SHUTDOWN_TIMEOUT_MS; every 202 is on Kafka; no request is read and left unanswered', async () => {
    const port = await freePort();
    const child: ChildProcess = spawn(process.execPath, [...CLI_ENTRY, 'serve'], {
      env: serveEnv({ catalogDir: catalog.dir, subscriptionsTopic: uniqueName('drain-defs'), port }, { SHUTDOWN_TIMEOUT_MS: '' }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; atMs: number }>((r) => child.once('exit', (code) => r({ code, atMs: performance.now() })));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitFor('the gateway to be ready', async () => child.exitCode === null && (await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false)), 90_000, 200).catch((err: unknown) => {
        throw new Error(`${String(err)}; stderr: ${stderr}`);
      });
      const topic = loadCatalog(catalog.dir).byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
      const run = uniqueName('d');
      const exchanges: Exchange[] = [];
      let gone = false;
      void exited.then(() => (gone = true));
      // Keep-alive clients that keep sending, one request at a time each, until the process is gone.
      const clients = Array.from({ length: CLIENTS }, async (_, c) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        let seq = 0;
        while (!gone) {
          const x = await post(agent, port, `${run}-${c}-${seq}`, seq);
          seq++;
          exchanges.push(x);
          if (x.error !== undefined) await new Promise((r) => setTimeout(r, 20)); // refused: try again shortly, as a client would
        }
        agent.destroy();
      });
      await new Promise((r) => setTimeout(r, 2000));
      const okBefore = exchanges.filter((x) => x.status === 202).length;
      expect(okBefore).toBeGreaterThan(20);
      // One request surely in progress at SIGTERM: its body's second half is sent only once the
      // gateway has logged 'shutting down' (whether the keep-alive clients' requests are caught
      // mid-way is a matter of timing: CI saw every answer after SIGTERM already on its way).
      const shuttingDown = waitFor('the shutting down line', () => stderr.includes('"msg":"shutting down"'), 10_000, 5);
      const slowAgent = new Agent({ keepAlive: true, maxSockets: 1 });
      const inProgress = post(slowAgent, port, `${run}-in-progress`, 0, shuttingDown);
      await new Promise((r) => setTimeout(r, 100)); // its headers and first half are read
      const termAt = performance.now();
      const wallAtTerm = Date.now();
      child.kill('SIGTERM');
      const inProgressAnswer = await inProgress;
      slowAgent.destroy();
      const exit = await exited;
      await Promise.all(clients);
      const tookMs = exit.atMs - termAt;
      expect(exit.code, stderr.slice(-2000)).toBe(0);
      expect(tookMs).toBeLessThan(10_000);

      const onKafka = await idsOnTopic(transport, topic, 'drain-read');
      const accepted = exchanges.filter((x) => x.status === 202);
      const unanswered = exchanges.filter((x) => x.error !== undefined);
      const closedNothingStored = exchanges.filter((x) => x.status === 503 && (x.stored ?? []).length === 0);
      const lost = accepted.filter((x) => !onKafka.has(x.id));
      const readButUnanswered = [...unanswered, ...closedNothingStored].filter((x) => onKafka.has(x.id));
      const afterTerm = exchanges.filter((x) => x.doneAtMs >= termAt && x.status !== undefined);
      // Printed for the record (issue note): how the drain went.
      console.log(JSON.stringify({ tookMs: Math.round(tookMs), accepted: accepted.length, unanswered: unanswered.length, refused503: closedNothingStored.length, answeredAfterTerm: afterTerm.length, closeHeaders: afterTerm.filter((x) => x.connection === 'close').length }));
      expect(lost.map((x) => x.id)).toEqual([]);
      expect(readButUnanswered.map((x) => x.id)).toEqual([]);
      // A request in progress at SIGTERM is answered, with `Connection: close` (an answer already on
      // its way cannot change its headers: its connection is ended after it), and its event stored.
      expect(inProgressAnswer).toMatchObject({ status: 202, connection: 'close' });
      expect(onKafka.has(inProgressAnswer.id)).toBe(true);
      // "Sent after SIGTERM" counts from when the gateway handled the signal (its 'shutting down'
      // line; pino's `time` is the shared wall clock), not from the kill() call: a request that
      // reached it in between is rightly answered as before (CI saw one, 13 ms after kill()).
      const noticed = stderr.split('\n').flatMap((l) => {
        try {
          const j = JSON.parse(l) as { msg?: string; time?: number };
          return j.msg === 'shutting down' && typeof j.time === 'number' ? [termAt + (j.time - wallAtTerm)] : [];
        } catch {
          return [];
        }
      });
      expect(noticed, 'the gateway logs when it handles SIGTERM').toHaveLength(1);
      expect(noticed[0]!).toBeGreaterThanOrEqual(termAt - 2); // whole ms of the wall clock on both sides
      expect(afterTerm.filter((x) => x.sentAtMs >= noticed[0]! && x.connection !== 'close')).toEqual([]);
      // Only connection-level failures: refused (listener closed) or closed before an answer.
      for (const x of unanswered) expect(x.error).toMatch(/ECONNREFUSED|ECONNRESET|socket hang up|EPIPE/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 180_000);
});
