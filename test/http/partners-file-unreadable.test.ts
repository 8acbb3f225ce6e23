/**
 * `serve` with a PARTNERS_FILE (or a key's `sha256File`, or a TLS file) it cannot read: exit 2,
 * naming the variable, the path and why (the errno code: a missing file, a directory, no
 * permission), as an unreadable `*_FILE` variable already does (config.ts). Without the reason an
 * operator cannot tell a wrong mount path from a Secret mounted with the wrong mode.
 * The in-memory transport: start-up stops before anything connects.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/spawn-node.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'partners-unreadable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(vars: Record<string, string>): ReturnType<typeof runProcess> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, CE_GATEWAY_ENV_FILE: '/dev/null', HOST: '127.0.0.1', PORT: '0', ...vars };
  return runProcess(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: ROOT, env, timeoutMs: 60_000 });
}

describe('an unreadable partners or TLS file stops start-up saying why', () => {
  it('PARTNERS_FILE missing: exit 2, ENOENT', async () => {
    const r = await serve({ PARTNERS_FILE: join(dir, 'missing.yaml') });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`PARTNERS_FILE: cannot read ${join(dir, 'missing.yaml')} (ENOENT)`);
  }, 90_000);

  it('PARTNERS_FILE a directory: exit 2, EISDIR', async () => {
    const r = await serve({ PARTNERS_FILE: dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`PARTNERS_FILE: cannot read ${dir} (EISDIR)`);
  }, 90_000);

  it('a key sha256File missing: exit 2, its place and ENOENT', async () => {
    const file = join(dir, 'partners.yaml');
    writeFileSync(file, `partners:\n  - id: acme\n    keys: [{ sha256File: ${join(dir, 'acme.sha256')} }]\n    publish: ["*"]\n`);
    const r = await serve({ PARTNERS_FILE: file });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`partners[0].keys[0]: cannot read ${join(dir, 'acme.sha256')} (ENOENT)`);
  }, 90_000);

  it('TLS_CERT_FILE missing: exit 2, ENOENT', async () => {
    const r = await serve({ TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem') });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`TLS_CERT_FILE: cannot read ${join(dir, 'cert.pem')} (ENOENT)`);
  }, 90_000);
});
