/**
 * Issue 16 "Operator console", end to end: a real gateway process on the real stack, the console
 * page in headless Chromium (Debian's `chromium`, driven by playwright-core). It shows the event
 * kinds, draws a correlation chain read from Kafka as a tree, tails a subscription live, and
 * renders partner input (`<script>`, `<img onerror>` in event data) as text: nothing it shows runs.
 * Screenshots are left in `test-output/console-*.png`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, ConsoleMessage, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../../../bench/lib/gateway-process.js';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { indicatorsComputed, priceLoaded, seriesUpdated } from '../../fixtures/events.js';
import { startSink } from '../../helpers/sink.js';
import type { TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const OUT = resolve(ROOT, 'test-output');
const CHROMIUM = '/usr/bin/chromium';
/** Partner input that would run if the page rendered it as HTML. */
const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>';

let cat: OwnCatalog;
let gw: GatewayProcess;
let sink: TestSink;
let browser: Browser;
let page: Page;
const types: Record<string, string> = {};

async function post(events: readonly Record<string, unknown>[]): Promise<void> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
  expect(res.status, await res.text()).toBe(202);
}

function event(kind: string, data: Record<string, unknown>, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { specversion: '1.0', id: randomUUID(), source: 'urn:partner:it-console', type: types[kind], time: new Date().toISOString(), data, ...over };
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
  mkdirSync(OUT, { recursive: true });
  cat = ownCatalog('it-console');
  gw = await startGatewayProcess({
    root: ROOT,
    env: {
      ...cat.env(),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      SUBSCRIPTIONS_TOPIC: `${uniqueName('it-console')}.subscriptions`,
      SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    },
    readyTimeoutMs: 90_000,
    preferTsx: true,
  });
  const catalog = (await (await fetch(`${gw.url}/catalog`)).json()) as { kinds: { name: string; eventId: string }[] };
  for (const k of catalog.kinds) types[k.name] = k.eventId;
  sink = await startSink();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Without the background-networking switches Chromium keeps trying hosts this machine cannot reach.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
}, 150_000);

afterAll(async () => {
  await browser?.close();
  await Promise.allSettled([gw?.stop(), sink?.close()]);
  await cat?.close();
});

