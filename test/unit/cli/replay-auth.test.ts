/**
 * `ce-gateway replay` against a gateway with PARTNERS_FILE (tester report F6): the API key comes
 * from CE_GATEWAY_API_KEY or CE_GATEWAY_API_KEY_FILE (never argv) and goes as `Authorization:
 * Bearer`; `--owner` lets an admin name another partner's subscription, on every subscription
 * request the command makes. The CLI runs as a process; the gateway is in-memory, in this process.
 * Also the shared client (src/cli/gateway-client.ts) on its own: where the key comes from, and which
 * requests get `owner`.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import type { Gateway } from '../../../src/app/index.js';
import { checkConfiguration } from '../../../src/cli/commands/config.js';
import { GatewayClient, apiKeyFrom } from '../../../src/cli/gateway-client.js';
import { loadConfig } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { partnersSetup } from '../../helpers/partners.js';
import type { PartnersSetup } from '../../helpers/partners.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const run = promisify(execFile);

/** The CLI with only `vars` of ours (no stack settings, no env file: it runs in a temporary folder). */
async function cli(args: string[], vars: Record<string, string> = {}): Promise<{ stdout: string; stderr: string; code: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', ...vars };
  for (const name of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'CONNECTORS_DIR', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE', 'PARTNERS_FILE', 'CE_GATEWAY_API_KEY', 'CE_GATEWAY_API_KEY_FILE']) if (vars[name] === undefined) delete env[name];
  return run(process.execPath, [...CLI_ENTRY, ...args], { cwd: tmpdir(), env }).then(
    (r) => ({ ...r, code: 0 }),
    (err: { stdout: string; stderr: string; code: number }) => ({ stdout: err.stdout, stderr: err.stderr, code: err.code }),
  );
}

let setup: PartnersSetup;
let gw: Gateway;
let url: string;
let dir: string;
const name = 'replayed';

beforeAll(async () => {
  setup = partnersSetup(`clireplay${Date.now().toString(36)}`);
  process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
  dir = mkdtempSync(join(tmpdir(), 'ceg-cli-key-'));
  gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...setup.env }), silentLogger());
  url = `http://127.0.0.1:${(await gw.listen()).port}`;
  await gw.ready;
  await gw.subscriptionsLoaded();
  // globex may replay its own subscriptions (permission `replay`); ops is an admin.
  const res = await fetch(`${url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${setup.keys.globex}` }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
  expect(res.status, await res.text()).toBe(201);
}, 30_000);

afterAll(async () => {
  await gw?.close();
  setup?.cleanup();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const replay = (more: string[] = []): string[] => ['replay', name, '--to-earliest', '--dry-run', '--gateway', url, '--json', ...more];

describe('ce-gateway replay against a gateway with partners', { timeout: 120_000 }, () => {
  it('without a key: exit 2 with the 401 and what to set', async () => {
    const r = await cli(replay());
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('ce-gateway replay: 401 CEG_UNAUTHENTICATED');
    expect(r.stderr).toContain('set CE_GATEWAY_API_KEY, or CE_GATEWAY_API_KEY_FILE');
  });

  it('with CE_GATEWAY_API_KEY, or CE_GATEWAY_API_KEY_FILE: the owner\'s dry run answers; the key is never printed', async () => {
    const file = join(dir, 'globex.key');
    writeFileSync(file, `${setup.keys.globex}\n`);
    // Four CLI processes at once (each starts tsx: seconds on a shared machine).
    const [direct, fromFile, wrong, missing] = await Promise.all([
      cli(replay(), { CE_GATEWAY_API_KEY: setup.keys.globex }),
      cli(replay(), { CE_GATEWAY_API_KEY_FILE: file }),
      cli(replay(), { CE_GATEWAY_API_KEY: 'not-the-key-0123456789abcdef' }),
      cli(replay(), { CE_GATEWAY_API_KEY_FILE: join(dir, 'no-such.key') }),
    ]);
    expect(direct.code, direct.stderr).toBe(0);
    expect(JSON.parse(direct.stdout)).toMatchObject({ type: 'replay', dryRun: true, by: 'globex', to: 'earliest' });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toMatchObject({ type: 'replay', dryRun: true, by: 'globex' });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('401 CEG_UNAUTHENTICATED');
    expect(wrong.stderr).toContain('did not accept the API key');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('CE_GATEWAY_API_KEY_FILE: cannot read');
    for (const r of [direct, fromFile, wrong]) expect(r.stdout + r.stderr).not.toContain(setup.keys.globex);
  });

  it('an admin key names another partner\'s subscription with --owner (without it: 404 and the hint)', async () => {
    const [mine, theirs, acme, bad] = await Promise.all([
      cli(replay(), { CE_GATEWAY_API_KEY: setup.keys.ops }),
      cli(replay(['--owner', 'globex']), { CE_GATEWAY_API_KEY: setup.keys.ops }),
      // A partner that is no admin cannot: ?owner= is 404 for it.
      cli(replay(['--owner', 'globex']), { CE_GATEWAY_API_KEY: setup.keys.acme }),
      cli(replay(['--owner', '../x']), { CE_GATEWAY_API_KEY: setup.keys.ops }),
    ]);
    expect(mine.code).toBe(2);
    expect(mine.stderr).toContain('404');
    expect(mine.stderr).toContain('--owner');
    expect(theirs.code, theirs.stderr).toBe(0);
    expect(JSON.parse(theirs.stdout)).toMatchObject({ type: 'replay', dryRun: true, by: 'ops' });
    expect(theirs.stdout + theirs.stderr).not.toContain(setup.keys.ops);
    expect(acme.code).toBe(2);
    expect(acme.stderr).toContain('404');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--owner');
  });

  it('a real replay: the read of the subscription (for the drain watch) carries the key and --owner too', async () => {
    const seen: { method: string; url: string; authorization: string | undefined }[] = [];
    const fake = createServer((req, res) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
      req.resume();
      if (req.method === 'POST') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ at: new Date().toISOString(), by: 'ops', to: 'earliest', dryRun: false, partitions: { '0': { from: '5', to: '0', events: 5, skipped: 0 } }, events: 5, skipped: 0 }));
      } else {
        res.statusCode = 404;
        res.setHeader('content-type', 'application/problem+json');
        res.end(JSON.stringify({ code: 'CEG_NOT_FOUND', detail: 'stopped here by the test' }));
      }
    });
    fake.listen(0, '127.0.0.1');
    await once(fake, 'listening');
    try {
      const base = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
      const r = await cli(['replay', 'orders', '--to-earliest', '--gateway', base, '--owner', 'globex', '--json'], { CE_GATEWAY_API_KEY: setup.keys.ops, KAFKA_BROKERS: '127.0.0.1:1' });
      // The replay was done; only the watch failed (exit 1, not 2: nothing says "run it again").
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('orders was replayed (5 events again; the offsets moved, delivery goes on) — do not run the replay again; only watching the backlog drain failed: cannot read orders: 404 CEG_NOT_FOUND stopped here by the test');
      expect(seen).toEqual([
        { method: 'POST', url: '/subscriptions/orders/replay?owner=globex', authorization: `Bearer ${setup.keys.ops}` },
        { method: 'GET', url: '/subscriptions/orders?owner=globex', authorization: `Bearer ${setup.keys.ops}` },
      ]);
    } finally {
      fake.close();
    }
  });
});

