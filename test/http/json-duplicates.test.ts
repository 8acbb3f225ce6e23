/**
 * JSON bodies of the management API with a member name twice in one object are refused like the
 * ingress refuses them (README: "JSON text anywhere … with a member name twice in one object is
 * refused"): 400 CEG_MALFORMED_REQUEST naming the member by its JSON pointer, at the top level and
 * nested, on every route that takes a body — and nothing is created, changed, replayed,
 * committed, redriven or purged (with "last one wins" each of these bodies did something).
 * A real gateway on the in-memory adapters.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/app/index.js';
import { deadLetter } from '../../src/bus/subscriber/index.js';
import type { Subscription } from '../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import { escapePointerToken } from '../../src/envelope/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { BATCH, fetchJson, post } from './helpers.js';
import type { Answer } from './helpers.js';

let gw: Gateway;
let url: string;
let library: Subscription;
/** A library subscription that dead-letters every event: its dead letters are there to redrive and purge. */
const DEAD = 'svc.dup-reader';

beforeAll(async () => {
  ({ gateway: gw, url } = await startGateway({ stack: false, env: { LOG_LEVEL: 'silent', INSTANCE_ID: 'dup-1', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }, subscriptions: [] }));
  library = await gw.subscribe({ subscription: DEAD, kinds: ['PriceLoadingCompleted'], retry: retryPolicy({ maxAttempts: 1, initialDelayMs: 0, factor: 1, maxDelayMs: 0, jitter: 0 }), handler: () => Promise.resolve(deadLetter('refused here')) });
});

afterAll(async () => {
  await library?.unsubscribe();
  await gw?.close();
});