describe('operator console in Chromium', () => {
  it('lists the kinds and draws a correlation chain from real events as a tree, partner input as text', async () => {
    const correlationid = `console-${randomUUID()}`;
    const root = event('PriceLoadingCompleted', { ...priceLoaded('EUR/USD', 'H1', '26120101'), barKey: HOSTILE }, { correlationid });
    const child = event('SeriesUpdateCompleted', seriesUpdated('EUR/USD', 'H1', '26120101'), { correlationid, causationid: root.id });
    await post([root]);
    await post([child]);

    // What the page loads by itself (script, style, icon, catalog, subscriptions) all loads: the
    // browser's console, where an operator looks first, says no error (it said the 404 of
    // /favicon.ico on every load).
    const errors: string[] = [];
    const onConsole = (m: ConsoleMessage): void => {
      if (m.type() === 'error') errors.push(`${m.text()} ${m.location().url}`);
    };
    page.on('console', onConsole);
    await page.goto(`${gw.url}/console`);
    await waitFor('the kinds table', async () => (await page.locator('#kinds tbody tr').count()) > 0, 20_000, 100);
    expect(await page.locator('#kinds tbody').innerText()).toContain('PriceLoadingCompleted');
    await waitFor('the page loaded', async () => (await page.locator('#status').innerText()) === 'loaded', 20_000, 100);
    page.off('console', onConsole);
    expect(errors).toEqual([]);

    await page.fill('#correlationid', correlationid);
    await page.click('#chain-form button');
    const rootNode = page.locator(`#chain li.node[data-id="${String(root.id)}"]`);
    await rootNode.waitFor({ timeout: 30_000 });
    // The child hangs under its cause.
    expect(await rootNode.locator(`ul li.node[data-id="${String(child.id)}"]`).count()).toBe(1);
    expect(await rootNode.locator('.event-data').first().innerText()).toContain(HOSTILE);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#chain script, #chain img').count()).toBe(0);
    await page.screenshot({ path: resolve(OUT, 'console-chain.png'), fullPage: true });
  }, 90_000);

  it('tails a subscription live and shows hostile data as text', async () => {
    const name = uniqueName('console').replace(/\./g, '-');
    const created = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url } }) });
    expect(created.status, await created.text()).toBe(201);
    await page.goto(`${gw.url}/console`);
    // An option's value is `<owner>/<name>` (an admin lists every owner's subscriptions); without auth the owner is `anonymous`.
    const key = `anonymous/${name}`;
    await waitFor('the subscription in the tail list', async () => (await page.locator(`#tail-subscription option[value="${key}"]`).count()) === 1, 20_000, 100);
    await page.selectOption('#tail-subscription', key);
    await page.click('#tail-form button[type="submit"]');
    await page.locator(`#tail[data-tailing="${key}"]`).waitFor({ state: "attached", timeout: 30_000 });
    const marker = `tail-${randomUUID()}`;
    await post([event('PriceLoadingCompleted', { ...priceLoaded('GBP/USD', 'H1', '26120102'), barKey: `${marker} ${HOSTILE}` })]);
    await waitFor('the event in the live tail', async () => (await page.locator('#tail li').allInnerTexts()).some((t) => t.includes(marker)), 30_000, 200);
    const line = (await page.locator('#tail li').allInnerTexts()).find((t) => t.includes(marker))!;
    expect(line).toContain(HOSTILE);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#tail script, #tail img').count()).toBe(0);
    await page.screenshot({ path: resolve(OUT, 'console-tail.png'), fullPage: true });
    await page.click('#tail-stop');
  }, 90_000);

  it('draws a subscription lag over time, and lists its dead letters with a redrive that delivers', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let failing = true;
    const held = await startSink(async (req) => {
      if (req.method === 'OPTIONS') return { status: 200, headers: { 'webhook-allowed-origin': String(req.headers['webhook-request-origin'] ?? '*') } };
      await gate;
      return { status: 200 };
    });
    const broken = await startSink((req) => (req.method === 'OPTIONS' ? { status: 200, headers: { 'webhook-allowed-origin': '*' } } : { status: failing ? 500 : 200, body: 'down for maintenance' }));
    try {
      const lagging = uniqueName('console-lag').replace(/\./g, '-');
      const dead = uniqueName('console-dlq').replace(/\./g, '-');
      const fast = { maxAttempts: 1, backoff: { initialMs: 100, factor: 1, maxMs: 1000, jitter: 0 }, timeoutMs: 30_000 };
      for (const [name, to] of [[lagging, held], [dead, broken]] as const) {
        const r = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['IndicatorsComputed'], retry: fast, delivery: { mode: 'push', url: to.url } }) });
        expect(r.status, await r.text()).toBe(201);
      }
      const marker = `dlq-${randomUUID()}`;
      await post(Array.from({ length: 20 }, (_, i) => event('IndicatorsComputed', { ...indicatorsComputed(`K${i}/USD`, 'H1', '26120103'), barKey: `${marker} ${HOSTILE}` })));

      await page.goto(`${gw.url}/console`);
      const card = page.locator(`.subscription[data-name="${lagging}"]`);
      await waitFor('a lag above 0 on the chart', async () => /lag [1-9]/.test((await card.locator('svg.lag-chart text').allTextContents()).join(' ')), 60_000, 250);
      release();
      await waitFor('the lag back to 0 on the chart', async () => /lag 0 \(max [1-9]/.test((await card.locator('svg.lag-chart text').allTextContents()).join(' ')), 60_000, 250);
      expect(await card.locator('svg.lag-chart polyline').count()).toBe(1);

      await waitFor('20 dead letters', async () => {
        const r = await fetch(`${gw.url}/subscriptions/${dead}/deadletters?limit=100`);
        return ((await r.json()) as { items: unknown[] }).items.length >= 20;
      }, 60_000, 500);
      await page.selectOption('#dl-subscription', `anonymous/${dead}`);
      await page.click('#dl-form button[type="submit"]');
      await waitFor('the dead letters listed', async () => (await page.locator('#deadletters tbody tr').count()) === 20, 30_000, 200);
      const row = page.locator('#deadletters tbody tr').first();
      expect(await row.innerText()).toContain('500');
      expect(await row.locator('td.data').innerText()).toContain(HOSTILE);
      expect(await page.locator('#deadletters script, #deadletters img').count()).toBe(0);
      await page.screenshot({ path: resolve(OUT, 'console-lag-deadletters.png'), fullPage: true });
      failing = false;
      const before = broken.deliveries().length;
      await row.locator('button').click();
      await waitFor('the redriven event delivered', () => broken.deliveries().slice(before).some((d) => d.body.toString().includes(marker)), 30_000, 200);
      expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    } finally {
      release();
      await Promise.allSettled([held.close(), broken.close()]);
    }
  }, 150_000);

  it('serves the page with a policy that allows no inline script and no framing', async () => {
    const res = await fetch(`${gw.url}/console`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    const bad = await fetch(`${gw.url}/console/api/trace/${encodeURIComponent('a\u0007b')}`);
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
  });
});
