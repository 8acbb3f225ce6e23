/**
 * `GATEWAY_WORKERS=2` (issue 14: ingress on more than one core; src/cli/workers.ts) on the real
 * gateway process and the stack's Kafka:
 * - both workers serve the one port: answers over new connections come from `<INSTANCE_ID>.w1`
 *   and `.w2` (the `instance` of a subscription's status);
 * - every event answered 202 is on Kafka, and `GET /metrics`, whichever worker answers it, counts
 *   all of them (the primary aggregates the workers' registries), before and after a worker is
 *   replaced (a dead worker's counters stay in the sums);
 * - a worker killed with SIGKILL is replaced; the replacement joins the port once ready, so
 *   `/readyz` never answers 503 meanwhile;
 * - SIGTERM to the primary: every worker drains, the primary exits 0 and no worker is left;
 * - OPS_PORT: one listening socket for the whole process group (the primary's: node:cluster shares
 *   the workers' listen), whose /metrics are the aggregate and /readyz the API port's answer
 *   (without a key and over plain HTTP, the API port's own settings aside); closed at the end.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { Agent, request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
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

const EVENTS = 40;
const INSTANCE = 'workers-test';
const catalog = catalogWithOwnTopics(uniqueName('workers'));
let transport: Transport;

beforeAll(() => {
  transport = transportOn({ brokers: stackEnv().kafkaBrokers, clientId: uniqueName('workers-check') });
});
afterAll(async () => {
  await transport?.close();
  catalog.cleanup();
});

/** The gateway workers of the primary `pid`: its children running the CLI (tsx also starts an esbuild child). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc').flatMap((d) => {
    if (!/^\d+$/.test(d)) return [];
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) return [];
      // A worker runs the primary's script (CLI_ENTRY's last element: src/cli/main.ts or dist/cli/main.js).
      return readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(CLI_ENTRY[CLI_ENTRY.length - 1]!) ? [Number(d)] : [];
    } catch {
      return [];
    }
  });
}

/**
 * The processes holding a listening TCP socket on `port` (any address), from /proc/net/tcp{,6}
 * (state 0A) and the socket inodes of the processes' file descriptors.
 */
