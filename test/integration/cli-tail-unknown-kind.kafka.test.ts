/**
 * `ce-gateway tail <kind>` with a kind the catalog does not have exits 2 and names the kinds it
 * has, as `connectors check` does for `kinds[i]`. It used to send the user to
 * "ce-gateway catalog", a command group that lists no kinds (it only has `generate` and `export`).
 * The real CLI in a child process against the stack; nothing is read.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../src/catalog/index.js';
import { runProcess } from '../helpers/spawn-node.js';
import { stackEnv } from '../helpers/stack.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

describe('tail with an unknown kind', () => {
  it('exits 2 naming the catalog\'s kinds, not a command that does not list them', async () => {
    const s = stackEnv();
    const r = await runProcess(process.execPath, [...CLI_ENTRY, 'tail', 'NoSuchKind'], {
      cwd: ROOT,
      env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, LOG_LEVEL: 'warn' },
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('unknown event kind "NoSuchKind"');
    for (const kind of loadCatalog().kinds) expect(r.stderr).toContain(kind.name);
    expect(r.stderr).not.toContain('see ce-gateway catalog');
  }, 90_000);
});
