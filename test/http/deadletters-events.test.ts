/**
 * Redrive and purge select dead letters by event, `source` + `id` (break report E5; CloudEvents
 * 1.0.2 §id: an id is unique per source only), on a gateway built on the in-memory adapters:
 * two publishers' events with the same id are both dead-lettered; `events` acts on exactly one,
 * `ids` on both (documented: any source) and the answers name each one's source; a dead letter
 * whose event cannot be decoded is still selected by the `ce_source`/`ce_id` it was written with;
 * malformed `events` are refused 400 naming the field.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { waitFor } from '../helpers/wait.js';
import { post } from './helpers.js';
import { deadLetterGateway, jsonInit } from './dead-letter-gateway.js';

const NAME = 'svc.dup-reader';
const ACME = 'urn:partner:acme';
const BETA = 'urn:partner:beta';

interface Listed {
  readonly id: string | null;
  readonly source: string | null;
  readonly redrivenAt: string | null;
  readonly event: unknown;
  readonly deadLetter: { readonly offset: string };
}

const dl = deadLetterGateway('mem-e5', NAME);
const call = dl.call;
const json = jsonInit;
const listed = async (): Promise<Listed[]> => (await call(`/subscriptions/${NAME}/deadletters`)).body.items as Listed[];
const purge = (body: unknown) => call(`/subscriptions/${NAME}/deadletters`, json('DELETE', body));
const redrive = (body: unknown) => call(`/subscriptions/${NAME}/deadletters/redrive`, json('POST', body));
const sources = (items: unknown): string[] => (items as { source: string }[]).map((i) => i.source).sort();

/** acme's and beta's event `dup`, both dead-lettered (the listing holds exactly these two). */
async function twoDups(): Promise<void> {
  for (const source of [ACME, BETA]) expect((await post(dl.url(), structuredPriceEvent({ id: 'dup', source }))).status).toBe(202);
  await waitFor('both dead-lettered', async () => (await listed()).length === 2 || undefined, 5000);
  expect((await listed()).map((i) => [i.id, i.source]).sort()).toEqual([['dup', ACME], ['dup', BETA]]);
}

describe('redrive and purge by source + id (E5)', () => {
  beforeEach(async () => {
    expect((await purge({ all: true })).status).toBe(200);
  });

  it('purge `events` removes exactly that source\'s event; an event not dead-lettered is in notFound as asked', async () => {
    await twoDups();
    const r = await purge({ events: [{ source: ACME, id: 'dup' }, { source: 'urn:partner:nobody', id: 'dup' }] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ purged: 1, items: [{ id: 'dup', source: ACME }], notFound: [{ source: 'urn:partner:nobody', id: 'dup' }] });
    expect((await listed()).map((i) => [i.id, i.source])).toEqual([['dup', BETA]]);
  });

  it('redrive `events` redrives exactly that source\'s event; the other stays as it was', async () => {
    await twoDups();
    const r = await redrive({ events: [{ source: BETA, id: 'dup' }] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ redriven: 1, items: [{ id: 'dup', source: BETA }], skipped: [], notFound: [] });
    const after = await listed();
    expect(after.filter((i) => i.redrivenAt !== null).map((i) => i.source)).toEqual([BETA]);
    expect(after.find((i) => i.source === ACME)!.redrivenAt).toBeNull();
    // The redriven event fails again and comes back as a new dead letter of beta's (this handler refuses all).
    await waitFor('beta\'s redriven event dead-lettered again', async () => (await listed()).length === 3 || undefined, 5000);
    expect(sources((await listed()).filter((i) => i.redrivenAt === null))).toEqual([ACME, BETA]);
    // A second redrive of the same event skips the dead letter already redriven, naming its source.
    const again = await redrive({ events: [{ source: BETA, id: 'dup' }] });
    expect(again.body).toMatchObject({ redriven: 1, skipped: [{ id: 'dup', source: BETA, reason: 'redriven already' }] });
  });

  it('`ids` alone still matches every source (documented), and the answers list each match with its source', async () => {
    await twoDups();
    const r = await redrive({ ids: ['dup'] });
    expect(r.body).toMatchObject({ redriven: 2, notFound: [] });
    expect(sources(r.body.items)).toEqual([ACME, BETA]);
    await waitFor('both dead-lettered again', async () => (await listed()).length === 4 || undefined, 5000);
    const p = await purge({ ids: ['dup', 'nope'] });
    expect(p.body).toMatchObject({ purged: 4, notFound: ['nope'] });
    expect(sources(p.body.items)).toEqual([ACME, ACME, BETA, BETA]);
    // A purge of all reads no record: it lists none.
    await twoDups();
    expect((await purge({ all: true })).body).toEqual({ purged: 2, items: [], notFound: [] });
  });

  it('a dead letter whose event cannot be decoded is selected by the ce_source and ce_id it carries', async () => {
    const enc = new TextEncoder();
    const poison = (source: string) => ({ key: null, value: enc.encode('not avro'), headers: [['ce_specversion', enc.encode('1.0')], ['ce_id', enc.encode('poison-dup')], ['ce_source', enc.encode(source)], ['ce_type', enc.encode(PRICE_LOADING_COMPLETED)]] as [string, Uint8Array][] });
    await dl.gw().transport.produce(PRICE_TOPIC, [poison(ACME), poison(BETA)]);
    const items = await waitFor('the poison records dead-lettered', async () => {
      const l = await listed();
      return l.length === 2 ? l : undefined;
    }, 5000);
    expect(items.map((i) => [i.id, i.source, i.event])).toEqual([['poison-dup', ACME, null], ['poison-dup', BETA, null]]);
    const r = await purge({ events: [{ source: BETA, id: 'poison-dup' }] });
    expect(r.body).toMatchObject({ purged: 1, items: [{ id: 'poison-dup', source: BETA }], notFound: [] });
    expect((await listed()).map((i) => i.source)).toEqual([ACME]);
  });

  it('refuses a malformed `events` selection with 400 problem+json naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ events: [] }, 'events'],
      [{ events: 'dup' }, 'events'],
      [{ events: Array.from({ length: 1001 }, (_, i) => ({ source: ACME, id: `e${i}` })) }, 'events'],
      [{ events: ['dup'] }, 'events[0]'],
      [{ events: [{ source: ACME, id: 'a' }, null] }, 'events[1]'],
      [{ events: [{ id: 'dup' }] }, 'events[0].source'],
      [{ events: [{ source: '', id: 'dup' }] }, 'events[0].source'],
      [{ events: [{ source: 7, id: 'dup' }] }, 'events[0].source'],
      [{ events: [{ source: ACME }] }, 'events[0].id'],
      [{ events: [{ source: ACME, id: '' }] }, 'events[0].id'],
      [{ events: [{ source: ACME, id: 'x'.repeat(1001) }] }, 'events[0].id'],
      [{ events: [{ source: ACME, id: 'dup', type: 'x' }] }, 'events[0].type'],
      [{ events: [{ source: ACME, id: 'dup' }], ids: ['dup'] }, 'body'],
      [{ events: [{ source: ACME, id: 'dup' }], all: true }, 'body'],
    ];
    for (const [body, field] of cases) {
      for (const r of [await purge(body), await redrive(body)]) {
        expect(r.status, JSON.stringify(body).slice(0, 200)).toBe(400);
        expect(r.type).toContain('application/problem+json');
        expect(r.body, JSON.stringify(body).slice(0, 200)).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', violations: [{ field }] });
      }
    }
  });
});
