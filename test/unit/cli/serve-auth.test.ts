/**
 * Issue 11: without authentication (no PARTNERS_FILE, or AUTH=none) `ce-gateway serve` runs only
 * on a loopback address, warning loudly; bound elsewhere it refuses to start with exit code 2 and
 * says why. Run as a process on the in-memory adapters.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';


function serve(vars: Record<string, string>): { out: () => string; exited: Promise<number | null>; kill: () => void } {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', PORT: '0', ...vars };
  for (const name of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'CONNECTORS_DIR', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE', 'PARTNERS_FILE']) if (vars[name] === undefined) delete env[name];
  const child = spawn(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: tmpdir(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return { out: () => stderr, exited: new Promise((r) => child.on('exit', (code) => r(code))), kill: () => child.kill('SIGTERM') };
}

describe('ce-gateway serve without authentication', { timeout: 60_000 }, () => {
  it('bound beyond loopback: exits 2 saying to set PARTNERS_FILE or bind to loopback', async () => {
    for (const vars of [{ HOST: '0.0.0.0' }, { HOST: '0.0.0.0', AUTH: 'none' }] as Record<string, string>[]) {
      const p = serve(vars);
      const code = await p.exited;
      expect(code, p.out()).toBe(2);
      expect(p.out()).toContain('refusing to serve without authentication on 0.0.0.0');
      expect(p.out()).toContain('PARTNERS_FILE');
      expect(p.out()).not.toContain('"msg":"listening"');
    }
  });

  it('on loopback: serves, with a loud warning', async () => {
    const p = serve({ HOST: '127.0.0.1' });
    try {
      await waitFor('the listening line', () => p.out().includes('"msg":"listening"'), 45_000);
    } finally {
      p.kill();
    }
    await p.exited;
    expect(p.out()).toMatch(/"level":40,.*AUTHENTICATION IS OFF/);
  });
});
