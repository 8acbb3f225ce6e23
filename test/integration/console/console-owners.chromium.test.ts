/**
 * The console's script in headless Chromium against a scripted API (Playwright's request routing:
 * no gateway, no stack), for what a live gateway makes hard to set up:
 * - an admin's listing holds three owners' subscriptions all named `orders`: every request about
 *   one names its owner (`?owner=`), and the cards, options and lag charts keep them apart (E3);
 * - the status polls of a slow gateway do not overlap (E3);
 * - a dead letter without a readable event (`event: null`, `eventProblem`, no data) is a row that
 *   says why, and a listing the rows cannot show is an error in the status line (E4);
 * - a catalog kind without an `eventId` still renders its row (a missing value is no node);
 * - errors are said with the gateway's words: a refused tail's problem detail, the status of a
 *   proxy's non-JSON error page, and a stopped tail no longer says "tailing".
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import type { Browser, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_JS } from '../../../src/http/console/page.js';
import { waitFor } from '../../helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const ORIGIN = 'http://console.test';
const OWNERS = ['acme', 'beta', 'admin'] as const;
/** Each owner's `orders` has a lag of its own, so a chart showing another's is visible. */
const LAG: Record<string, number> = { acme: 5, beta: 7, admin: 11 };

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly body: unknown;
}

let browser: Browser;
let page: Page;
let seen: Seen[] = [];
/** Delay of every status answer, ms. */
let statusDelayMs = 0;
let inFlightStatus = 0;
let maxInFlightStatus = 0;
/** What GET …/deadletters answers, by owner; `*`: for any owner. */
let deadLetters: Record<string, unknown> = {};
let kinds: unknown[] = [];
/** What GET /console/api/tail/orders answers; undefined: a stream that stays open without events. */
let tailAnswer: { status: number; contentType: string; body: string } | undefined;
/** What GET /catalog answers instead of the kinds, when set. */
let catalogAnswer: { status: number; contentType: string; body: string } | undefined;

const subscription = (owner: string): Record<string, unknown> => ({ name: 'orders', owner, state: 'active', kinds: ['OrderPlaced'], delivery: { mode: 'push' } });

function json(route: Route, status: number, body: unknown): Promise<void> {
  return route.fulfill({ status, contentType: status < 400 ? 'application/json' : 'application/problem+json', body: JSON.stringify(body) });
}

/** The API as an admin sees it. Without `?owner=` a subscription route means the admin's own, as the gateway does. */
async function answer(route: Route): Promise<void> {
  const req = route.request();
  const url = new URL(req.url());
  const raw = req.postData();
  seen.push({ method: req.method(), path: url.pathname, query: url.searchParams, body: raw === null ? undefined : JSON.parse(raw) });
  const owner = url.searchParams.get('owner') ?? 'admin';
  const p = url.pathname;
  if (p === '/console') return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: CONSOLE_HTML });
  if (p === '/console/app.js') return route.fulfill({ status: 200, contentType: 'text/javascript; charset=utf-8', body: CONSOLE_JS });
  if (p === '/console/app.css') return route.fulfill({ status: 200, contentType: 'text/css; charset=utf-8', body: CONSOLE_CSS });
  if (p === '/catalog') return catalogAnswer === undefined ? json(route, 200, { kinds }) : route.fulfill(catalogAnswer);
  if (p === '/subscriptions') return json(route, 200, { items: OWNERS.map(subscription) });
  if (p === '/subscriptions/orders/status') {
    inFlightStatus += 1;
    maxInFlightStatus = Math.max(maxInFlightStatus, inFlightStatus);
    await new Promise((r) => setTimeout(r, statusDelayMs));
    inFlightStatus -= 1;
    return json(route, 200, { name: 'orders', owner, lag: { total: LAG[owner], partitions: [] } });
  }
  if (p === '/subscriptions/orders/deadletters') return json(route, 200, deadLetters[owner] ?? deadLetters['*'] ?? { items: [], next: null });
  if (p === '/subscriptions/orders/deadletters/redrive') return json(route, 200, { redriven: 1, items: [], skipped: [], notFound: [] });
  if (p === '/console/api/tail/orders') return route.fulfill(tailAnswer ?? { status: 200, contentType: 'text/event-stream', body: ': tailing\n\n' });
  return json(route, 404, { title: 'not found', detail: `no route ${p}` });
}

