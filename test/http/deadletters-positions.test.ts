/**
 * Redrive and purge select dead letters by their own partition and offset on the subscription's
 * dead-letter topic (`{ "deadLetters": [ { partition, offset } ] }`, break report E5 remainder), on
 * a gateway built on the in-memory adapters: a structured-mode record that is not a readable event
 * (no id, no source: neither `events` nor `ids` reaches it) is purged and redriven by the
 * coordinates the listing gives it; one of two dead letters of the same id is acted on alone;
 * what is not there is in `notFound` as asked; a malformed entry, a foreign topic or two kinds of
 * selection at once are refused 400 naming the field.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { waitFor } from '../helpers/wait.js';
import { post } from './helpers.js';
import { deadLetterGateway, jsonInit } from './dead-letter-gateway.js';

const NAME = 'svc.coords-reader';
const DLQ = `${NAME}.dlq`;
const ACME = 'urn:partner:acme';
const BETA = 'urn:partner:beta';

interface Listed {
  readonly id: string | null;
  readonly source: string | null;
  readonly event: unknown;
  readonly redrivenAt: string | null;
  readonly deadLetter: { readonly topic: string; readonly partition: number; readonly offset: string; readonly time: string };
}

const dl = deadLetterGateway('mem-e5-coords', NAME);
const call = dl.call;
const json = jsonInit;
const listed = async (): Promise<Listed[]> => (await call(`/subscriptions/${NAME}/deadletters`)).body.items as Listed[];
const purge = (body: unknown) => call(`/subscriptions/${NAME}/deadletters`, json('DELETE', body));
const redrive = (body: unknown) => call(`/subscriptions/${NAME}/deadletters/redrive`, json('POST', body));
const at = (i: Listed) => ({ partition: i.deadLetter.partition, offset: i.deadLetter.offset });

/** A structured-mode record that is not a readable event (not JSON), dead-lettered: the listing shows it without id or source. */
async function unreadable(): Promise<Listed> {
  const enc = new TextEncoder();
  await dl.gw().transport.produce(PRICE_TOPIC, [{ key: null, value: enc.encode('{"specversion":"1.0", not json'), headers: [['content-type', enc.encode('application/cloudevents+json')]] }]);
  const items = await waitFor('the unreadable record dead-lettered', async () => {
    const l = await listed();
    return l.length === 1 ? l : undefined;
  }, 5000);
  expect(items[0]).toMatchObject({ id: null, source: null, event: null, deadLetter: { topic: DLQ } });
  return items[0]!;
}

