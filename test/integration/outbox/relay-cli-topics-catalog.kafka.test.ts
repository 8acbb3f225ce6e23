/**
 * `OUTBOX_TOPICS=catalog`: the `outbox relay` command publishes only rows naming one of its
 * `CATALOG_DIR` catalog's topics. A row naming another existing topic (inserted by hand: the
 * gateway's definitions topic, a dead-letter topic, another system's) is held — an attempt and a
 * CEG_FORBIDDEN `last_error`, nothing written to that topic — while the catalog's rows are
 * published. Without the setting (`any`, the default) the relay publishes what a row names.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCatalogDir } from '../../../src/catalog/index.js';
import { freePort } from '../../helpers/ports.js';
import { stackEnv } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { KIND, outboxFixture, recordCount, writeRowsRenamed } from './fixture.js';
import type { OutboxFixture } from './fixture.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

let f: OutboxFixture;
let foreign: string;
let catalogDir: string;
beforeAll(async () => {
  f = await outboxFixture({ partitions: 3 });
  foreign = `${f.run}.foreign`;
  await f.transport.ensureTopics([{ ...f.catalog.topics[0]!, name: foreign }]);
  // The run's catalog (the shipped one cut to one kind on the run's topic) as a folder the command reads.
  catalogDir = mkdtempSync(join(tmpdir(), 'ceg-outbox-topics-'));
  cpSync(defaultCatalogDir(), catalogDir, { recursive: true });
  const doc = parseYaml(readFileSync(join(catalogDir, 'catalog.yaml'), 'utf8')) as { topics: Record<string, unknown>; kinds: { name: string; topic: string }[] };
  const kind = doc.kinds.find((k) => k.name === KIND)!;
  doc.topics = { [f.topic]: doc.topics[kind.topic] };
  doc.kinds = [{ ...kind, topic: f.topic }];
  writeFileSync(join(catalogDir, 'catalog.yaml'), JSON.stringify(doc));
});
afterAll(async () => {
  await f?.close();
  if (catalogDir !== undefined) rmSync(catalogDir, { recursive: true, force: true });
});

describe('the outbox relay command with OUTBOX_TOPICS=catalog', () => {
  it('publishes the catalog topic\'s rows and holds a row naming another topic, writing nothing there', async () => {
    await writeRowsRenamed(f, [0, 1].map((b) => ({ key: `FOREIGN${b}`, topic: foreign })), 12, 3);
    const s = stackEnv();
    let stderr = '';
    const child: ChildProcess = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
      env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, OUTBOX_DATABASE_URL: s.databaseUrl, OUTBOX_TABLE: f.table, OUTBOX_TOPICS: 'catalog', CATALOG_DIR: catalogDir, OUTBOX_POLL_INTERVAL_MS: '50', LOG_LEVEL: 'warn', PORT: String(await freePort()), HOST: '127.0.0.1', INSTANCE_ID: `${f.run}-r` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on('data', (d: Buffer) => (logs += d.toString()));
    try {
      await waitFor('the catalog topic\'s rows sent and the foreign rows failed once', async () => {
        if (child.exitCode !== null) throw new Error(`relay exited ${String(child.exitCode)}: ${stderr}`);
        const r = await f.pool.query<{ sent: string; failed: string }>(
          `SELECT count(*) FILTER (WHERE sent_at IS NOT NULL AND partition_key LIKE 'K%') AS sent,
                  count(*) FILTER (WHERE sent_at IS NULL AND partition_key LIKE 'FOREIGN%' AND attempts > 0 AND last_error IS NOT NULL) AS failed FROM ${f.table}`);
        return Number(r.rows[0]!.sent) === 12 && Number(r.rows[0]!.failed) === 2;
      }, 60_000, 100);
      const errors = (await f.pool.query<{ last_error: string }>(`SELECT last_error FROM ${f.table} WHERE partition_key LIKE 'FOREIGN%'`)).rows;
      for (const e of errors) expect(e.last_error).toMatch(/publishes only to its given topics/);
      expect(await recordCount(f.transport, foreign)).toBe(0);
      expect(await recordCount(f.transport, f.topic)).toBe(12);
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise<void>((r) => child.once('exit', () => r()));
    }
    // Said once, as a warning naming the topic and the code (the log is JSON lines on stdout).
    expect(logs + stderr).toMatch(/"code":"CEG_FORBIDDEN"/);
  });
});
