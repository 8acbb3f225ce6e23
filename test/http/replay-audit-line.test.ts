/**
 * The security audit line of a replay (`"audit": true`, `"action": "replay"`) says what was asked:
 * `to` and `dryRun` next to the owner and subscription (before, only those two: a line could not
 * tell a dry run from a replay to `earliest`). Both come from outside and the line is written for
 * refused requests too, so they are bounded: a long text is cut, explicit offsets are counted and
 * the first ten listed, a value of another type is named by its type; a newline in a value stays
 * inside the JSON line.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayAuditFields } from '../../src/http/api/subscriptions/replay-routes.js';
import { startPartnersGateway } from './partners-gateway.js';
import type { PartnersGateway } from './partners-gateway.js';

describe('the security audit line of a replay', () => {
  let pg: PartnersGateway;
  beforeAll(async () => {
    pg = await startPartnersGateway(`replayline${Date.now().toString(36)}`, 'info');
  });
  afterAll(async () => {
    await pg?.close();
  });

  const call = async (method: string, path: string, key: string, body?: unknown): Promise<Response> =>
    fetch(`${pg.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const replayLines = (name: string): Record<string, unknown>[] =>
    pg.logs
      .join('')
      .split('\n')
      .filter((l) => l.includes('"audit":true'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.action === 'replay' && (l.target as { subscription?: string }).subscription === name);

  it('names to and dryRun, for a replay that ran and for refused ones, bounded', async () => {
    const name = `rl-${randomUUID().slice(0, 8)}`;
    expect((await call('POST', '/subscriptions', pg.setup.keys.acme, { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
    const dry = await call('POST', `/subscriptions/${name}/replay?owner=acme`, pg.setup.keys.ops, { to: 'earliest', dryRun: true });
    expect(dry.status).toBe(200);
    const manyPartitions = Object.fromEntries(Array.from({ length: 12 }, (_, p) => [String(p), 10 ** 9]));
    expect((await call('POST', `/subscriptions/${name}/replay?owner=acme`, pg.setup.keys.ops, { to: manyPartitions })).status).toBe(400);
    const long = `${'x'.repeat(300)}\n{"audit":true,"forged":true}`;
    expect((await call('POST', `/subscriptions/${name}/replay?owner=acme`, pg.setup.keys.ops, { to: long, dryRun: 'yes' })).status).toBe(400);
    const lines = replayLines(name);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ partner: 'ops', target: { owner: 'acme', subscription: name, to: 'earliest', dryRun: true }, outcome: 'ok' });
    expect(lines[1]).toMatchObject({ target: { to: { partitions: 12 }, dryRun: false }, outcome: 'failed', error: 'CEG_INVALID_REPLAY' });
    expect(Object.keys((lines[1]!.target as { to: { offsets: object } }).to.offsets)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(lines[2]).toMatchObject({ target: { to: `${'x'.repeat(100)}…`, dryRun: { type: 'string' } }, outcome: 'failed' });
    expect(pg.logs.join('')).not.toContain('"forged"');
  });

  it('replayAuditFields: types named, keys and texts cut, a __proto__ key kept as a key', () => {
    expect(replayAuditFields({ to: 'latest' })).toEqual({ to: 'latest', dryRun: false });
    expect(replayAuditFields({ to: 5, dryRun: null })).toEqual({ to: { type: 'number' }, dryRun: { type: 'null' } });
    expect(replayAuditFields({ to: ['earliest'] })).toEqual({ to: { type: 'array' }, dryRun: false });
    expect(replayAuditFields({})).toEqual({ dryRun: false });
    expect(replayAuditFields('earliest')).toEqual({});
    const odd = JSON.parse(`{"to":{"__proto__":1,"${'k'.repeat(150)}":"${'9'.repeat(40)}","2":{}}}`) as unknown;
    const shown = replayAuditFields(odd).to as { partitions: number; offsets: Record<string, unknown> };
    expect(shown.partitions).toBe(3);
    expect(Object.getPrototypeOf(shown.offsets)).toBe(Object.prototype);
    expect(Object.entries(shown.offsets)).toEqual([
      ['2', { type: 'object' }],
      ['__proto__', 1],
      [`${'k'.repeat(100)}…`, `${'9'.repeat(30)}…`],
    ]);
  });
});
