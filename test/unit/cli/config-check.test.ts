/**
 * Issue 15 "Configuration": `ce-gateway config check` explains every problem (the variable, what
 * is wrong, what it takes) and exits 2; a valid configuration exits 0 with a summary; secret
 * values are never printed, only whether and from where each secret is set.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkConfiguration } from '../../../src/cli/commands/config.js';
import { CONFIG_HELP, CONFIG_KEYS, SECRET_KEYS } from '../../../src/config/index.js';
import { runProcess } from '../../helpers/spawn-node.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'ceg-config-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SECRET = 'hunter2-do-not-print';
const base = { CE_GATEWAY_ENV_FILE: '/dev/null' };

describe('config check', () => {
  it('every setting has an explanation', () => {
    const settings = CONFIG_KEYS.filter((k) => !k.endsWith('_FILE'));
    expect(settings.filter((k) => CONFIG_HELP[k] === undefined)).toEqual([]);
  });

  it('lists every problem with its variable and what it takes; never a secret value', () => {
    const r = checkConfiguration({ ...base, PORT: '99999', KAFKA_BROKERS: 'no-port', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_PASSWORD: SECRET, SCHEMA_REGISTRY_PASSWORD_FILE: join(dir, 'missing'), INGRESS_ACK_TIMOUT_MS: '5' }, dir);
    expect(r.ok).toBe(false);
    expect(r.problems.map((p) => p.variable).sort()).toEqual(['KAFKA_BROKERS', 'KAFKA_SASL_MECHANISM', 'PORT', 'SCHEMA_REGISTRY_PASSWORD_FILE']);
    expect(r.problems.find((p) => p.variable === 'PORT')!.expected).toMatch(/0–65535/);
    expect(r.warnings).toEqual(['INGRESS_ACK_TIMOUT_MS is not a setting of ce-gateway (a typo?); it is ignored']);
    expect(JSON.stringify(r)).not.toContain(SECRET);
  });

  it('a valid configuration: a summary saying which secrets are set and from where, without their values', () => {
    const file = join(dir, 'sasl-password');
    writeFileSync(file, `${SECRET}\n`);
    const r = checkConfiguration({ ...base, KAFKA_BROKERS: '127.0.0.1:9092', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD_FILE: file }, dir);
    expect(r.problems).toEqual([]);
    expect(r.ok).toBe(true);
    const secrets = r.settings!.secrets as Record<string, string>;
    expect(Object.keys(secrets).sort()).toEqual([...SECRET_KEYS].sort());
    expect(secrets.KAFKA_SASL_PASSWORD).toBe(`set (file ${file})`);
    expect(secrets.KAFKA_SASL_USERNAME).toBe('set (environment)');
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect(JSON.stringify(r)).not.toContain('svc');
  });

  it('registry credentials given as the user info of SCHEMA_REGISTRY_URL are said to be set there, not "not set"', () => {
    const r = checkConfiguration({ ...base, SCHEMA_REGISTRY_URL: `https://svc:${SECRET}@registry.example/apis/ccompat/v7` }, dir);
    expect(r.ok, JSON.stringify(r.problems)).toBe(true);
    const secrets = r.settings!.secrets as Record<string, string>;
    expect(secrets.SCHEMA_REGISTRY_USERNAME).toBe('set (user info of SCHEMA_REGISTRY_URL)');
    expect(secrets.SCHEMA_REGISTRY_PASSWORD).toBe('set (user info of SCHEMA_REGISTRY_URL)');
    expect(JSON.stringify(r)).not.toContain(SECRET);
    const plain = checkConfiguration({ ...base, SCHEMA_REGISTRY_URL: 'https://registry.example/apis/ccompat/v7' }, dir);
    expect((plain.settings!.secrets as Record<string, string>).SCHEMA_REGISTRY_PASSWORD).toBe('not set');
  });

  it('the stack\'s env file: its KAFKA_LIBS and DATABASE_URL (the tests\', not a setting: serve reads no database) are no typo, and a secret from it is said to come from it, not from the environment', () => {
    const envFile = join(dir, 'stack.env');
    writeFileSync(envFile, `KAFKA_BROKERS=127.0.0.1:9092\nKAFKA_LIBS=/opt/kafka/libs\nDATABASE_URL=postgres://cegw:${SECRET}@127.0.0.1:15432/cegw\nOUTBOX_DATABASE_URL=postgres://cegw:${SECRET}@127.0.0.1:15432/cegw\n`);
    // CE_GATEWAY_STACK_DIR and CE_GATEWAY_CACHE_DIR are the stack's own folders, no typo either.
    const r = checkConfiguration({ CE_GATEWAY_ENV_FILE: envFile, KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: 'p', CE_GATEWAY_STACK_DIR: '/tmp/stack-b', CE_GATEWAY_CACHE_DIR: '/tmp/cache' }, dir);
    expect(r.ok, JSON.stringify(r.problems)).toBe(true);
    expect(r.warnings).toEqual([]);
    const secrets = r.settings!.secrets as Record<string, string>;
    expect(secrets).not.toHaveProperty('DATABASE_URL');
    expect(secrets.OUTBOX_DATABASE_URL).toBe(`set (env file ${envFile})`);
    expect(secrets.KAFKA_SASL_USERNAME).toBe('set (environment)');
    expect(JSON.stringify(r)).not.toContain(SECRET);
  });

  it('warns when push subscriptions and pulls would have no secrets key: Kafka, a HOST beyond loopback, no SUBSCRIPTION_SECRETS_KEY', () => {
    const partners = join(dir, 'partners-for-key.yaml');
    writeFileSync(partners, 'partners:\n  - id: acme\n    keys: [{ sha256: "' + 'ab'.repeat(32) + '" }]\n    sources: [urn:partner:acme]\n    publish: ["*"]\n    subscribe: ["*"]\n');
    const wide = checkConfiguration({ ...base, KAFKA_BROKERS: '127.0.0.1:9092', HOST: '0.0.0.0', PARTNERS_FILE: partners }, dir);
    expect(wide.problems).toEqual([]);
    expect(wide.warnings).toEqual([expect.stringMatching(/^SUBSCRIPTION_SECRETS_KEY is not set: .*500 CEG_SECRETS_KEY_MISSING/)]);
    expect(checkConfiguration({ ...base, KAFKA_BROKERS: '127.0.0.1:9092', HOST: '0.0.0.0', PARTNERS_FILE: partners, SUBSCRIPTION_SECRETS_KEY: 'cd'.repeat(32) }, dir).warnings).toEqual([]);
    // Loopback or in-memory: the development key applies, no warning.
    expect(checkConfiguration({ ...base, KAFKA_BROKERS: '127.0.0.1:9092' }, dir).warnings).toEqual([]);
    expect(checkConfiguration({ ...base, HOST: '0.0.0.0', PARTNERS_FILE: partners }, dir).warnings).toEqual([]);
  });

  it('warns when CONNECTORS_DIR has no connector files but a sub-folder has (the repository\'s connectors/: serve would start none of its examples)', () => {
    const r = checkConfiguration({ ...base, CONNECTORS_DIR: join(ROOT, 'connectors') }, dir);
    expect(r.problems).toEqual([]);
    expect(r.warnings).toEqual([`CONNECTORS_DIR ${join(ROOT, 'connectors')} has no connector files (*.yaml / *.yml directly in it), so serve starts no connector from it (sub-folders are not read): ${join(ROOT, 'connectors', 'examples')} holds 2; check one with \`ce-gateway connectors check ${join(ROOT, 'connectors', 'examples')}\``]);
    // A folder that holds them, or an empty one without sub-folders: nothing to warn about.
    expect(checkConfiguration({ ...base, CONNECTORS_DIR: join(ROOT, 'connectors', 'examples') }, dir).warnings).toEqual([]);
    const empty = join(dir, 'no-connectors');
    mkdirSync(empty);
    expect(checkConfiguration({ ...base, CONNECTORS_DIR: empty }, dir).warnings).toEqual([]);
  });

  it('a catalog that does not load is a problem of CATALOG_DIR', () => {
    const r = checkConfiguration({ ...base, CATALOG_DIR: join(dir, 'nowhere') }, dir);
    expect(r.ok).toBe(false);
    expect(r.problems.map((p) => p.variable)).toEqual(['CATALOG_DIR']);
  });

  it('runs what serve checks at start: a partners file that does not load, no authentication beyond loopback, TLS files that are no pair, a bad allow list, an unreadable JWKS (each said OK, then serve exited 2)', () => {
    const partnersDir = join(dir, 'partners-is-a-folder');
    mkdirSync(partnersDir, { recursive: true });
    const garbage = join(dir, 'garbage.pem');
    writeFileSync(garbage, 'not a certificate');
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ PARTNERS_FILE: partnersDir }, 'PARTNERS_FILE', /PARTNERS_FILE/],
      [{ HOST: '0.0.0.0' }, 'HOST', /no authentication on 0\.0\.0\.0/],
      [{ TLS_CERT_FILE: garbage, TLS_KEY_FILE: garbage }, 'TLS_CERT_FILE', /not a matching PEM certificate and key/],
      [{ WEBHOOK_ALLOWED_HOSTS: 'not a host!!,999.1.1.1/99' }, 'WEBHOOK_ALLOWED_HOSTS', /not a host name, address or CIDR/],
    ];
    for (const [env, variable, message] of cases) {
      const r = checkConfiguration({ ...base, ...env }, dir);
      expect(r.ok, variable).toBe(false);
      expect(r.problems.map((p) => p.variable), variable).toEqual([variable]);
      expect(r.problems[0]!.message).toMatch(message);
    }
    const partners = join(dir, 'partners.yaml');
    writeFileSync(partners, `partners:\n  - id: acme\n    keys: [{ sha256: ${'a'.repeat(64)} }]\n`);
    const oidc = checkConfiguration({ ...base, PARTNERS_FILE: partners, OIDC_ISSUER: 'https://idp.example', OIDC_AUDIENCE: 'gw', OIDC_JWKS_FILE: join(dir, 'no-jwks.json') }, dir);
    expect(oidc.problems.map((p) => [p.variable, p.message])).toEqual([['OIDC_JWKS_FILE', expect.stringMatching(/is not a readable JWKS/)]]);
    // Both forms of a secret: a problem naming the variable, as `serve` refuses it (the value not printed).
    const both = checkConfiguration({ ...base, KAFKA_SASL_PASSWORD: SECRET, KAFKA_SASL_PASSWORD_FILE: partners }, dir);
    expect(both.ok).toBe(false);
    expect(both.problems.map((p) => [p.variable, p.message])).toEqual([['KAFKA_SASL_PASSWORD', 'set either KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE, not both (which one is meant cannot be told)']]);
    expect(JSON.stringify(both)).not.toContain(SECRET);
    // The same partners file alone is fine, and so is a loopback HOST without one.
    expect(checkConfiguration({ ...base, PARTNERS_FILE: partners, HOST: '0.0.0.0' }, dir).ok).toBe(true);
    expect(checkConfiguration({ ...base, HOST: '127.0.0.1' }, dir).ok).toBe(true);
  });

  it('says who may call the API — off, the partners file, OIDC with its issuer — and how many partners and keys it loaded, never a key or hash; a partner no request can authenticate as is a warning', () => {
    const h1 = 'a1'.repeat(32);
    const h2 = 'b2'.repeat(32);
    const h3 = 'c3'.repeat(32);
    const file = join(dir, 'partners-counted.yaml');
    writeFileSync(file, `partners:\n  - id: acme\n    keys: [{ sha256: ${h1} }, { sha256Env: ACME_NEXT }]\n  - id: globex\n    keys: []\n  - id: initech\n    keys: [{ sha256: ${h3} }]\n`);
    const r = checkConfiguration({ ...base, PARTNERS_FILE: file, ACME_NEXT: h2 }, dir);
    expect(r.problems).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.settings).toMatchObject({ auth: `partners file ${file} (API keys)`, partners: 3, partnerKeys: 3 });
    // Loaded (as serve loads it: emptying keys revokes), but said: nothing can sign in as globex.
    expect(r.warnings).toEqual([expect.stringMatching(/^partner globex \(PARTNERS_FILE partners\[1\]\.keys\) has no keys and OIDC is off: it cannot authenticate, every request made as it gets 401 CEG_UNAUTHENTICATED/)]);
    for (const h of [h1, h2, h3]) expect(JSON.stringify(r)).not.toContain(h);
    // With OIDC: the issuer and the claim; a partner without keys signs in with tokens, no warning.
    const oidc = checkConfiguration({ ...base, PARTNERS_FILE: file, ACME_NEXT: h2, OIDC_ISSUER: 'https://idp.example/realms/gw', OIDC_AUDIENCE: 'gw', OIDC_JWKS_URL: 'https://idp.example/jwks' }, dir);
    expect(oidc.problems).toEqual([]);
    expect(oidc.settings).toMatchObject({ auth: `partners file ${file} (API keys) and OIDC tokens (issuer https://idp.example/realms/gw, claim sub)`, partners: 3, partnerKeys: 3 });
    expect(oidc.warnings).toEqual([]);
    // Off: nobody is checked; no partner counted (AUTH=none does not read the file).
    expect(checkConfiguration({ ...base }, dir).settings).toMatchObject({ auth: 'off (no PARTNERS_FILE): every caller is the anonymous admin; serve binds only to a loopback HOST', partners: null, partnerKeys: null });
    expect(checkConfiguration({ ...base, AUTH: 'none', PARTNERS_FILE: file }, dir).settings).toMatchObject({ auth: expect.stringMatching(/^off \(AUTH=none: PARTNERS_FILE is not read\)/), partners: null, partnerKeys: null });
    // A file that does not load is a problem; nothing counted.
    const broken = join(dir, 'partners-broken.yaml');
    writeFileSync(broken, 'partners: []\n');
    const bad = checkConfiguration({ ...base, PARTNERS_FILE: broken }, dir);
    expect(bad.problems.map((p) => p.variable)).toEqual(['PARTNERS_FILE']);
    expect(bad.settings).toMatchObject({ partners: null, partnerKeys: null });
  });

  it('a CE_GATEWAY_BROKER_TIMEOUT_MS the CLI\'s Kafka commands refuse is a problem (break report D4: it said OK, then every Kafka command exited 2)', () => {
    for (const bad of ['abc', '0', '30s', '-1']) {
      const r = checkConfiguration({ ...base, CE_GATEWAY_BROKER_TIMEOUT_MS: bad }, dir);
      expect(r.ok, bad).toBe(false);
      expect(r.problems.map((p) => p.variable), bad).toEqual(['CE_GATEWAY_BROKER_TIMEOUT_MS']);
      expect(r.problems[0]!.message, bad).toMatch(/whole number from 1 to \d+/);
      expect(r.problems[0]!.expected, bad).toMatch(/default 30000/);
    }
    // Also next to the settings' own problems, and fine when valid or unset.
    expect(checkConfiguration({ ...base, PORT: '99999', CE_GATEWAY_BROKER_TIMEOUT_MS: 'abc' }, dir).problems.map((p) => p.variable).sort()).toEqual(['CE_GATEWAY_BROKER_TIMEOUT_MS', 'PORT']);
    expect(checkConfiguration({ ...base, CE_GATEWAY_BROKER_TIMEOUT_MS: '5000' }, dir).ok).toBe(true);
    expect(checkConfiguration({ ...base, CE_GATEWAY_BROKER_TIMEOUT_MS: '' }, dir).ok).toBe(true);
  });

  it('the command exits 2 and explains; 0 when valid (a real process)', async () => {
    const run = (env: Record<string, string>) =>
      runProcess(process.execPath, [...CLI_ENTRY, 'config', 'check'], { cwd: dir, env: { PATH: process.env.PATH, ...base, ...env }, timeoutMs: 30_000 });
    const bad = await run({ SHUTDOWN_TIMEOUT_MS: 'soon', OUTBOX_DATABASE_URL: `mysql://u:${SECRET}@h/db` });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toContain('✗ SHUTDOWN_TIMEOUT_MS:');
    expect(bad.stdout).toContain('✗ OUTBOX_DATABASE_URL: a postgres:// URL');
    expect(bad.stdout + bad.stderr).not.toContain(SECRET);
    const deadline = await run({ CE_GATEWAY_BROKER_TIMEOUT_MS: 'abc' });
    expect(deadline.code).toBe(2);
    expect(deadline.stdout).toContain('✗ CE_GATEWAY_BROKER_TIMEOUT_MS:');
    const good = await run({});
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/^configuration OK/);
    expect(good.stdout.trimEnd().split('\n').at(-1)).toBe('configuration OK: no problems, no warnings; exit 0');
    expect(good.stdout).toContain('\n  auth: off (no PARTNERS_FILE): every caller is the anonymous admin; serve binds only to a loopback HOST\n  partners: -\n  partnerKeys: -\n');
    // A partners file: the mode, the counts, and a partner without keys as a warning (still exit 0).
    const partners = join(dir, 'partners-text.yaml');
    writeFileSync(partners, `partners:\n  - id: acme\n    keys: [{ sha256: ${'d4'.repeat(32)} }]\n  - id: globex\n`);
    const authed = await run({ PARTNERS_FILE: partners });
    expect(authed.code, authed.stdout + authed.stderr).toBe(0);
    expect(authed.stdout).toContain(`\n  ! partner globex (PARTNERS_FILE partners[1].keys) has no keys and OIDC is off:`);
    expect(authed.stdout).toContain(`\n  auth: partners file ${partners} (API keys)\n  partners: 2\n  partnerKeys: 1\n`);
    expect(authed.stdout).not.toContain('d4'.repeat(32));
    expect(authed.stdout.trimEnd().split('\n').at(-1)).toBe('configuration OK: no problems, 1 warning; exit 0');
    // The global --log-level is checked as serve takes it (it wins over LOG_LEVEL); it was ignored.
    const loud = await runProcess(process.execPath, [...CLI_ENTRY, '--log-level', 'loud', 'config', 'check'], { cwd: dir, env: { PATH: process.env.PATH, ...base }, timeoutMs: 30_000 });
    expect(loud.code).toBe(2);
    expect(loud.stdout).toContain('✗ LOG_LEVEL:');
  }, 60_000);

  it('a failed check ends with the verdict, the counts and the exit code, as a valid one does (walkthrough: it ended with the settings or a warning)', async () => {
    const run = (env: Record<string, string>, json = false) =>
      runProcess(process.execPath, [...CLI_ENTRY, 'config', 'check', ...(json ? ['--json'] : [])], { cwd: dir, env: { PATH: process.env.PATH, ...base, ...env }, timeoutMs: 30_000 });
    // Problems of the settings and a typo: the report ended with the warning.
    const bad = await run({ SHUTDOWN_TIMEOUT_MS: 'soon', PORT: '99999', KAFKA_BROKRS: 'x' });
    expect(bad.code).toBe(2);
    const lines = bad.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('configuration INVALID: 2 problems');
    expect(lines.at(-1)).toBe('configuration INVALID: 2 problems, 1 warning; exit 2');
    // A catalog that does not load: the settings were printed after the problem, and ended the report.
    const catalog = await run({ CATALOG_DIR: join(dir, 'no-catalog') });
    expect(catalog.code).toBe(2);
    expect(catalog.stdout.trimEnd().split('\n').at(-1)).toBe('configuration INVALID: 1 problem, no warnings; exit 2');
    const json = await run({ PORT: '99999' }, true);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, summary: 'configuration INVALID: 1 problem, no warnings; exit 2', exitCode: 2 });
  }, 60_000);
});
