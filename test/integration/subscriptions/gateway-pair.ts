/**
 * Two gateway processes (`gw-a`, `gw-b`) on the real stack for the subscription tests: a catalog
 * and a definitions topic of the run's own, a secrets key, webhook sinks allowed on 127.0.0.1, and
 * always-running members (`SUBSCRIPTION_IDLE_STOP_MS=0`): a group has a member on both gateways
 * before any event exists, so partitions are spread and settled first (members on demand, issue
 * 10, are covered by scale.kafka.test.ts and test/http/subscriptions-on-demand.test.ts).
 * Started one after the other: two first starts registering the same new subjects at once can meet
 * a registry conflict (Apicurio answers 409 to the second compatibility rule).
 * Both run the compiled dist when it is up to date with src, else src through tsx (CLI_FROM_DIST,
 * test/helpers/cli-entry.ts: tsx's loader costs each start seconds of CPU on a 2-core CI machine).
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { startGatewayProcess } from '../../../bench/lib/gateway-process.js';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { CLI_FROM_DIST } from '../../helpers/cli-entry.js';
import { uniqueName } from '../../helpers/stack.js';
import { ownCatalog } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

export const ROOT = resolve(import.meta.dirname, '../../..');

export interface GatewayPair {
  readonly cat: OwnCatalog;
  readonly a: GatewayProcess;
  readonly b: GatewayProcess;
  /** The environment both run with (without INSTANCE_ID): for a CLI run against them. */
  readonly env: Readonly<Record<string, string>>;
  /** The eventId of each kind by business name, from gw-a's `/catalog`. */
  readonly eventIds: ReadonlyMap<string, string>;
  /** Stops both processes and removes the catalog's topics; never rejects. */
  stop(): Promise<void>;
}

/**
 * Starts the pair; `label` prefixes the topics' and definitions topic's names; `extraEnv` adds
 * settings both gateways run with (KAFKA_SESSION_TIMEOUT_MS, say). Errors: a gateway that is not
 * ready within 90 s.
 */
export async function startGatewayPair(label: string, extraEnv: Readonly<Record<string, string>> = {}): Promise<GatewayPair> {
  const cat = ownCatalog(label);
  const env: Record<string, string> = {
    ...cat.env(),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    SUBSCRIPTIONS_TOPIC: `${uniqueName(label)}.subscriptions`,
    SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    SUBSCRIPTION_IDLE_STOP_MS: '0',
    ...extraEnv,
  };
  const a = await startGatewayProcess({ root: ROOT, env: { ...env, INSTANCE_ID: 'gw-a' }, readyTimeoutMs: 90_000, preferTsx: !CLI_FROM_DIST });
  const b = await startGatewayProcess({ root: ROOT, env: { ...env, INSTANCE_ID: 'gw-b' }, readyTimeoutMs: 90_000, preferTsx: !CLI_FROM_DIST }).catch(async (err: unknown) => {
    await a.stop();
    throw err;
  });
  const catalog = (await (await fetch(`${a.url}/catalog`)).json()) as { kinds: { name: string; eventId: string }[] };
  return {
    cat,
    a,
    b,
    env,
    eventIds: new Map(catalog.kinds.map((k) => [k.name, k.eventId])),
    async stop() {
      await Promise.allSettled([a.stop(), b.stop()]);
      await cat.close().catch(() => undefined);
    },
  };
}

/** One JSON call to a gateway of the pair: its status and parsed body ({} when empty). */
export async function api<T = Record<string, unknown>>(gw: GatewayProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as T };
}

/** POSTs `events` as one CloudEvents batch; throws unless the gateway answers 202. */
export async function postBatch(gw: GatewayProcess, events: readonly Record<string, unknown>[]): Promise<void> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`POST /events answered ${res.status}: ${text.slice(0, 500)}`);
}