function listenersOn(port: number): number[] {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set(
    ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((f) =>
      readFileSync(f, 'utf8').split('\n').slice(1).map((l) => l.trim().split(/\s+/)).filter((c) => c[1]?.endsWith(`:${hex}`) && c[3] === '0A').map((c) => c[9]!),
    ),
  );
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      return readdirSync(`/proc/${d}/fd`).some((fd) => {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${d}/fd/${fd}`));
        return m !== null && inodes.has(m[1]!);
      }) ? [Number(d)] : [];
    } catch {
      return [];
    }
  });
}

/** One request on a connection of its own (so the primary hands it to the next worker), JSON in and out. */
function call(port: number, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; json: unknown; text: string; headers: IncomingHttpHeaders }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const agent = new Agent({ keepAlive: false });
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent, headers: payload === undefined ? {} : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, json, text, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `ce_gateway_ingress_events_total{outcome="accepted"}` summed over kinds, from the text format. */
function acceptedIn(metrics: string): number {
  let n = 0;
  for (const m of metrics.matchAll(/^ce_gateway_ingress_events_total\{([^}]*)\} (\S+)$/gm)) if (m[1]!.includes('outcome="accepted"')) n += Number(m[2]);
  return n;
}

describe('GATEWAY_WORKERS=2: one port, two gateway processes (issue 14)', () => {
  it('both serve; every 202 is on Kafka and in /metrics from either; a killed worker is replaced; SIGTERM drains all and exits 0', async () => {
    const port = await freePort();
    let opsPort = await freePort();
    while (opsPort === port) opsPort = await freePort();
    const child: ChildProcess = spawn(process.execPath, [...CLI_ENTRY, 'serve'], {
      env: serveEnv({ catalogDir: catalog.dir, subscriptionsTopic: uniqueName('workers-defs'), port }, { INSTANCE_ID: INSTANCE, GATEWAY_WORKERS: '2', OPS_PORT: String(opsPort) }),
      stdio: ['ignore', 'ignore', 'pipe'],
      // A process group of its own, so the stop below can signal the whole group, as systemd
      // (KillMode=control-group) and `tini -g` do.
      detached: true,
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const primary = child.pid!;
    try {
      // Ready on both: /readyz answers 200 four times in a row over new connections (round-robin).
      await waitFor('both workers ready', async () => {
        if (child.exitCode !== null) throw new Error(`the gateway exited: ${stderr.slice(-2000)}`);
        for (let i = 0; i < 4; i++) if ((await call(port, 'GET', '/readyz').catch(() => ({ status: 0 }))).status !== 200) return false;
        return true;
      }, 120_000, 250);
      const workers = childrenOf(primary);
      expect(workers).toHaveLength(2);

      // Both workers answer on the one port: a subscription's status names the process that answered.
      const sub = uniqueName('wsub');
      const created = await call(port, 'POST', '/subscriptions', { name: sub, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
      expect(created.status, created.text).toBe(201);
      const answeredBy = new Set<string>();
      await waitFor('status answers from both workers', async () => {
        const r = await call(port, 'GET', `/subscriptions/${sub}/status`);
        if (r.status === 200) answeredBy.add((r.json as { instance: string }).instance);
        return answeredBy.size >= 2;
      }, 30_000, 20);
      expect([...answeredBy].sort()).toEqual([`${INSTANCE}.w1`, `${INSTANCE}.w2`]);

      // Events over new connections, so they spread over the workers.
      const run = uniqueName('w');
      const ids = Array.from({ length: EVENTS }, (_, i) => `${run}-${i}`);
      const answers = await Promise.all(ids.map((id, i) => call(port, 'POST', '/events', structuredPriceEvent({ id }, priceLoaded('EUR/USD', 'M1', String(22031500 + (i % 90)))), 'application/cloudevents+json')));
      expect(answers.map((a) => a.status)).toEqual(ids.map(() => 202));
      const topic = loadCatalog(catalog.dir).byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
      const onKafka = await idsOnTopic(transport, topic, 'workers-read');
      expect(ids.filter((id) => !onKafka.has(id))).toEqual([]);
      // Each scrape reaches one worker (new connections, round-robin); each counts every worker's events.
      const everyScrapeCountsAll = async (): Promise<void> => {
        for (let i = 0; i < 4; i++) {
          const m = await call(port, 'GET', '/metrics');
          expect(m.status).toBe(200);
          expect(acceptedIn(m.text)).toBe(EVENTS);
          expect(m.text).toMatch(/^ce_gateway_ready 1$/m);
        }
      };
      await everyScrapeCountsAll();

      // OPS_PORT: one listening socket for the process group, held by the primary (the workers'
      // listen joins it); every scrape there counts all workers' events, as on the API port.
      expect(listenersOn(opsPort)).toEqual([primary]);
      for (let i = 0; i < 4; i++) {
        const m = await call(opsPort, 'GET', '/metrics');
        expect(m.status).toBe(200);
        expect(acceptedIn(m.text)).toBe(EVENTS);
        expect(m.text).toMatch(/^ce_gateway_ready 1$/m);
        const [api, ops] = await Promise.all([call(port, 'GET', '/readyz'), call(opsPort, 'GET', '/readyz')]);
        expect([ops.status, ops.json]).toEqual([api.status, api.json]);
      }
      expect((await call(opsPort, 'GET', '/events')).status).toBe(404);

      // A worker killed outright is replaced; the gateway is ready again on two workers.
      process.kill(workers[0]!, 'SIGKILL');
      const replaced = await waitFor('a new worker', () => {
        const now = childrenOf(primary);
        return now.length === 2 && !now.includes(workers[0]!) ? now : false;
      }, 30_000, 100);
      expect(replaced).toContain(workers[1]!);
      // The replacement (worker 3) serves: it answers a status (so it listens and handles signals).
      // Until then it does not take connections (it joins once ready), so /readyz, asked over new
      // connections all the while, never answers 503 from a worker still starting.
      const readyAnswers: number[] = [];
      let polls = 0;
      await waitFor('the new worker answering', async () => {
        // Every other poll only: a fixed readyz-then-status pair would pin each to one worker (round-robin).
        if (polls++ % 2 === 0) readyAnswers.push((await call(port, 'GET', '/readyz').catch(() => ({ status: 0 }))).status);
        const r = await call(port, 'GET', `/subscriptions/${sub}/status`).catch(() => ({ status: 0, json: undefined }));
        return r.status === 200 && (r.json as { instance: string }).instance === `${INSTANCE}.w3`;
      }, 60_000, 20);
      expect(readyAnswers.filter((st) => st === 200).length).toBeGreaterThan(0);
      // Neither a 503 nor a failed connection (0): the survivor took every connection meanwhile.
      expect(readyAnswers.filter((st) => st !== 200)).toEqual([]);
      expect((await call(port, 'GET', '/readyz')).status).toBe(200);
      // The killed worker's counters stay in the sums (as of the last scrape it answered, above):
      // the pod's counters never go down, which Prometheus would read as a reset.
      await everyScrapeCountsAll();
      expect(stderr).toMatch(/"joins":"when ready"[^\n]*"msg":"worker started"/);

      // A pull cursor verifies on every worker, the replacement too: without SUBSCRIPTION_SECRETS_KEY
      // the cursor key is random per run, and the primary hands its workers one (src/cli/workers.ts).
      const pulled = await call(port, 'GET', `/subscriptions/${sub}/events?max=5`);
      expect(pulled.status, pulled.text).toBe(200);
      const cursor = pulled.headers['ce-gateway-cursor'];
      expect(cursor).toMatch(/^c1\./);
      for (let i = 0; i < 4; i++) {
        const committed = await call(port, 'POST', `/subscriptions/${sub}/cursors`, { cursor });
        expect(committed.status, committed.text).toBe(204);
      }
      expect(stderr).toContain('a worker died; starting another');

      // SIGTERM to the whole process group: each worker gets it twice (from the group kill and
      // from the primary), drains once (its own 'shutting down') and exits 0 — the second signal
      // does not cut its drain — then the primary exits 0.
      process.kill(-primary, 'SIGTERM');
      const code = await exited;
      expect(code, stderr.slice(-3000)).toBe(0);
      expect(stderr.match(/"msg":"shutting down"/g)).toHaveLength(2);
      const exits = [...stderr.matchAll(/^.*"msg":"worker exited".*$/gm)].map((m) => JSON.parse(m[0]) as { code: number | null; signal: string | null });
      expect(exits.map((e) => [e.code, e.signal])).toEqual([[0, null], [0, null]]);
      for (const pid of replaced) expect(() => process.kill(pid, 0)).toThrow();
      expect(listenersOn(opsPort)).toEqual([]);
    } finally {
      // The whole process group (detached above): the primary and any worker left.
      if (child.exitCode === null) {
        try {
          process.kill(-primary, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      for (const pid of childrenOf(primary)) process.kill(pid, 'SIGKILL');
    }
  }, 240_000);
});
