/**
 * Dead letters are selected by event — `source` + `id` — on the real stack (break report E5;
 * CloudEvents 1.0.2 §id: an id is unique per source only), with one in-process gateway on a
 * catalog and definitions topic of this run's own and a webhook sink on 127.0.0.1 answering 400:
 * a push subscription receives acme's and beta's events, both with id `dup`, and dead-letters both.
 * - `DELETE …/deadletters` with `{ "events": [ { source, id } ] }` purges exactly one;
 * - `ce-gateway deadletters redrive|purge --id dup --source <uri>` act on that source's event only,
 *   and print each dead letter acted on with its source;
 * - `--id dup` alone matches every source (documented), each printed with its source.
 */
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
import { ownCatalog } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

let cat: OwnCatalog;
let gw: Gateway;
let url: string;
let sink: TestSink;
const subscriptionsTopic = `${uniqueName('it-dls')}.subscriptions`;
const ACME = 'urn:partner:acme';
const BETA = 'urn:partner:beta';

interface Item {
  id: string;
  source: string;
  redrivenAt: string | null;
  deadLetter: { partition: number; offset: string };
}

const api = jsonApi(() => url);
const cli = cliRunner(() => ({ ...cat.env(), SUBSCRIPTIONS_TOPIC: subscriptionsTopic, CONNECTORS_DIR: '' }));

const listed = async (name: string): Promise<Item[]> => (await api('GET', `/subscriptions/${name}/deadletters`)).body.items as Item[];

/** A push subscription to the 400 sink holding acme's and beta's dead-lettered `dup`; its name. */
async function withTwoDups(): Promise<string> {
  const name = uniqueName('dls').replace(/\./g, '-');
  const created = await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], retry: { maxAttempts: 1 }, delivery: { mode: 'push', url: sink.url } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await waitFor('a member running', async () => (await api('GET', `/subscriptions/${name}/status`)).body.running === true, 30_000, 200);
  const events = [ACME, BETA].map((source) => ({ specversion: '1.0', id: 'dup', source, type: PRICE_LOADING_COMPLETED, time: '2026-12-05T10:00:00.000Z', data: priceLoaded('DUP/USD', 'H1', '26120510') }));
  const res = await fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
  expect(res.status, await res.text()).toBe(202);
  await waitFor('both dead-lettered', async () => (await listed(name))?.length === 2, 30_000, 300);
  expect((await listed(name)).map((i) => [i.id, i.source]).sort()).toEqual([['dup', ACME], ['dup', BETA]]);
  return name;
}

beforeAll(async () => {
  cat = ownCatalog('it-dls');
  sink = await startSink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status: 400 }));
  const config = loadConfig({ ...cat.env(), PORT: '0', HOST: '127.0.0.1', INSTANCE_ID: 'it-dls', SUBSCRIPTIONS_TOPIC: subscriptionsTopic, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_IDLE_STOP_MS: '0' });
  gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }));
  url = `http://127.0.0.1:${(await gw.listen()).port}`;
  await gw.ready;
  await gw.subscriptionsLoaded();
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await sink?.close();
  await cat?.close();
});

describe('dead letters selected by source + id (E5)', () => {
  it('DELETE with events purges exactly that source\'s dead letter, naming it in the answer', async () => {
    const name = await withTwoDups();
    const one = await api('DELETE', `/subscriptions/${name}/deadletters`, { events: [{ source: ACME, id: 'dup' }] });
    expect(one).toMatchObject({ status: 200, body: { purged: 1, items: [{ id: 'dup', source: ACME }], notFound: [] } });
    expect((await listed(name)).map((i) => i.source)).toEqual([BETA]);
    await api('DELETE', `/subscriptions/${name}`);
  }, 120_000);

  it('the CLI: --id with --source redrives and purges that source\'s event only; --id alone every source\'s', async () => {
    const name = await withTwoDups();
    const before = await listed(name);
    const beta = before.find((i) => i.source === BETA)!;
    const redrive = await cli(['deadletters', 'redrive', name, '--id', 'dup', '--source', BETA]);
    expect(redrive.code, redrive.stderr).toBe(0);
    expect(redrive.stdout).toBe(`redriven 1 to ${(await api('GET', `/subscriptions/${name}/status`)).body.group as string}.redrive\nredriven ${beta.deadLetter.partition}@${beta.deadLetter.offset} id=dup source=${BETA}\n`);
    const after = await listed(name);
    expect(after.find((i) => i.source === ACME)!.redrivenAt).toBeNull();
    expect(after.find((i) => i.deadLetter.offset === beta.deadLetter.offset && i.deadLetter.partition === beta.deadLetter.partition)!.redrivenAt).not.toBeNull();

    const purge = await cli(['deadletters', 'purge', name, '--id', 'dup', '--source', ACME, '--json']);
    expect(purge.code, purge.stderr).toBe(0);
    expect(JSON.parse(purge.stdout)).toMatchObject({ purged: 1, items: [{ id: 'dup', source: ACME }], notFound: [] });
    expect((await listed(name)).some((i) => i.source === ACME)).toBe(false);

    const missing = await cli(['deadletters', 'purge', name, '--id', 'dup', '--source', 'urn:partner:nobody']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('purged 0\n');
    expect(missing.stderr).toContain('not found: dup from urn:partner:nobody');

    // The redriven event fails again (the sink still answers 400): beta's dead letters only remain.
    await waitFor('beta\'s redriven event dead-lettered again', async () => (await listed(name)).length === 2, 30_000, 300);
    const all = await cli(['deadletters', 'purge', name, '--id', 'dup']);
    expect(all.code, all.stderr).toBe(0);
    const lines = all.stdout.trim().split('\n');
    expect(lines[0]).toBe('purged 2');
    expect(lines.slice(1).map((l) => l.replace(/^purged \d+@\d+ /, ''))).toEqual([`id=dup source=${BETA}`, `id=dup source=${BETA}`]);
    expect(await listed(name)).toEqual([]);
    await api('DELETE', `/subscriptions/${name}`);
  }, 180_000);
});
