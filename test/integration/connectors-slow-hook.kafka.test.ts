/**
 * docs/connectors.md "Order and concurrency": "a slow hook holds back the events behind it on its
 * partition"; hooks of different partitions run concurrently. A shell-hook connector whose script
 * sleeps 5 s for one event (key SLOW): events of other partitions published while it sleeps are
 * handled before it ends. Tester report D1: on kafkajs none of them started until the slow hook
 * ended (the adapter awaited the handler inside kafkajs's eachBatch, and kafkajs fetches again
 * only once every batch of its last fetch returned); on @platformatic/kafka they ran at once.
 * Runs on the client of this run (KAFKA_CLIENT).
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnectors, startConnectors } from '../../src/connectors/index.js';
import type { ConnectorsHandle } from '../../src/connectors/index.js';
import { createLogger } from '../../src/observability/index.js';
import { partitionForKey } from '../../src/transport/partitioner.js';
import { priceLoaded } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const TOPIC = 'trading.price-loading-completed';
const tag = `SH${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;

const HOOK = `#!/bin/sh
set -u
cat > /dev/null
case "$CE_PARTITIONKEY" in
  "$TAG"-*) ;;
  *) exit 0 ;;  # another test's event on the shared topic
esac
echo "start $CE_PARTITIONKEY" >> "$OUT/calls.log"
case "$CE_PARTITIONKEY" in
  *-SLOW_H1) sleep 5 ;;
esac
echo "end $CE_PARTITIONKEY" >> "$OUT/calls.log"
`;

let gw: TestGateway;
let dir: string;
let connectors: ConnectorsHandle | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ceg-slow-hook-it-'));
  writeFileSync(join(dir, 'hook.sh'), HOOK);
  chmodSync(join(dir, 'hook.sh'), 0o755);
  writeFileSync(
    join(dir, 'slow-hook.yaml'),
    `kind: shell-hook
subscription: ${uniqueName('it-conn-slow-hook')}
kinds: [PriceLoadingCompleted]
sink:
  command: [./hook.sh]
  timeoutMs: 20000
  env: { OUT: ${dir}, TAG: ${tag} }
`,
  );
  gw = await startGateway({ stack: true });
  connectors = await startConnectors(gw.gateway, loadConnectors(dir), createLogger({ level: 'silent' }));
});

afterAll(async () => {
  await connectors?.stop();
  await gw?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function calls(): string[] {
  try {
    return readFileSync(join(dir, 'calls.log'), 'utf8').trim().split('\n').filter((l) => l !== '');
  } catch {
    return [];
  }
}

const keyOf = (suffix: string): string => `${tag}-${suffix}_H1`;

describe('a slow shell hook on Kafka', () => {
  it('holds back its own partition only: events of other partitions are handled while it runs', async () => {
    const partitions = await gw.gateway.transport.partitionCount(TOPIC);
    const enc = new TextEncoder();
    const slowPartition = partitionForKey(enc.encode(keyOf('SLOW')), partitions);
    // Three quick events, each on a partition other than the slow one's (and other than each other's).
    const quick: string[] = [];
    const used = new Set([slowPartition]);
    for (let i = 0; quick.length < Math.min(3, partitions - 1); i++) {
      const p = partitionForKey(enc.encode(keyOf(`Q${i}`)), partitions);
      if (used.has(p)) continue;
      used.add(p);
      quick.push(`Q${i}`);
    }
    expect(quick.length).toBeGreaterThan(0);
    const publish = (suffix: string) => gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded(`${tag}/${suffix}`, 'H1'))!.delivered;

    await publish('SLOW');
    await waitFor('the slow hook running', () => calls().includes(`start ${keyOf('SLOW')}`), 30_000);
    for (const q of quick) await publish(q);
    await waitFor('every hook ended', () => calls().filter((l) => l.startsWith('end ')).length >= quick.length + 1, 30_000);

    const ends = calls().filter((l) => l.startsWith('end '));
    // The slow hook ends last: the quick events did not wait for it.
    expect(ends.at(-1)).toBe(`end ${keyOf('SLOW')}`);
    expect(ends.slice(0, -1).sort()).toEqual(quick.map((q) => `end ${keyOf(q)}`).sort());
  }, 60_000);
});