describe('the CLI\'s gateway client', () => {
  it('the key: the variable and the file both set is an error; an empty variable counts as unset; an empty or unreadable file, or a key no header can carry, is an error naming the variable, never the key', () => {
    const d = mkdtempSync(join(tmpdir(), 'ceg-cli-key-'));
    try {
      const file = join(d, 'key');
      writeFileSync(file, '  from-the-file\n');
      expect(apiKeyFrom({})).toBeUndefined();
      expect(apiKeyFrom({ CE_GATEWAY_API_KEY: '', CE_GATEWAY_API_KEY_FILE: '' })).toBeUndefined();
      expect(() => apiKeyFrom({ CE_GATEWAY_API_KEY: 'direct-secret', CE_GATEWAY_API_KEY_FILE: file })).toThrow(/^CE_GATEWAY_API_KEY: set either CE_GATEWAY_API_KEY or CE_GATEWAY_API_KEY_FILE, not both/);
      expect(apiKeyFrom({ CE_GATEWAY_API_KEY: 'direct' })).toBe('direct');
      expect(apiKeyFrom({ CE_GATEWAY_API_KEY: '', CE_GATEWAY_API_KEY_FILE: file })).toBe('from-the-file');
      writeFileSync(file, '\n');
      expect(() => apiKeyFrom({ CE_GATEWAY_API_KEY_FILE: file })).toThrow(/CE_GATEWAY_API_KEY_FILE: .* is empty/);
      expect(() => apiKeyFrom({ CE_GATEWAY_API_KEY_FILE: join(d, 'none') })).toThrow(/CE_GATEWAY_API_KEY_FILE: cannot read .* \(ENOENT\)/);
      expect(() => apiKeyFrom({ CE_GATEWAY_API_KEY: 'two words-secret' })).toThrow(/^CE_GATEWAY_API_KEY: an API key is visible ASCII/);
      try {
        apiKeyFrom({ CE_GATEWAY_API_KEY: 'line\r\nbreak-secret' });
      } catch (err) {
        expect((err as Error).message).not.toContain('secret');
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('config check knows the client\'s variables (no "a typo?" warning for them)', () => {
    const r = checkConfiguration({ CE_GATEWAY_API_KEY: 'k', CE_GATEWAY_API_KEY_FILE: '/nowhere', CE_GATEWAY_APIKEY: 'typo' }, tmpdir());
    expect(r.warnings).toEqual(['CE_GATEWAY_APIKEY is not a setting of ce-gateway (a typo?); it is ignored']);
  });

  it('owner goes on every /subscriptions request, encoded, and on nothing else', () => {
    const c = new GatewayClient({ base: 'http://gw.example:8080/', owner: 'globex' });
    expect(c.base).toBe('http://gw.example:8080');
    expect(c.url(GatewayClient.subscriptionPath('a b/c', '/replay'))).toBe('http://gw.example:8080/subscriptions/a%20b%2Fc/replay?owner=globex');
    expect(c.url(GatewayClient.subscriptionPath('orders'))).toBe('http://gw.example:8080/subscriptions/orders?owner=globex');
    expect(c.url('/subscriptions')).toBe('http://gw.example:8080/subscriptions?owner=globex');
    expect(c.url('/catalog')).toBe('http://gw.example:8080/catalog');
    expect(new GatewayClient({ base: 'http://gw.example:8080' }).url('/subscriptions/orders')).toBe('http://gw.example:8080/subscriptions/orders');
  });
});
