/**
 * OPS_PORT / OPS_HOST: `serve`'s plain operations listener (/metrics, /healthz, /readyz without TLS
 * or partner authentication). Validated with the rest of the configuration: a bad value is a
 * problem naming its variable, `config check` reports it (and the listener when valid), and both
 * `config check` and `serve` exit 2 on it, as on any configuration error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkConfiguration } from '../../../src/cli/commands/config.js';
import { CONFIG_HELP, CONFIG_KEYS, checkConfig, loadConfig } from '../../../src/config/index.js';
import { runProcess } from '../../helpers/spawn-node.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const dir = mkdtempSync(join(tmpdir(), 'ceg-ops-port-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const base = { CE_GATEWAY_ENV_FILE: '/dev/null' };
const problemsOf = (vars: Record<string, string>): string[] => checkConfig(vars).problems.map((p) => `${p.variable}: ${p.message}`);

describe('OPS_PORT / OPS_HOST', () => {
  it('unset: no ops listener (as before)', () => {
    expect(loadConfig({}).ops).toBeUndefined();
  });

  it('set: the port, on HOST unless OPS_HOST says otherwise', () => {
    expect(loadConfig({ OPS_PORT: '9090' }).ops).toEqual({ port: 9090, host: '127.0.0.1' });
    expect(loadConfig({ HOST: '0.0.0.0', OPS_PORT: '9090' }).ops).toEqual({ port: 9090, host: '0.0.0.0' });
    expect(loadConfig({ HOST: '0.0.0.0', OPS_PORT: '9090', OPS_HOST: '10.0.0.7' }).ops).toEqual({ port: 9090, host: '10.0.0.7' });
    // 0 = any free port, also beside PORT=0: two ephemeral ports never collide.
    expect(loadConfig({ PORT: '0', OPS_PORT: '0' }).ops).toEqual({ port: 0, host: '127.0.0.1' });
  });

  it('refused, naming the variable: not a TCP port, the same as PORT (also PORT\'s default), OPS_HOST without OPS_PORT', () => {
    expect(problemsOf({ OPS_PORT: '65536' })).toEqual([expect.stringMatching(/^OPS_PORT: /)]);
    expect(problemsOf({ OPS_PORT: 'ops' })).toEqual([expect.stringMatching(/^OPS_PORT: a number/)]);
    expect(problemsOf({ OPS_PORT: ' ' })).toEqual([expect.stringMatching(/^OPS_PORT: a number/)]);
    expect(problemsOf({ OPS_PORT: '-1' })).toEqual([expect.stringMatching(/^OPS_PORT: /)]);
    expect(problemsOf({ PORT: '9000', OPS_PORT: '9000' })).toEqual(['OPS_PORT: must differ from PORT: the ops port is a second, plain-HTTP listener beside the API\'s']);
    expect(problemsOf({ OPS_PORT: '8080' })).toEqual(['OPS_PORT: must differ from PORT: the ops port is a second, plain-HTTP listener beside the API\'s']);
    expect(problemsOf({ OPS_HOST: '0.0.0.0' })).toEqual(['OPS_HOST: needs OPS_PORT (without it there is no ops listener to bind)']);
    // An empty value counts as unset (as for every variable): no listener, no problem.
    expect(problemsOf({ OPS_PORT: '' })).toEqual([]);
    expect(() => loadConfig({ PORT: '9000', OPS_PORT: '9000' })).toThrow(/invalid configuration: OPS_PORT: must differ from PORT/);
  });

  it('is a setting deployment files may use, with its explanation', () => {
    expect(CONFIG_KEYS).toEqual(expect.arrayContaining(['OPS_PORT', 'OPS_HOST']));
    expect(CONFIG_HELP.OPS_PORT).toMatch(/0–65535/);
    expect(CONFIG_HELP.OPS_HOST).toMatch(/default: HOST/);
  });

  it('config check: the problem with what the variable takes; the listener in the summary; a typo of an OPS_ variable warned about', () => {
    const bad = checkConfiguration({ ...base, PORT: '9000', OPS_PORT: '9000' }, dir);
    expect(bad.ok).toBe(false);
    expect(bad.problems).toEqual([{ variable: 'OPS_PORT', message: expect.stringMatching(/must differ from PORT/), expected: CONFIG_HELP.OPS_PORT }]);
    const good = checkConfiguration({ ...base, OPS_PORT: '9090', OPS_HOST: '127.0.0.2', OPS_PROT: '1' }, dir);
    expect(good.ok, JSON.stringify(good.problems)).toBe(true);
    expect(good.settings!.ops).toBe('127.0.0.2:9090 (plain HTTP, no authentication: GET /metrics, /healthz, /readyz)');
    expect(good.warnings).toContain('OPS_PROT is not a setting of ce-gateway (a typo?); it is ignored');
    expect(checkConfiguration(base, dir).settings!.ops).toBeNull();
  });

  it('config check and serve exit 2 on it, saying why', async () => {
    const run = (args: string[], env: Record<string, string>) =>
      runProcess(process.execPath, [...CLI_ENTRY, ...args], { cwd: dir, env: { PATH: process.env.PATH, ...base, ...env }, timeoutMs: 30_000 });
    const [check, serve] = await Promise.all([run(['config', 'check'], { PORT: '9000', OPS_PORT: '9000' }), run(['serve'], { PORT: '0', OPS_HOST: '127.0.0.1' })]);
    expect(check.code).toBe(2);
    expect(check.stdout).toContain('✗ OPS_PORT: must differ from PORT');
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('OPS_HOST: needs OPS_PORT');
  }, 40_000);
});
