/**
 * `ce-gateway topics` creates the catalog's topics (and a subscription's own) and nothing else: no
 * schema registered — that is `schemas register`, which checks compatibility first (a tester saw
 * `topics` register a decimal rescale that `schemas check` calls incompatible) — and an
 * unreachable broker fails it (exit 2) instead of a start-up retried for good.
 */
import { resolve } from 'node:path';
import { createPlatformaticTransport } from '../../src/transport/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { runProcess } from '../helpers/spawn-node.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const prefix = uniqueName('it-topics-cli');
const catalog = catalogWithOwnTopics(prefix);
afterAll(() => catalog.cleanup());

async function cli(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const t0 = performance.now();
  const r = await runProcess(process.execPath, [...CLI_ENTRY, ...args], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent', CATALOG_DIR: catalog.dir, ...env }, timeoutMs: 120_000 });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, ms: performance.now() - t0 };
}

describe('ce-gateway topics', () => {
  it('creates the catalog topics and a subscription\'s own topics, and registers no schema', async () => {
    const s = stackEnv();
    const subjects = async (): Promise<string[]> => ((await (await fetch(`${s.schemaRegistryUrl}/subjects`)).json()) as string[]).filter((x) => x.includes(prefix));
    const r = await cli(['topics', '--subscription', `${prefix}-sub`, '--ordering', 'none', '--json'], { KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl });
    expect(r.code, r.stderr).toBe(0);
    const listed = (JSON.parse(r.stdout) as { name: string }[]).map((t) => t.name);
    expect(listed).toEqual(expect.arrayContaining([`${prefix}-sub.dlq`, `${prefix}-sub.redrive`, `${prefix}-sub.retry`]));
    const transport = createPlatformaticTransport({ clientId: 'it-topics-cli', brokers: s.kafkaBrokers });
    try {
      const made = JSON.parse(r.stdout) as { name: string; partitions: number }[];
      for (const t of made) expect(await transport.partitionCount(t.name), t.name).toBe(t.partitions);
      expect(listed.every((t) => t.startsWith(prefix))).toBe(true);
    } finally {
      await transport.close();
    }
    expect(await subjects()).toEqual([]);
  }, 180_000);

  it('exits 2 naming the failure when the broker cannot be reached (it retried for good before)', async () => {
    const r = await cli(['topics'], { KAFKA_BROKERS: '127.0.0.1:1', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1' });
    expect(r.code, `${r.stderr} (after ${Math.round(r.ms)} ms)`).toBe(2);
    // The form of every broker failure of a command (README "From the command line"), with the
    // client's reason; no adapter operation name (it was `ce-gateway: ensureTopics: …`).
    expect(r.stderr).toMatch(/^ce-gateway topics: kafka: .*ECONNREFUSED 127\.0\.0\.1:1/m);
    expect(r.stderr).not.toContain('ensureTopics');
  }, 180_000);
});
