/**
 * `ce-gateway deadletters redrive|purge` of a subscription nothing owns any more (tester report
 * F2), on the real stack with one in-process gateway on a catalog and definitions topic of this
 * run's own and a real webhook sink on 127.0.0.1:
 * - a push subscription dead-letters two events (its sink answers 400) and is deleted; the CLI's
 *   redrive and purge of its name refuse (exit 1, the subscription and its group named on stderr)
 *   and write nothing: both dead letters are still listed, neither marked redriven;
 * - the subscription is created again under that name: the CLI's redrive (no --force) now
 *   delivers both events to it;
 * - another deleted subscription's dead letter: `--force` redrives it (exit 0, marked redriven);
 * - a subscription of another owner (an admin's `?owner=`) named without `--owner`: the refusal
 *   (exit 2) names that owner and the `--owner` to give, read from the definitions topic.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import type { Gateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../../fixtures/events.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import type { TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { cliRunner, jsonApi } from './dead-letters.js';
import { ownCatalog, rawKafka } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

let cat: OwnCatalog;
let gw: Gateway;
let url: string;
const subscriptionsTopic = `${uniqueName('it-dlo')}.subscriptions`;
const sinks: TestSink[] = [];

interface Item {
  id: string;
  redrivenAt: string | null;
}

const api = jsonApi(() => url);
const cli = cliRunner(() => ({ ...cat.env(), SUBSCRIPTIONS_TOPIC: subscriptionsTopic, CONNECTORS_DIR: '' }));

/** The dead letters of `name` as the CLI lists them (read-only: works for a deleted subscription too). */
async function listed(name: string): Promise<Item[]> {
  const r = await cli(['deadletters', 'list', name, '--json', '--limit', '1000']);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { items: Item[] }).items;
}

function event(key: number): Record<string, unknown> {
  return { specversion: '1.0', id: randomUUID(), source: 'urn:partner:it-dlo', type: PRICE_LOADING_COMPLETED, time: '2026-12-01T10:00:00.000Z', data: priceLoaded(`O${key}/USD`, 'H1', '26120110') };
}

async function publish(events: readonly Record<string, unknown>[]): Promise<void> {
  const res = await fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
  expect(res.status, await res.text()).toBe(202);
}

async function sink(status: number): Promise<TestSink> {
  const s = await startSink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status }));
  sinks.push(s);
  return s;
}

/** A push subscription to `to` that dead-letters at the first failure; its group. */
async function create(name: string, to: TestSink): Promise<string> {
  const r = await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], retry: { maxAttempts: 1 }, delivery: { mode: 'push', url: to.url } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.group as string;
}

/** Deletes `name` and waits until its group has no member left (the gateway stops them). */
async function remove(name: string, group: string): Promise<void> {
  expect((await api('DELETE', `/subscriptions/${name}`)).status).toBe(204);
  const admin = rawKafka().admin();
  await admin.connect();
  try {
    await waitFor(`${group} without members`, async () => (await admin.describeGroups([group])).groups[0]?.members.length === 0, 30_000, 300);
  } finally {
    await admin.disconnect();
  }
}

/** A deleted subscription with `n` dead letters: its name, group and the events. */
async function deletedWithDeadLetters(n: number): Promise<{ name: string; group: string; events: Record<string, unknown>[] }> {
  const name = uniqueName('dlo').replace(/\./g, '-');
  const group = await create(name, await sink(400));
  await waitFor('a member running', async () => (await api('GET', `/subscriptions/${name}/status`)).body.running === true, 30_000, 200);
  const events = Array.from({ length: n }, (_, k) => event(k));
  await publish(events);
  await waitFor(`${n} dead letters`, async () => ((await api('GET', `/subscriptions/${name}/deadletters`)).body.items as unknown[] | undefined)?.length === n, 30_000, 300);
  await remove(name, group);
  expect((await api('GET', `/subscriptions/${name}/deadletters`)).status).toBe(404); // what the HTTP route says
  return { name, group, events };
}

beforeAll(async () => {
  cat = ownCatalog('it-dlo');
  const config = loadConfig({ ...cat.env(), PORT: '0', HOST: '127.0.0.1', INSTANCE_ID: 'it-dlo', SUBSCRIPTIONS_TOPIC: subscriptionsTopic, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_IDLE_STOP_MS: '0' });
  gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }));
  url = `http://127.0.0.1:${(await gw.listen()).port}`;
  await gw.ready;
  await gw.subscriptionsLoaded();
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await Promise.allSettled(sinks.map((s) => s.close()));
  await cat?.close();
});

