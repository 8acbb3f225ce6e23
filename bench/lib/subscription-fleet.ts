/**
 * Many push subscriptions on one gateway, for the scale test and bench (issue 10): one loopback
 * HTTP sink serving every subscription by path, creation over the gateway's HTTP API with a few
 * requests in flight, the gateway's member counts from /metrics, the process's sockets to the
 * broker (`ss`), and the clean-up of what the subscriptions left on the shared broker (consumer
 * groups, dead-letter topics).
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';

const { Kafka, logLevel } = kafkajs();

export interface FleetSink {
  /** Base URL; subscription `name` delivers to `${base}/${name}`. */
  readonly base: string;
  /** POSTs received per path (`/<name>`), with each one's `ce-id`. */
  readonly byPath: Map<string, string[]>;
  posts(): number;
  close(): Promise<void>;
}

/** A sink on 127.0.0.1 that grants the validation handshake and answers 200 to every delivery. */
export async function startFleetSink(): Promise<FleetSink> {
  const byPath = new Map<string, string[]>();
  let posts = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'OPTIONS') {
        res.writeHead(200, { 'webhook-allowed-origin': String(req.headers['webhook-request-origin'] ?? '*') });
        res.end();
        return;
      }
      posts++;
      const path = req.url ?? '';
      let ids = byPath.get(path);
      if (ids === undefined) byPath.set(path, (ids = []));
      ids.push(String(req.headers['ce-id'] ?? ''));
      res.writeHead(200);
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    byPath,
    posts: () => posts,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Runs `work` over `items` with at most `limit` at once. */
export async function inParallel<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      await work(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/**
 * Creates a push subscription; resolves with its consumer group. A `503` (the broker too slow for a
 * moment) is tried again, as a client should, up to 5 times 1 s apart. Throws with the problem
 * when the answer is not 201.
 */
export async function createSubscription(gatewayUrl: string, body: Record<string, unknown>): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${gatewayUrl}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status === 503 && attempt < 5) {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    if (res.status !== 201) throw new Error(`POST /subscriptions ${String(body.name)}: ${res.status} ${text}`);
    return (JSON.parse(text) as { group: string }).group;
  }
}

/** `ce_gateway_subscription_members` of a gateway: subscriptions with a running member, and idle ones. */
export async function memberCounts(gatewayUrl: string): Promise<{ running: number; idle: number }> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const value = (state: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`ce_gateway_subscription_members{state="${state}"}`));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  return { running: value('running'), idle: value('idle') };
}

/** A sample of a gateway's own /metrics (a metric without labels); NaN when absent. */
export async function processMetric(gatewayUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Established TCP connections of process `pid` to `port` (Linux `ss -tnp`); NaN when ss is missing. */
export function socketsTo(pid: number, port: number): number {
  try {
    const out = execFileSync('ss', ['-tnpH', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
    return out.split('\n').filter((l) => l.includes(`pid=${pid},`)).length;
  } catch {
    return Number.NaN;
  }
}

/** Deletes consumer groups and topics this run created on the shared broker (best effort, in chunks). */
export async function cleanUpBroker(brokers: readonly string[], groups: readonly string[], topics: readonly string[]): Promise<void> {
  const admin = new Kafka({ clientId: 'scale-cleanup', brokers: [...brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    for (let i = 0; i < groups.length; i += 100) await admin.deleteGroups(groups.slice(i, i + 100)).catch(() => undefined);
    const existing = new Set(await admin.listTopics());
    const mine = topics.filter((t) => existing.has(t));
    for (let i = 0; i < mine.length; i += 100) await admin.deleteTopics({ topics: mine.slice(i, i + 100), timeout: 30_000 }).catch(() => undefined);
  } finally {
    await admin.disconnect();
  }
}