describe('redrive and purge by dead-letter coordinates (E5)', () => {
  beforeEach(async () => {
    expect((await purge({ all: true })).status).toBe(200);
  });

  it('purges a dead letter that has no id or source by the coordinates the listing gives it (sent back as listed: topic and time too)', async () => {
    const item = await unreadable();
    // Neither selection by event reaches it.
    expect((await purge({ ids: ['null'] })).body).toMatchObject({ purged: 0 });
    const r = await purge({ deadLetters: [item.deadLetter] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ purged: 1, items: [{ id: null, source: null, deadLetter: { topic: DLQ, partition: item.deadLetter.partition, offset: item.deadLetter.offset } }], notFound: [] });
    expect(await listed()).toEqual([]);
    // Purged: no longer there to be selected.
    expect((await purge({ deadLetters: [at(item)] })).body).toEqual({ purged: 0, items: [], notFound: [at(item)] });
  });

  it('redrives it as `all` would (its value goes back and is dead-lettered again), once: a second redrive skips it', async () => {
    const item = await unreadable();
    const r = await redrive({ deadLetters: [at(item)] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ redriven: 1, items: [{ id: null, source: null, deadLetter: { topic: DLQ, ...at(item) } }], skipped: [], notFound: [] });
    const after = await waitFor('the redriven record dead-lettered again', async () => {
      const l = await listed();
      return l.length === 2 ? l : undefined;
    }, 5000);
    expect(after.find((i) => i.deadLetter.offset === item.deadLetter.offset)!.redrivenAt).not.toBeNull();
    const again = await redrive({ deadLetters: [at(item)] });
    expect(again.body).toEqual({ redriven: 0, items: [], skipped: [{ id: null, source: null, deadLetter: { topic: DLQ, ...at(item) }, reason: 'redriven already' }], notFound: [] });
  });

  it('acts on exactly the dead letters named, not on others of the same id; what is not there is in notFound as asked', async () => {
    for (const source of [ACME, BETA]) expect((await post(dl.url(), structuredPriceEvent({ id: 'dup', source }))).status).toBe(202);
    const two = await waitFor('both dead-lettered', async () => {
      const l = await listed();
      return l.length === 2 ? l : undefined;
    }, 5000);
    const beta = two.find((i) => i.source === BETA)!;
    const missing = [{ partition: 0, offset: '999' }, { partition: 7, offset: '0' }];
    const r = await purge({ deadLetters: [at(beta), ...missing, at(beta)] });
    expect(r.body).toEqual({ purged: 1, items: [{ id: 'dup', source: BETA, deadLetter: { topic: DLQ, ...at(beta) } }], notFound: missing });
    expect((await listed()).map((i) => i.source)).toEqual([ACME]);
    const acme = (await listed())[0]!;
    const d = await redrive({ deadLetters: [{ ...at(acme), topic: DLQ }] });
    expect(d.body).toMatchObject({ redriven: 1, items: [{ id: 'dup', source: ACME }], notFound: [] });
  });

  it('refuses a malformed `deadLetters` selection, a foreign topic and two kinds at once with 400 problem+json naming the field', async () => {
    const item = await unreadable();
    const cases: [unknown, string][] = [
      [{ deadLetters: [] }, 'deadLetters'],
      [{ deadLetters: '0:1' }, 'deadLetters'],
      [{ deadLetters: Array.from({ length: 1001 }, (_, i) => ({ partition: 0, offset: String(i) })) }, 'deadLetters'],
      [{ deadLetters: [null] }, 'deadLetters[0]'],
      [{ deadLetters: [{ partition: 0, offset: '0' }, [0, '1']] }, 'deadLetters[1]'],
      [{ deadLetters: [{ offset: '0' }] }, 'deadLetters[0].partition'],
      [{ deadLetters: [{ partition: -1, offset: '0' }] }, 'deadLetters[0].partition'],
      [{ deadLetters: [{ partition: 1.5, offset: '0' }] }, 'deadLetters[0].partition'],
      [{ deadLetters: [{ partition: '0', offset: '0' }] }, 'deadLetters[0].partition'],
      [{ deadLetters: [{ partition: 2 ** 53, offset: '0' }] }, 'deadLetters[0].partition'],
      [{ deadLetters: [{ partition: 0 }] }, 'deadLetters[0].offset'],
      [{ deadLetters: [{ partition: 0, offset: 12 }] }, 'deadLetters[0].offset'],
      [{ deadLetters: [{ partition: 0, offset: '' }] }, 'deadLetters[0].offset'],
      [{ deadLetters: [{ partition: 0, offset: '-1' }] }, 'deadLetters[0].offset'],
      [{ deadLetters: [{ partition: 0, offset: '01' }] }, 'deadLetters[0].offset'],
      [{ deadLetters: [{ partition: 0, offset: '1e3' }] }, 'deadLetters[0].offset'],
      [{ deadLetters: [{ partition: 0, offset: '9223372036854775808' }] }, 'deadLetters[0].offset'],
      [{ deadLetters: [{ partition: 0, offset: '0', topic: '' }] }, 'deadLetters[0].topic'],
      [{ deadLetters: [at(item), { partition: 0, offset: '0', topic: 'another.dlq' }] }, 'deadLetters[1].topic'],
      [{ deadLetters: [{ partition: 0, offset: '0', id: 'x' }] }, 'deadLetters[0].id'],
      [{ deadLetters: [at(item)], ids: ['dup'] }, 'body'],
      [{ deadLetters: [at(item)], events: [{ source: ACME, id: 'dup' }] }, 'body'],
      [{ deadLetters: [at(item)], all: true }, 'body'],
    ];
    for (const [body, field] of cases) {
      for (const r of [await purge(body), await redrive(body)]) {
        expect(r.status, JSON.stringify(body).slice(0, 200)).toBe(400);
        expect(r.type).toContain('application/problem+json');
        expect(r.body, JSON.stringify(body).slice(0, 200)).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', violations: [{ field }] });
      }
    }
    // Nothing was acted on: the dead letter is still listed, not redriven.
    expect((await listed()).map((i) => [i.deadLetter.offset, i.redrivenAt])).toEqual([[item.deadLetter.offset, null]]);
    // The mix names the fields it got.
    expect(String((await purge({ deadLetters: [at(item)], ids: ['x'] })).body.detail)).toMatch(/ids and deadLetters/);
    // 9223372036854775807 (2^63−1) is a valid offset, just not there.
    expect((await purge({ deadLetters: [{ partition: 0, offset: '9223372036854775807' }] })).body).toEqual({ purged: 0, items: [], notFound: [{ partition: 0, offset: '9223372036854775807' }] });
  });
});
