/**
 * The replay route's body bound and its partition limit agree: a request listing more than
 * MAX_REPLAY_PARTITIONS partitions is answered 400 naming `to`, and one of that many partitions
 * written the longest way (249-character topics, offsets as 19-digit strings, indented) is read,
 * not refused for its size. Before, the route had the subscriptions routes' 64 KiB: about 2,000
 * one-topic partitions answered 413 naming `body`, so the limit of 10,000 could never answer. An
 * `Expect: 100-continue` request of such a body is invited too (the server's check used the 1 MiB
 * ingress bound for every path). In-memory adapters, no authentication.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { MAX_REPLAY_PARTITIONS } from '../../src/bus/subscriptions/index.js';
import { loadConfig } from '../../src/config/index.js';
import { MAX_REPLAY_BODY_BYTES } from '../../src/http/api/subscriptions/replay-routes.js';
import { silentLogger } from '../../src/observability/index.js';
import { openRaw } from '../helpers/raw-http.js';

let gw: Gateway;
let url: string;
const name = 'bound-pull';

async function replay(text: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/subscriptions/${name}/replay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const fieldOf = (body: Record<string, unknown>): unknown => (body.violations as { field?: string }[] | undefined)?.[0]?.field ?? body.field;

beforeAll(async () => {
  gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SUBSCRIPTIONS_TOPIC: 'replaybound.subscriptions' }), silentLogger());
  const addr = await gw.listen();
  await gw.ready;
  await gw.subscriptionsLoaded();
  url = `http://127.0.0.1:${addr.port}`;
  const created = await fetch(`${url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
  expect(created.status).toBe(201);
});

afterAll(async () => {
  await gw?.close();
});

describe('the replay body bound and MAX_REPLAY_PARTITIONS', () => {
  it(`more than ${MAX_REPLAY_PARTITIONS} partitions: 400 naming to (the partition limit), not 413 naming body`, async () => {
    const to = Object.fromEntries(Array.from({ length: MAX_REPLAY_PARTITIONS + 1 }, (_, p) => [String(p), 0]));
    const text = JSON.stringify({ to });
    expect(text.length).toBeGreaterThan(65_536);
    const r = await replay(text);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body).toMatchObject({ code: 'CEG_INVALID_REPLAY' });
    expect(fieldOf(r.body)).toBe('to');
    expect(String(r.body.detail)).toContain(`at most ${MAX_REPLAY_PARTITIONS} partitions`);
  });

  it(`${MAX_REPLAY_PARTITIONS} partitions written the longest way are read (answered on their content, not their size)`, async () => {
    const topic = 't'.repeat(249);
    const to = Object.fromEntries(Array.from({ length: MAX_REPLAY_PARTITIONS }, (_, p) => [`${topic}/${999_999 - p}`, '9223372036854775807']));
    const text = JSON.stringify({ to, dryRun: true }, null, 2);
    const r = await replay(text);
    // Read: the subscription reads one topic, so a "<topic>/<partition>" key is refused, named.
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(400);
    expect(r.body).toMatchObject({ code: 'CEG_INVALID_REPLAY' });
    expect(String(fieldOf(r.body))).toMatch(/^to\.t{100}$/);
    expect(Buffer.byteLength(text)).toBeGreaterThan(2_000_000);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_REPLAY_BODY_BYTES);
  });

  it('a body over the bound: 413 naming body, with the bound', async () => {
    const r = await replay(JSON.stringify({ to: 'earliest', pad: 'x'.repeat(MAX_REPLAY_BODY_BYTES) }));
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ code: 'CEG_PAYLOAD_TOO_LARGE', maxBytes: MAX_REPLAY_BODY_BYTES });
    expect(fieldOf(r.body)).toBe('body');
  });

  it('Expect: 100-continue with a body over the 1 MiB ingress bound but within the replay\'s is invited; over the replay\'s is 413', async () => {
    for (const [length, status] of [[2_000_000, 100], [MAX_REPLAY_BODY_BYTES + 1, 413]] as const) {
      const c = await openRaw(url);
      c.write(`POST /subscriptions/${name}/replay HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
      expect((await c.responses(1, 10_000)).map((x) => x.status), String(length)).toEqual([status]);
      c.destroy();
    }
  });
});
