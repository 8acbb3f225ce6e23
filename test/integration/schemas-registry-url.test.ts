/**
 * `ce-gateway schemas check --registry URL` against the dev stack's Apicurio with the API path left
 * out (`http://host:port` instead of `…/apis/ccompat/v7`): the registry answers every subject with
 * a RESTEasy 404 that is no Confluent "subject not found", so the check could not see the history
 * and must not pass (exit 2, naming the URL and the API base, never the credentials). A tester saw
 * `new … no earlier version`, OK, exit 0.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/spawn-node.js';
import { stackEnv } from '../helpers/stack.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ENTRY = join(ROOT, 'test', 'fixtures', 'schemas-cli-entry.ts');
const TSX = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

async function check(registry: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
  for (const n of ['SCHEMA_REGISTRY_URL', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE']) delete env[n];
  const r = await runProcess(process.execPath, ['--import', TSX, ENTRY, 'schemas', 'check', '--catalog', join(ROOT, 'schemas'), '--registry', registry], { cwd: ROOT, env, timeoutMs: 60_000 });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

describe('schemas check --registry with a base URL that is not the API', { timeout: 60_000 }, () => {
  it('exits 2 naming the URL asked and the Apicurio API base; no kind is reported "new"; no credentials in the output', async () => {
    const api = new URL(stackEnv().schemaRegistryUrl);
    const r = await check(`${api.protocol}//admin:s3cretpw@${api.host}`);
    expect(r.code).toBe(2);
    expect(r.stdout).not.toContain('new');
    expect(r.stderr).toContain(`${api.protocol}//${api.host}/subjects/`);
    expect(r.stderr).toContain('/apis/ccompat/v7');
    expect(r.stdout + r.stderr).not.toContain('s3cretpw');
  });
});