describe('ce-gateway deadletters of a deleted subscription', () => {
  it('redrive and purge refuse (exit 1, nothing written); once the subscription is created again, redrive delivers to it', async () => {
    const { name, group, events } = await deletedWithDeadLetters(2);
    const ids = events.map((e) => e.id as string).sort();

    const redrive = await cli(['deadletters', 'redrive', name, '--all', '--json']);
    expect(redrive.code, redrive.stderr).toBe(1);
    expect(redrive.stdout).toBe('');
    expect(redrive.stderr).toContain(`no subscription owns consumer group ${group} (subscription ${name} of owner anonymous)`);
    expect(redrive.stderr).toContain('Nothing was redriven');
    expect(redrive.stderr).toContain('--force');
    const purge = await cli(['deadletters', 'purge', name, '--all']);
    expect(purge.code, purge.stderr).toBe(1);
    expect(purge.stderr).toContain(`no subscription owns consumer group ${group}`);
    expect(purge.stderr).toContain('Nothing was purged');
    const untouched = await listed(name);
    expect(untouched.map((i) => i.id).sort()).toEqual(ids); // none purged
    expect(untouched.every((i) => i.redrivenAt === null)).toBe(true); // none marked redriven

    // Created again under the same name: the same group, owned again; the redrive reaches it.
    const healthy = await sink(200);
    expect(await create(name, healthy)).toBe(group);
    await waitFor('a member running', async () => (await api('GET', `/subscriptions/${name}/status`)).body.running === true, 30_000, 200);
    const again = await cli(['deadletters', 'redrive', name, '--all']);
    expect(again.code, again.stderr).toBe(0);
    // `--all` prints each dead letter acted on with its source, as the other selections and purge do.
    const lines = again.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`redriven 2 to ${group}.redrive`);
    expect(lines.slice(1).map((l) => /^redriven \d+@\d+ id=(\S+) source=\S+$/.exec(l)?.[1]).sort()).toEqual(ids);
    await waitFor('both events delivered to the new subscription', () => healthy.deliveries().filter((r) => r.method === 'POST').length >= 2, 30_000, 200);
    expect(healthy.deliveries().filter((r) => r.method === 'POST').map((r) => String(r.headers['ce-id'])).sort()).toEqual(ids);
    await api('DELETE', `/subscriptions/${name}`);
  }, 150_000);

  it('--force redrives a deleted subscription\'s dead letters anyway (a group served by something this command cannot see)', async () => {
    const { name, group } = await deletedWithDeadLetters(1);
    const forced = await cli(['deadletters', 'redrive', name, '--all', '--force', '--json']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ redriven: 1, notFound: [] });
    expect(forced.stderr).toContain(`--force: no subscription owns consumer group ${group}`);
    const items = await listed(name);
    expect(items).toHaveLength(1);
    expect(items[0]!.redrivenAt).not.toBeNull();
  }, 120_000);
});

describe("ce-gateway deadletters of a partner's subscription without --owner", () => {
  it('names the owner found on the definitions topic and the --owner to give (new-user report hE); with it, lists', async () => {
    const name = uniqueName('dlp').replace(/\./g, '-');
    const owner = 'it-acme';
    const r = await api('POST', `/subscriptions?owner=${owner}`, { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: (await sink(200)).url } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await waitFor('a member running', async () => (await api('GET', `/subscriptions/${name}/status?owner=${owner}`)).body.running === true, 30_000, 200);

    const bare = await cli(['deadletters', 'list', name]);
    expect(bare.code, bare.stderr).toBe(2);
    expect(bare.stderr).toContain(`no dead-letter topic for subscription ${name} (looked for ce-gateway.sub.anonymous.${name}.dlq`);
    expect(bare.stderr).toContain(`; ${name} is a subscription of ${owner}: give --owner ${owner}`);
    const redrive = await cli(['deadletters', 'redrive', name, '--all']);
    expect(redrive.code, redrive.stderr).toBe(2);
    expect(redrive.stderr).toContain(`give --owner ${owner}`);

    const owned = await cli(['deadletters', 'list', name, '--owner', owner]);
    expect(owned.code, owned.stderr).toBe(0);
    expect(owned.stderr).toContain('no dead letters');
    await api('DELETE', `/subscriptions/${name}?owner=${owner}`);
  }, 120_000);
});