const readable = { id: 'dl-1', source: 'urn:acme', reason: 'HTTP 500', attempts: 3, lastStatus: 500, deadLetter: { topic: 'ce-gateway.sub.beta.orders.dlq', partition: 0, offset: '7', time: '2026-01-01T00:00:00.000Z' }, event: { specversion: '1.0', id: 'e-1', data: { orderId: 'beta-order-1' } } };
/** A poison record: its event could not be decoded, and it has no data at all. */
const unreadable = { id: 'dl-2', source: 'urn:acme', reason: 'HTTP 500', attempts: 1, lastStatus: null, event: null, eventProblem: 'undecodable: unknown schema id 4711' };

const requests = (path: string, method = 'GET'): Seen[] => seen.filter((s) => s.path === path && s.method === method);
const statusText = (): Promise<string> => page.locator('#status').innerText();

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

beforeEach(async () => {
  seen = [];
  statusDelayMs = 0;
  inFlightStatus = 0;
  maxInFlightStatus = 0;
  deadLetters = {};
  tailAnswer = undefined;
  catalogAnswer = undefined;
  kinds = [{ name: 'OrderPlaced', eventId: 'com.example.order.placed.v1', topic: 'orders', owner: 'acme' }];
  await page?.close();
  page = await browser.newPage();
  await page.route(`${ORIGIN}/**`, answer);
});

