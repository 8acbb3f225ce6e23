/**
 * Connectors on the real broker (bus spec "Migration Path": the shell hooks become a subscriber
 * adapter with delivery guarantees and correlation; the file drop stays). A gateway on the dev
 * stack loads two connector files from a folder and starts them:
 * - a shell hook whose script appends `id correlationid attempt` to a file; it exits 75
 *   (EX_TEMPFAIL) once for one event (retried, then handled) and 1 for another (dead-lettered to
 *   `<subscription>.dlq` with the script's stderr in the reason);
 * - a file drop writing each event as structured JSON, one file per event (a redelivered record
 *   rewrites its own file).
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processRunId } from '../../src/bus/publisher/index.js';
import { parseStructuredEvent } from '../../src/codec/http/index.js';
import { eventFileName, loadConnectors, startConnectors } from '../../src/connectors/index.js';
import type { ConnectorsHandle } from '../../src/connectors/index.js';
import { createLogger } from '../../src/observability/index.js';
import type { TransportRecord } from '../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const SERIES_UPDATE_COMPLETED = 'd6b5e2f6-5144-43bb-a2ec-5317301b7208';
const dec = new TextDecoder();
const tag = `CT${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;

const HOOK = `#!/bin/sh
set -u
payload=$(cat)
case "$CE_PARTITIONKEY" in
  "$TAG"-*) ;;
  *) exit 0 ;;  # another test's event on the shared topic
esac
printf '%s %s\\n' "$CE_ID" "$CEG_ATTEMPT" >> "$OUT/calls.log"
printf '%s\\n' "$payload" > "$OUT/stdin-$CE_ID.json"
case "$CE_PARTITIONKEY" in
  *-RETRY_*)
    if [ ! -e "$OUT/retried-$CE_ID" ]; then
      : > "$OUT/retried-$CE_ID"
      echo "price store busy, try later" >&2
      exit 75
    fi ;;
  *-FAIL_*)
    echo "processing $CE_ID"
    echo "bar $CE_PARTITIONKEY rejected: close < 0" >&2
    exit 1 ;;
esac
printf '%s %s %s\\n' "$CE_ID" "$CE_CORRELATIONID" "$CEG_ATTEMPT" >> "$OUT/handled.log"
`;

let gw: TestGateway;
let dir: string;
let connectors: ConnectorsHandle | undefined;
const hookSub = uniqueName('it-conn-hook');
const dropSub = uniqueName('it-conn-drop');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ceg-connectors-it-'));
  writeFileSync(join(dir, 'hook.sh'), HOOK);
  chmodSync(join(dir, 'hook.sh'), 0o755);
  writeFileSync(
    join(dir, 'price-hook.yaml'),
    `kind: shell-hook
subscription: ${hookSub}
kinds: [PriceLoadingCompleted]
retry: { maxAttempts: 3, backoff: { initialMs: 200, factor: 2, maxMs: 1000, jitter: 0 } }
sink:
  command: [./hook.sh]
  timeoutMs: 10000
  env: { OUT: ${dir}, TAG: ${tag} }
`,
  );
  writeFileSync(
    join(dir, 'series-drop.yaml'),
    `kind: file-drop
subscription: ${dropSub}
kinds: [SeriesUpdateCompleted]
retry: { maxAttempts: 3, backoff: { initialMs: 200, maxMs: 1000 } }
sink: { directory: drop, subdirectoryPerEventName: true }
`,
  );
  writeFileSync(join(dir, 'disabled.yaml'), `kind: file-drop\nenabled: false\nsubscription: ${uniqueName('it-conn-off')}\nkinds: [SeriesUpdateCompleted]\nsink: { directory: off }\n`);
  gw = await startGateway({ stack: true });
  connectors = await startConnectors(gw.gateway, loadConnectors(dir), createLogger({ level: 'silent' }));
});

afterAll(async () => {
  await connectors?.stop();
  await gw?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function lines(file: string): string[] {
  try {
    return readFileSync(join(dir, file), 'utf8').trim().split('\n').filter((l) => l !== '');
  } catch {
    return [];
  }
}

async function readTopic(topic: string, count: number): Promise<TransportRecord[]> {
  const out: TransportRecord[] = [];
  const reader = await gw.gateway.transport.consume({ group: uniqueName('it-conn-reader'), topics: [topic], startFrom: 'earliest' }, async (r) => void out.push(r));
  try {
    await waitFor(`${count} record(s) on ${topic}`, () => out.length >= count, 30_000);
    await new Promise((r) => setTimeout(r, 500)); // anything beyond the expected count would show now
  } finally {
    await reader.stop();
  }
  return out;
}

const header = (r: TransportRecord, name: string): string | undefined => {
  const h = r.headers.find(([n]) => n === name);
  return h && dec.decode(h[1]);
};

describe('connectors on Kafka', () => {
  it('shell hook: exit 0 handled, 75 retried then handled, 1 dead-lettered with the stderr as reason; correlation in CE_CORRELATIONID', async () => {
    expect(connectors!.running.map((r) => r.subscription.name).sort()).toEqual([dropSub, hookSub].sort());
    const publish = (suffix: string) => {
      const correlationid = `corr-${suffix}-${randomUUID()}`;
      const r = gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded(`${tag}/${suffix}`, 'H1'), { correlationid })!;
      return { id: r.id, correlationid, delivered: r.delivered };
    };
    const ok = ['OK1', 'OK2', 'OK3'].map(publish);
    const retry = publish('RETRY');
    const fail = publish('FAIL');
    await Promise.all([...ok, retry, fail].map((e) => e.delivered));

    await waitFor('four events handled by the hook', () => lines('handled.log').length >= 4, 30_000);
    const dlq = await readTopic(`${hookSub}.dlq`, 1);
    await new Promise((r) => setTimeout(r, 500));

    // handled.log: `id correlationid attempt`, once per handled event; the retried one on attempt 2.
    expect(lines('handled.log').sort()).toEqual([...ok.map((e) => `${e.id} ${e.correlationid} 1`), `${retry.id} ${retry.correlationid} 2`].sort());
    // calls.log: every run of the script for this test's events.
    expect(lines('calls.log').sort()).toEqual([...ok.map((e) => `${e.id} 1`), `${retry.id} 1`, `${retry.id} 2`, `${fail.id} 1`].sort());
    // stdin: the structured-mode CloudEvent, data as JSON.
    const stdin = parseStructuredEvent(readFileSync(join(dir, `stdin-${ok[0]!.id}.json`), 'utf8'));
    expect(stdin.attributes).toMatchObject({ id: ok[0]!.id, type: PRICE_LOADING_COMPLETED, correlationid: ok[0]!.correlationid, partitionkey: `${tag}-OK1_H1`, datacontenttype: 'application/json', eventname: 'PriceLoadingCompleted' });
    expect(stdin.data).toEqual({ kind: 'json', value: { ...priceLoaded(`${tag}/OK1`, 'H1'), feed: null } });

    expect(dlq).toHaveLength(1);
    const d = dlq[0]!;
    expect(header(d, 'ce_id')).toBe(fail.id);
    expect(header(d, 'ce_correlationid')).toBe(fail.correlationid);
    expect(header(d, 'dlq_reason')).toBe(`hook hook.sh exited with code 1 → deadLetter; stderr: "bar ${tag}-FAIL_H1 rejected: close < 0"; stdout: "processing ${fail.id}"`);
    expect(header(d, 'dlq_attempts')).toBe('1');
    expect(header(d, 'dlq_subscription')).toBe(hookSub);
    expect(header(d, 'dlq_source_topic')).toBe('trading.price-loading-completed');
    expect(dec.decode(d.key)).toBe(`${tag}-FAIL_H1`);
  });

  it('file drop: one file per event under its event name, structured JSON; a redelivered record rewrites its own file', async () => {
    const time = new Date('2022-03-15T12:00:00.000Z');
    const data = (n: number) => ({
      instrument: `${tag}/S${n}`,
      timeframe: 'H4',
      barKey: `${tag}-S${n}_H4__22031512`,
      barsAppended: n,
      seriesLength: 1000 + n,
      updateId: randomUUID(),
      completedAt: '2022-03-15T12:00:01.250Z',
    });
    const sent = [1, 2, 3].map((n) => {
      const d = data(n);
      const correlationid = `corr-drop-${n}-${randomUUID()}`;
      const r = gw.gateway.publisher().publish('SeriesUpdateCompleted', d, { correlationid, time })!;
      return { id: r.id, correlationid, data: d, delivered: r.delivered };
    });
    await Promise.all(sent.map((s) => s.delivered));
    const folder = join(dir, 'drop', 'SeriesUpdateCompleted');
    // The sink writes `.<name>.<pid>.<random>.tmp` first and renames it: count only finished files,
    // and read the folder once no write is in flight (a temporary file counted as a fourth entry before).
    await waitFor('three files dropped, no write in flight', () => {
      try {
        const names = readdirSync(folder);
        return names.filter((f) => !f.startsWith('.')).length >= 3 && !names.some((f) => f.endsWith('.tmp'));
      } catch {
        return false;
      }
    }, 30_000);

    const cfg = gw.gateway.config;
    const source = `urn:${cfg.service}:${cfg.instance}`;
    const schema = gw.gateway.codec().binding(SERIES_UPDATE_COMPLETED)!.schema;
    const expectedFiles = sent.map((s) => eventFileName(source, s.id)).sort();
    // e.g. urn_3Ace-gateway_3A<instance>__<uuid>.json
    for (const f of expectedFiles) expect(f).toMatch(/^urn_3Ace-gateway_3A[A-Za-z0-9_-]+__[0-9a-f-]{36}\.json$/);
    expect(readdirSync(join(dir, 'drop'))).toEqual(['SeriesUpdateCompleted']);
    expect(readdirSync(folder).sort()).toEqual(expectedFiles);
    const expected = (s: (typeof sent)[number]) => ({
      specversion: '1.0',
      id: s.id,
      source,
      type: SERIES_UPDATE_COMPLETED,
      time: '2022-03-15T12:00:00.000Z',
      datacontenttype: 'application/json',
      dataschema: `${cfg.dataschemaBase}${schema.id}`,
      correlationid: s.correlationid,
      runid: processRunId,
      eventname: 'SeriesUpdateCompleted',
      eventclass: 'notification',
      schemaversion: schema.version,
      partitionkey: `${s.data.instrument.replace('/', '-')}_H4`,
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/),
      data: s.data,
    });
    for (const s of sent) {
      const text = readFileSync(join(folder, eventFileName(source, s.id)), 'utf8');
      expect(text.endsWith('}\n')).toBe(true);
      expect(JSON.parse(text)).toEqual(expected(s));
    }

    // Redeliver the first event as a new record with the same source + id: the same file is rewritten.
    const drop = connectors!.running.find((r) => r.subscription.name === dropSub)!.subscription;
    const handledBefore = drop.stats().handled;
    const codec = gw.gateway.codec();
    const again = parseStructuredEvent(readFileSync(join(folder, eventFileName(source, sent[0]!.id)), 'utf8'));
    await gw.gateway.transport.produce('trading.series-update-completed', [codec.envelopeToRecord(again, codec.binding(SERIES_UPDATE_COMPLETED)!)]);
    await waitFor('the redelivered event handled', () => drop.stats().handled > handledBefore, 30_000);
    expect(readdirSync(folder).sort()).toEqual(expectedFiles);
    expect(JSON.parse(readFileSync(join(folder, eventFileName(source, sent[0]!.id)), 'utf8'))).toEqual(expected(sent[0]!));
    expect(readdirSync(dir).includes('off')).toBe(false);
  });
});