/** `body` is sent as the exact text given (JSON.stringify cannot write a member twice). */
function call(method: string, path: string, body?: string, contentType = 'application/json'): Promise<Answer> {
  return fetchJson(`${url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': contentType }, ...(body === undefined ? {} : { body }) });
}

/** Asserts the answer refuses a duplicate member named by `pointer`. */
function refusesDuplicate(r: Answer, pointer: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', retriable: false });
  expect(r.body.violations).toEqual([{ field: pointer, reason: expect.stringContaining('more than once') as unknown }]);
  expect(String(r.body.detail)).toContain(`at ${pointer}`);
}

const KINDS = '"kinds":["PriceLoadingCompleted"]';

async function createPull(): Promise<string> {
  const name = `dup-${randomUUID().slice(0, 8)}`;
  const r = await call('POST', '/subscriptions', `{"name":"${name}",${KINDS},"delivery":{"mode":"pull"}}`);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return name;
}

async function names(): Promise<string[]> {
  return ((await call('GET', '/subscriptions')).body.items as { name: string }[]).map((s) => s.name);
}

describe('POST /subscriptions', () => {
  it.each([
    ['the name, at the top level', `{"name":"dupk1","name":"dupk2",${KINDS},"delivery":{"mode":"pull"}}`, '/name', ['dupk1', 'dupk2']],
    ['the name, the second written with escapes', `{"name":"dupe1","n\\u0061me":"dupe2",${KINDS},"delivery":{"mode":"pull"}}`, '/name', ['dupe1', 'dupe2']],
    ['delivery.url (a proxy checking the first URL is not bypassed)', `{"name":"dupurl",${KINDS},"delivery":{"mode":"push","handshake":false,"url":"http://127.0.0.1:1/checked","url":"http://127.0.0.1:2/stored"}}`, '/delivery/url', ['dupurl']],
    ['a filter attribute, inside an array', `{"name":"dupflt",${KINDS},"filters":[{"exact":{"subject":"a","subject":"b"}}],"delivery":{"mode":"pull"}}`, '/filters/0/exact/subject', ['dupflt']],
    ['a name with "/" and "~" (escaped in the pointer)', `{"name":"duptil",${KINDS},"delivery":{"mode":"pull"},"a/b~c":1,"a/b~c":2}`, '/a~1b~0c', ['duptil']],
  ])('refuses %s, naming it; nothing is created', async (_what, text, pointer, notCreated) => {
    refusesDuplicate(await call('POST', '/subscriptions', text), pointer);
    const now = await names();
    for (const n of notCreated) {
      expect(now).not.toContain(n);
      expect((await call('GET', `/subscriptions/${n}`)).status).toBe(404);
    }
  });

  it('any member name twice, at the top level, in delivery or in a filter: 400 naming its pointer, nothing created (property)', async () => {
    // Every UTF-16 code unit as \uXXXX (lone surrogates too): the same name to JSON.parse.
    const escaped = (k: string): string => `"${Array.from({ length: k.length }, (_, i) => `\\u${k.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')}"`;
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('top', 'delivery', 'filter'), fc.boolean(), async (key, where, escapeSecond) => {
        const name = `dp-${randomUUID().slice(0, 8)}`;
        const k1 = JSON.stringify(key);
        const k2 = escapeSecond ? escaped(key) : k1;
        const pair = `${k1}:"a",${k2}:"b"`;
        const text =
          where === 'top'
            ? `{"name":"${name}",${KINDS},"delivery":{"mode":"pull"},${pair}}`
            : where === 'delivery'
              ? `{"name":"${name}",${KINDS},"delivery":{"mode":"pull",${pair}}}`
              : `{"name":"${name}",${KINDS},"filters":[{"exact":{${pair}}}],"delivery":{"mode":"pull"}}`;
        const at = where === 'top' ? '' : where === 'delivery' ? '/delivery' : '/filters/0/exact';
        const r = await call('POST', '/subscriptions', text);
        refusesDuplicate(r, `${at}/${escapePointerToken(key)}`);
        expect((await call('GET', `/subscriptions/${name}`)).status).toBe(404);
      }),
      { numRuns: 60 },
    );
  });
});

describe('PATCH /subscriptions/{name}', () => {
  it('refuses {"state":"active","state":"paused"} and a nested duplicate, naming them; the subscription is unchanged', async () => {
    const name = await createPull();
    const before = (await call('GET', `/subscriptions/${name}`)).body;
    expect(before).toMatchObject({ state: 'active', generation: 1 });
    refusesDuplicate(await call('PATCH', `/subscriptions/${name}`, '{"state":"active","state":"paused"}', 'application/merge-patch+json'), '/state');
    refusesDuplicate(await call('PATCH', `/subscriptions/${name}`, '{"state":"paused","state":"active"}'), '/state');
    refusesDuplicate(await call('PATCH', `/subscriptions/${name}`, '{"filters":[{"exact":{"subject":"a","subject":"b"}}]}'), '/filters/0/exact/subject');
    expect((await call('GET', `/subscriptions/${name}`)).body).toEqual(before);
  });
});

describe('POST /subscriptions/{name}/replay', () => {
  it('refuses {"to":"earliest","to":"latest"} and a duplicate partition, naming them; nothing is replayed', async () => {
    const name = await createPull();
    refusesDuplicate(await call('POST', `/subscriptions/${name}/replay`, '{"to":"earliest","to":"latest"}'), '/to');
    refusesDuplicate(await call('POST', `/subscriptions/${name}/replay`, '{"to":{"0":"0","0":"1"}}'), '/to/0');
    refusesDuplicate(await call('POST', `/subscriptions/${name}/replay`, '{"to":"latest","dryRun":true,"dryRun":false}'), '/dryRun');
    const audit = await call('GET', `/subscriptions/${name}/replays`);
    expect(audit.status).toBe(200);
    expect(audit.body).toEqual([]);
  });
});

describe('POST /subscriptions/{name}/cursors', () => {
  it('refuses {"cursor":"<forged>","cursor":"<good>"} and a nested duplicate, naming them; nothing is committed', async () => {
    const name = await createPull();
    const events = Array.from({ length: 3 }, () => structuredPriceEvent());
    expect((await post(url, events, BATCH)).status).toBe(202);
    const first = await waitFor('the events pulled', async () => {
      const r = await fetch(`${url}/subscriptions/${name}/events?max=10`);
      const got = (await r.json()) as unknown[];
      return got.length === 3 ? r.headers.get('ce-gateway-cursor') : undefined;
    }, 5000);
    refusesDuplicate(await call('POST', `/subscriptions/${name}/cursors`, `{"cursor":"forged","cursor":${JSON.stringify(first)}}`), '/cursor');
    refusesDuplicate(await call('POST', `/subscriptions/${name}/cursors`, '{"cursor":{"a":1,"a":2}}'), '/cursor/a');
    // Not committed: a pull without a cursor starts again from the committed position (the start).
    const again = (await (await fetch(`${url}/subscriptions/${name}/events?max=10`)).json()) as { id: string }[];
    expect(again.map((e) => e.id)).toEqual(events.map((e) => e.id));
    // The good cursor alone commits.
    expect((await call('POST', `/subscriptions/${name}/cursors`, JSON.stringify({ cursor: first }))).status).toBe(204);
  });
});

describe('dead letters: redrive and purge', () => {
  it('refuses {"all":false,"all":true} and nested duplicates, naming them; nothing is redriven or purged', async () => {
    const e = structuredPriceEvent({ subject: 'dup-dl' });
    expect((await post(url, e)).status).toBe(202);
    const listed = await waitFor('the dead letter listed', async () => {
      const r = await call('GET', `/subscriptions/${DEAD}/deadletters`);
      return (r.body.items as unknown[]).length >= 1 ? r.body.items : undefined;
    }, 5000);
    const base = `/subscriptions/${DEAD}/deadletters`;
    refusesDuplicate(await call('POST', `${base}/redrive`, '{"all":false,"all":true}'), '/all');
    refusesDuplicate(await call('POST', `${base}/redrive`, '{"ids":[{"id":"a","id":"b"}]}'), '/ids/0/id');
    refusesDuplicate(await call('DELETE', base, '{"all":false,"all":true}'), '/all');
    refusesDuplicate(await call('DELETE', base, `{"ids":["nope"],"ids":[${JSON.stringify(e.id)}]}`), '/ids');
    const after = await call('GET', base);
    expect(after.body.items).toEqual(listed);
    expect((after.body.items as { redriven: number }[]).every((i) => i.redriven === 0)).toBe(true);
  });
});