describe('console script in Chromium against a scripted API', () => {
  it('keeps three owners\' subscriptions of one name apart: every request names the owner', async () => {
    deadLetters = { beta: { items: [readable], next: null } };
    await page.goto(`${ORIGIN}/console`);
    await waitFor('three subscription cards', async () => (await page.locator('.subscription').count()) === 3, 10_000, 50);

    // Options identify owner and name, and say whose each is.
    const options = page.locator('#dl-subscription option');
    expect(await options.evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).toEqual(['acme/orders', 'beta/orders', 'admin/orders']);
    for (const [i, owner] of OWNERS.entries()) expect(await options.nth(i).innerText()).toContain(owner);
    expect(await page.locator('#tail-subscription option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).toEqual(['acme/orders', 'beta/orders', 'admin/orders']);

    // Each card charts its own owner's lag and names the owner.
    for (const owner of OWNERS) {
      const card = page.locator(`.subscription[data-owner="${owner}"]`);
      await waitFor(`${owner}'s lag on its card`, async () => (await card.locator('svg.lag-chart text').allTextContents()).join(' ').startsWith(`lag ${LAG[owner]} `), 10_000, 100);
      expect(await card.locator('.node-title').innerText()).toContain(owner);
    }
    const polled = requests('/subscriptions/orders/status');
    expect(polled.every((s) => s.query.has('owner'))).toBe(true);
    expect(new Set(polled.map((s) => s.query.get('owner')))).toEqual(new Set(OWNERS));

    // Dead letters, redrive and redrive all of beta's `orders` go to beta's.
    await page.selectOption('#dl-subscription', 'beta/orders');
    await page.click('#dl-form button[type="submit"]');
    await waitFor('beta\'s dead letter listed', async () => (await page.locator('#deadletters tbody tr').count()) === 1, 10_000, 50);
    expect(await page.locator('#deadletters td.data').innerText()).toContain('beta-order-1');
    const listed = requests('/subscriptions/orders/deadletters');
    expect(listed.map((s) => [s.query.get('owner'), s.query.get('limit')])).toEqual([['beta', '100']]);
    expect(await statusText()).toBe('1 dead letters of beta / orders');

    await page.locator('#deadletters tbody tr button').click();
    await waitFor('the redrive', () => requests('/subscriptions/orders/deadletters/redrive', 'POST').length === 1, 10_000, 50);
    await page.click('#dl-redrive-all');
    await waitFor('the redrive of all', () => requests('/subscriptions/orders/deadletters/redrive', 'POST').length === 2, 10_000, 50);
    expect(requests('/subscriptions/orders/deadletters/redrive', 'POST').map((s) => [s.query.get('owner'), s.body])).toEqual([
      ['beta', { deadLetters: [{ partition: 0, offset: '7' }] }],
      ['beta', { all: true }],
    ]);

    // The live tail of acme's `orders` reads acme's.
    await page.selectOption('#tail-subscription', 'acme/orders');
    await page.click('#tail-form button[type="submit"]');
    await waitFor('the tail request', () => requests('/console/api/tail/orders').length === 1, 10_000, 50);
    expect(requests('/console/api/tail/orders')[0]!.query.get('owner')).toBe('acme');
  }, 30_000);

  it('starts a round of status polls only after the previous one has finished', async () => {
    // Slower than the 2 s period: rounds started by the clock alone would overlap.
    statusDelayMs = 2_500;
    await page.goto(`${ORIGIN}/console`);
    await waitFor('two rounds of status polls', () => requests('/subscriptions/orders/status').length >= 6, 15_000, 100);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(maxInFlightStatus).toBe(OWNERS.length);
  }, 30_000);

  it('shows a dead letter without a readable event as a row naming its problem', async () => {
    deadLetters = { '*': { items: [readable, unreadable], next: null } };
    await page.goto(`${ORIGIN}/console`);
    await waitFor('loaded', async () => (await statusText()) === 'loaded', 10_000, 50);
    await page.selectOption('#dl-subscription', { index: 1 });
    await page.click('#dl-form button[type="submit"]');
    await waitFor('both dead letters listed', async () => (await page.locator('#deadletters tbody tr').count()) === 2, 10_000, 50);
    const cells = await page.locator('#deadletters td.data').allInnerTexts();
    expect(cells[0]).toContain('beta-order-1');
    expect(cells[1]).toContain('unreadable');
    expect(cells[1]).toContain('unknown schema id 4711');
    expect(await statusText()).toMatch(/^2 dead letters of /);
    expect(await page.locator('#status').getAttribute('class')).not.toBe('error');
  }, 30_000);

  it('says so in the status line when the dead letters cannot be shown, instead of "loaded" over an empty table', async () => {
    deadLetters = { '*': { items: null, next: null } };
    await page.goto(`${ORIGIN}/console`);
    await waitFor('loaded', async () => (await statusText()) === 'loaded', 10_000, 50);
    await page.selectOption('#dl-subscription', { index: 1 });
    await page.click('#dl-form button[type="submit"]');
    await waitFor('an error in the status line', async () => (await page.locator('#status').getAttribute('class')) === 'error', 10_000, 50);
    expect(await statusText()).toMatch(/^dead letters: /);
  }, 30_000);

  it('renders a catalog kind with a missing field as a row with an empty cell', async () => {
    kinds = [{ name: 'OrderPlaced', topic: 'orders', owner: 'acme' }];
    await page.goto(`${ORIGIN}/console`);
    await waitFor('the page loaded', async () => (await statusText()) !== '', 10_000, 50);
    expect(await statusText()).toBe('loaded');
    expect(await page.locator('#kinds tbody tr td').allInnerTexts()).toEqual(['OrderPlaced', '', 'orders', 'acme']);
  }, 30_000);

  it('says why a tail was refused: the problem detail, not only its status', async () => {
    const detail = 'too many pull requests in progress for partner admin (32): retry after 1 s';
    tailAnswer = { status: 429, contentType: 'application/problem+json', body: JSON.stringify({ type: 'urn:ce-gateway:error:CEG_RATE_LIMITED', title: 'Rate limited', status: 429, detail, code: 'CEG_RATE_LIMITED' }) };
    await page.goto(`${ORIGIN}/console`);
    await waitFor('loaded', async () => (await statusText()) === 'loaded', 10_000, 50);
    await page.click('#tail-form button[type="submit"]');
    await waitFor('an error in the status line', async () => (await page.locator('#status').getAttribute('class')) === 'error', 10_000, 50);
    expect(await statusText()).toBe(`tail: ${detail}`);
  }, 30_000);

  it('says the status of an error answer that is not JSON (a proxy\'s HTML page), not a JSON parse error', async () => {
    catalogAnswer = { status: 502, contentType: 'text/html', body: '<html><body><h1>502 Bad Gateway</h1></body></html>' };
    await page.goto(`${ORIGIN}/console`);
    await waitFor('an error in the status line', async () => (await page.locator('#status').getAttribute('class')) === 'error', 10_000, 50);
    const said = await statusText();
    expect(said).toMatch(/^load: HTTP 502\b/);
    expect(said).toContain('502 Bad Gateway');
  }, 30_000);

  it('says the tail stopped when its stop button is pressed', async () => {
    await page.goto(`${ORIGIN}/console`);
    await waitFor('loaded', async () => (await statusText()) === 'loaded', 10_000, 50);
    await page.selectOption('#tail-subscription', 'beta/orders');
    await page.click('#tail-form button[type="submit"]');
    await waitFor('tailing', async () => (await statusText()) === 'tailing beta / orders', 10_000, 50);
    await page.click('#tail-stop');
    await waitFor('the stop said', async () => (await statusText()) !== 'tailing beta / orders', 10_000, 50);
    expect(await statusText()).toBe('tail stopped: beta / orders');
    expect(await page.locator('#tail').getAttribute('data-tailing')).toBeNull();
  }, 30_000);
});
