/**
 * T15: price loading completed → series update completed → indicators computed → strategy signal,
 * each stage a subscription that publishes the next event while handling; the whole chain shares
 * one correlationid and `ce-gateway trace` (a separate process) rebuilds it from the log as a tree.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaClientEnv } from '../helpers/kafka-client.js';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import type { ChainNode } from '../../src/bus/trace/index.js';
import type { Subscription } from '../../src/bus/subscriber/index.js';
import type { JsonValue } from '../../src/envelope/types.js';
import { indicatorsComputed, priceLoaded, seriesUpdated, strategySignal } from '../fixtures/events.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const run = promisify(execFile);
// Topics of this run only: `trace` reads every catalog topic from its start, and the shared
// stack's topics may hold millions of records from other runs.
const catalog = catalogWithOwnTopics(uniqueName('t15'));
let gw: Gateway;
const subs: Subscription[] = [];
beforeAll(async () => {
  const s = stackEnv();
  const config = loadConfig({ KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: catalog.dir, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...kafkaClientEnv() });
  gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }));
  await gw.ready;
});
afterAll(async () => {
  await Promise.allSettled(subs.map((s) => s.unsubscribe()));
  await gw?.close();
  catalog.cleanup();
});

function traceCli(args: string[]): Promise<{ stdout: string }> {
  const s = stackEnv();
  return run(process.execPath, [...CLI_ENTRY, 'trace', ...args], {
    env: { ...process.env, KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: catalog.dir, LOG_LEVEL: 'warn' },
    maxBuffer: 16 * 1024 * 1024,
  });
}

describe('T15 the trading chain', () => {
  it('T15 a four-stage chain shares one correlationid and is rebuilt by ce-gateway trace', async () => {
    const tag = uniqueName('t15');
    const instrument = `${tag}/EURUSD`;
    const stage = async (from: string, to: string, data: (i: string) => { [k: string]: JsonValue }): Promise<void> => {
      subs.push(
        await gw.subscribe({
          subscription: uniqueName(`t15-${from}`),
          kinds: [from],
          handler: async (e) => {
            const d = e.data?.kind === 'json' ? (e.data.value as { instrument: string }) : undefined;
            if (d?.instrument !== instrument) return;
            await gw.publisher().publish(to, data(d.instrument))!.delivered;
          },
        }),
      );
    };
    await stage('PriceLoadingCompleted', 'SeriesUpdateCompleted', (i) => seriesUpdated(i, 'H4'));
    await stage('SeriesUpdateCompleted', 'IndicatorsComputed', (i) => indicatorsComputed(i, 'H4'));
    await stage('IndicatorsComputed', 'StrategySignal', (i) => strategySignal(i, 'H4'));
    const signals: string[] = [];
    subs.push(
      await gw.subscribe({
        subscription: uniqueName('t15-signal'),
        kinds: ['StrategySignal'],
        handler: async (e) => {
          const d = e.data?.kind === 'json' ? (e.data.value as { instrument: string }) : undefined;
          if (d?.instrument === instrument) signals.push(String(e.attributes.correlationid));
        },
      }),
    );
    const start = gw.publisher().publish('PriceLoadingCompleted', priceLoaded(instrument, 'H4'))!;
    await start.delivered;
    await waitFor('the strategy signal at the end of the chain', () => signals.length >= 1, 60_000);
    expect(signals).toEqual([start.correlationid]);

    const { stdout } = await traceCli([start.correlationid, '--json']);
    const trace = JSON.parse(stdout) as { correlationid: string; events: number; roots: ChainNode[] };
    expect(trace.events).toBe(4);
    expect(trace.roots).toHaveLength(1);
    const path: ChainNode[] = [];
    for (let n: ChainNode | undefined = trace.roots[0]; n; n = n.children[0]) {
      path.push(n);
      expect(n.children.length).toBeLessThanOrEqual(1);
    }
    expect(path.map((n) => n.name)).toEqual(['PriceLoadingCompleted', 'SeriesUpdateCompleted', 'IndicatorsComputed', 'StrategySignal']);
    expect(path[0]!.id).toBe(start.id);
    expect(path[0]!.causationid).toBeUndefined();
    for (let i = 1; i < path.length; i++) expect(path[i]!.causationid).toBe(path[i - 1]!.id);
    expect(new Set(path.map((n) => n.source))).toEqual(new Set([`urn:ce-gateway:${gw.config.instance}`]));

    const human = (await traceCli([start.correlationid])).stdout.split('\n');
    expect(human[0]).toBe(`correlation ${start.correlationid}: 4 events`);
    expect(human.slice(1, 5).map((l) => /(\w+Completed|IndicatorsComputed|StrategySignal)/.exec(l)?.[1])).toEqual(['PriceLoadingCompleted', 'SeriesUpdateCompleted', 'IndicatorsComputed', 'StrategySignal']);
    expect(human[4]).toMatch(/^ {9}└─ StrategySignal {2}/);
  });
});
