import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_ENVELOPE_LIMITS } from '../../../src/envelope/index.js';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS, SECRET_KEYS, checkConfig, environment, loadConfig, readEnvFile } from '../../../src/config/index.js';
import { DEFAULT_SESSION_TIMEOUT_MS } from '../../../src/config/config.js';
import { resolveKafkaTransportOptions } from '../../../src/transport/index.js';
import { usableCpus } from '../../../src/config/cpu-count.js';
import { caught } from '../../helpers/errors.js';
import { GatewayError } from '../../../src/core/errors.js';
import { DEFAULT_OUTBOX_BATCH_BYTES, MAX_OUTBOX_BATCH_SIZE, outboxTable } from '../../../src/bus/outbox/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ceg-config-'));
function file(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

describe('loadConfig: defaults', () => {
  it('runs on the embedded adapters with documented defaults when nothing is set', () => {
    const c = loadConfig({});
    expect(c.http).toEqual({ port: 8080, host: '127.0.0.1', headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 1024 });
    expect(c.logLevel).toBe('info');
    expect(c.service).toBe('ce-gateway');
    expect(c.instance).toMatch(/^[A-Za-z0-9._-]{1,100}$/);
    expect(c.kafka).toBeUndefined();
    expect(c.registry).toBeUndefined();
    expect(c.outbox.databaseUrl).toBeUndefined();
    expect(c.catalogDir).toBeUndefined();
    expect(c.dataschemaBase).toBe('http://127.0.0.1:8080/schemas/ids/');
    expect(c.ingress).toEqual({ maxBodyBytes: 1_048_576, maxBatchEvents: 1000, ackTimeoutMs: 10_000, retryAfterS: 5, limits: { maxAttributes: 100, maxAttributeBytes: 16_384 } });
    expect(c.ingress.limits).toEqual(DEFAULT_ENVELOPE_LIMITS); // ingress and the consumer side count alike by default
    expect(c.publishQueueCapacity).toBe(10_000);
    expect(c.readinessTimeoutMs).toBe(2000);
    expect(c.shutdownTimeoutMs).toBe(10_000);
  });

  it('treats an empty variable as unset', () => {
    const c = loadConfig({ PORT: '', LOG_LEVEL: '', KAFKA_BROKERS: '' });
    expect(c.http.port).toBe(8080);
    expect(c.logLevel).toBe('info');
    expect(c.kafka).toBeUndefined();
  });

  it('is deeply frozen', () => {
    const c = loadConfig({ KAFKA_BROKERS: 'k:9092' });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.http)).toBe(true);
    expect(Object.isFrozen(c.kafka)).toBe(true);
    expect(Object.isFrozen(c.kafka!.brokers)).toBe(true);
  });
});

describe('loadConfig: values', () => {
  it('reads every variable into its typed place', () => {
    const c = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      LOG_LEVEL: 'debug',
      SERVICE_NAME: 'pdsp',
      INSTANCE_ID: 'host-1',
      KAFKA_BROKERS: 'k1:9092, k2.example:9093,,[::1]:9094',
      KAFKA_CLIENT_ID: 'gw',
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'p',
      SCHEMA_REGISTRY_URL: 'https://reg.example/apis/ccompat/v7//',
      SCHEMA_REGISTRY_USERNAME: 'ru',
      SCHEMA_REGISTRY_PASSWORD: 'rp',
      OUTBOX_DATABASE_URL: 'postgresql://u:p@db/x',
      CATALOG_DIR: '/srv/catalog',
      INGRESS_MAX_BODY_BYTES: '2048',
      INGRESS_MAX_BATCH_EVENTS: '7',
      INGRESS_ACK_TIMEOUT_MS: '250',
      INGRESS_RETRY_AFTER_S: '3',
      INGRESS_MAX_ATTRIBUTES: '40',
      INGRESS_MAX_ATTRIBUTE_BYTES: '4000',
      HTTP_HEADERS_TIMEOUT_MS: '2000',
      HTTP_REQUEST_TIMEOUT_MS: '4000',
      HTTP_MAX_CONNECTIONS: '12',
      PUBLISH_QUEUE_CAPACITY: '50',
      READINESS_TIMEOUT_MS: '100',
    });
    expect(c.http).toEqual({ port: 9000, host: '0.0.0.0', headersTimeoutMs: 2000, requestTimeoutMs: 4000, maxConnections: 12 });
    expect(c.logLevel).toBe('debug');
    expect(c.service).toBe('pdsp');
    expect(c.instance).toBe('host-1');
    expect(c.kafka).toEqual({ brokers: ['k1:9092', 'k2.example:9093', '[::1]:9094'], client: 'platformatic', clientId: 'gw', ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } });
    expect(c.registry).toEqual({ url: 'https://reg.example/apis/ccompat/v7', username: 'ru', password: 'rp' });
    expect(c.outbox.databaseUrl).toBe('postgresql://u:p@db/x');
    expect(c.catalogDir).toBe('/srv/catalog');
    // A wildcard bind address is not reachable: dataschema points at loopback.
    expect(c.dataschemaBase).toBe('http://127.0.0.1:9000/schemas/ids/');
    expect(c.ingress).toEqual({ maxBodyBytes: 2048, maxBatchEvents: 7, ackTimeoutMs: 250, retryAfterS: 3, limits: { maxAttributes: 40, maxAttributeBytes: 4000 } });
    expect(c.publishQueueCapacity).toBe(50);
    expect(c.readinessTimeoutMs).toBe(100);
  });

  it('brackets an IPv6 host in dataschemaBase; DATASCHEMA_BASE_URL wins when set', () => {
    expect(loadConfig({ HOST: '::1', PORT: '81' }).dataschemaBase).toBe('http://[::1]:81/schemas/ids/');
    expect(loadConfig({ DATASCHEMA_BASE_URL: 'https://gw.example/s/' }).dataschemaBase).toBe('https://gw.example/s/');
  });

  it('KAFKA_SSL false and no SASL by default when brokers are set', () => {
    expect(loadConfig({ KAFKA_BROKERS: 'k:1' }).kafka).toEqual({ brokers: ['k:1'], client: 'platformatic', clientId: 'ce-gateway', ssl: false, sasl: undefined });
  });
});

describe('loadConfig: invalid variables', () => {
  it('names every invalid variable at once (CEG_INVALID_OPTIONS, not retriable)', () => {
    const err = caught(() =>
      loadConfig({
        PORT: 'eighty',
        LOG_LEVEL: 'loud',
        KAFKA_BROKERS: 'no-port',
        KAFKA_SSL: 'yes',
        SCHEMA_REGISTRY_URL: 'ftp://reg',
        OUTBOX_DATABASE_URL: 'mysql://u:hunter2@db/x',
        INGRESS_MAX_BODY_BYTES: '0',
        SERVICE_NAME: 'bad name!',
      }),
    );
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.retriable).toBe(false);
    const problems = err.details.problems as string[];
    const named = problems.map((p) => p.slice(0, p.indexOf(':')));
    expect(named.sort()).toEqual(['OUTBOX_DATABASE_URL', 'INGRESS_MAX_BODY_BYTES', 'KAFKA_BROKERS', 'KAFKA_SSL', 'LOG_LEVEL', 'PORT', 'SCHEMA_REGISTRY_URL', 'SERVICE_NAME'].sort());
    for (const n of named) expect(err.message).toContain(n);
    expect(err.message).not.toContain('hunter2');
  });

  it.each([
    [{ PORT: '65536' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ PORT: '80.5' }, 'PORT'],
    [{ KAFKA_BROKERS: 'k:1,nohost' }, 'KAFKA_BROKERS'],
    [{ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' }, 'KAFKA_SASL_MECHANISM'],
    [{ INGRESS_ACK_TIMEOUT_MS: 'soon' }, 'INGRESS_ACK_TIMEOUT_MS'],
    [{ INSTANCE_ID: 'x'.repeat(101) }, 'INSTANCE_ID'],
  ])('refuses %j naming %s', (vars, name) => {
    const err = caught(() => loadConfig(vars));
    expect((err.details.problems as string[]).map((p) => p.split(':')[0])).toEqual([name]);
  });

  it("takes the SASL mechanism in any letter case, as Kafka's documentation spells it (PLAIN, SCRAM-SHA-512)", () => {
    for (const [given, mechanism] of [['PLAIN', 'plain'], ['SCRAM-SHA-256', 'scram-sha-256'], ['Scram-Sha-512', 'scram-sha-512']] as const) {
      const c = loadConfig({ KAFKA_BROKERS: 'k:1', KAFKA_SASL_MECHANISM: given, KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' });
      expect(c.kafka?.sasl?.mechanism, given).toBe(mechanism);
    }
  });

  it('SASL needs username and password; registry credentials go together', () => {
    const err = caught(() => loadConfig({ KAFKA_BROKERS: 'k:1', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', SCHEMA_REGISTRY_URL: 'http://r', SCHEMA_REGISTRY_USERNAME: 'ru' }));
    expect(err.details.problems).toEqual([
      'KAFKA_SASL_MECHANISM: needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD',
      'SCHEMA_REGISTRY_USERNAME: goes together with SCHEMA_REGISTRY_PASSWORD: set both or neither',
    ]);
  });

  it('reports the combination rules together with the invalid values (every problem at once)', () => {
    const err = caught(() => loadConfig({ PORT: 'x', KAFKA_SASL_MECHANISM: 'plain' }));
    const problems = err.details.problems as string[];
    expect(problems.some((p) => p.startsWith('PORT:'))).toBe(true);
    expect(problems).toContain('KAFKA_SASL_MECHANISM: needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD');
  });
});

describe('loadConfig: <NAME>_FILE secrets', () => {
  it('reads a secret from its file, trimmed', () => {
    const c = loadConfig({
      KAFKA_BROKERS: 'k:1',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME_FILE: file('user', 'svc\n'),
      KAFKA_SASL_PASSWORD_FILE: file('pw', '  s3cret \n'),
      OUTBOX_DATABASE_URL_FILE: file('db', 'postgres://u:p@db/x\n'),
    });
    expect(c.kafka?.sasl).toEqual({ mechanism: 'plain', username: 'svc', password: 's3cret' });
    expect(c.outbox.databaseUrl).toBe('postgres://u:p@db/x');
  });

  it('a secret set both as its variable and as its _FILE is refused, naming the variable, neither value echoed (break pass hE: the variable won silently)', () => {
    const pw = file('pw-both', 'file-s3cret-value\n');
    const err = caught(() => loadConfig({ KAFKA_BROKERS: 'k:1', KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'env-s3cret-value', KAFKA_SASL_PASSWORD_FILE: pw }));
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.retriable).toBe(false);
    // Only this problem: the SASL combination rule does not call the password missing as well.
    expect(err.details.problems).toEqual(['KAFKA_SASL_PASSWORD: set either KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE, not both (which one is meant cannot be told)']);
    expect(err.message).not.toMatch(/s3cret-value/);
    for (const name of ['OUTBOX_DATABASE_URL', 'SCHEMA_REGISTRY_USERNAME', 'SUBSCRIPTION_SECRETS_KEY']) {
      const e = caught(() => loadConfig({ [name]: 'env-s3cret-value', [`${name}_FILE`]: pw }));
      expect((e.details.problems as string[]).filter((p) => p.startsWith(`${name}:`)), name).toEqual([`${name}: set either ${name} or ${name}_FILE, not both (which one is meant cannot be told)`]);
      expect(e.message).not.toMatch(/s3cret-value/);
    }
  });

  it('a _FILE that cannot be read is the only problem said about that secret (not also "needs KAFKA_SASL_PASSWORD")', () => {
    const err = caught(() => loadConfig({ KAFKA_BROKERS: 'k:1', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD_FILE: join(dir, 'missing-pw'), SCHEMA_REGISTRY_URL: 'http://r', SCHEMA_REGISTRY_USERNAME: 'ru', SCHEMA_REGISTRY_PASSWORD_FILE: file('empty-pw', '\n') }));
    expect(err.details.problems).toEqual([
      `KAFKA_SASL_PASSWORD_FILE: cannot read ${join(dir, 'missing-pw')} (ENOENT)`,
      `SCHEMA_REGISTRY_PASSWORD_FILE: ${join(dir, 'empty-pw')} is empty`,
    ]);
  });

  it('an empty variable does not hide its _FILE', () => {
    const c = loadConfig({ OUTBOX_DATABASE_URL: '', OUTBOX_DATABASE_URL_FILE: file('db3', 'postgres://file/y') });
    expect(c.outbox.databaseUrl).toBe('postgres://file/y');
  });

  it('an unreadable _FILE is CEG_INVALID_OPTIONS naming the variable', () => {
    const err = caught(() => loadConfig({ SCHEMA_REGISTRY_PASSWORD_FILE: join(dir, 'missing') }));
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.message).toContain('SCHEMA_REGISTRY_PASSWORD_FILE');
  });

  it('a secret read from a file is not echoed when it is invalid', () => {
    const err = caught(() => loadConfig({ OUTBOX_DATABASE_URL_FILE: file('db4', 'mysql://u:topsecret@db/x') }));
    expect(err.message).toContain('OUTBOX_DATABASE_URL');
    expect(err.message).not.toContain('topsecret');
  });
});

describe('values that pass as something else (config break report 1, 3, 5–8)', () => {
  const problemsOf = (vars: Record<string, string>): Record<string, string> => Object.fromEntries(checkConfig(vars).problems.map((p) => [p.variable, p.message]));

  it('refuses a timeout longer than a Node timer holds (it acted as 1 ms: a shutdown with no drain, members stopped at once)', () => {
    for (const v of ['SHUTDOWN_TIMEOUT_MS', 'SUBSCRIPTION_IDLE_STOP_MS', 'INGRESS_ACK_TIMEOUT_MS', 'READINESS_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS', 'OUTBOX_POLL_INTERVAL_MS']) {
      expect(problemsOf({ [v]: '3000000000' })[v], v).toMatch(/<=2147483647/);
      expect(problemsOf({ [v]: '2147483647' })[v], v).toBeUndefined();
    }
  });

  it('refuses a blank number instead of reading it as 0 (PORT=" " listened on a random port)', () => {
    for (const v of ['PORT', 'SUBSCRIPTION_IDLE_STOP_MS', 'PUSH_FETCH_LINGER_MS', 'SHUTDOWN_TIMEOUT_MS', 'HEAP_GROWING_PERCENT']) {
      expect(problemsOf({ [v]: ' ' })[v], v).toMatch(/blank or not a number/);
    }
    expect(problemsOf({ GATEWAY_WORKERS: ' ' }).GATEWAY_WORKERS).toBe('an integer from 1 to 64, or auto');
  });

  it('refuses an empty secret file (a broken mount fell back to "unset": the development key) without printing anything of it', () => {
    const p = file('empty-secret', '  \n');
    expect(problemsOf({ SUBSCRIPTION_SECRETS_KEY_FILE: p })).toEqual({ SUBSCRIPTION_SECRETS_KEY_FILE: `${p} is empty` });
    expect(problemsOf({ OUTBOX_DATABASE_URL_FILE: p })).toEqual({ OUTBOX_DATABASE_URL_FILE: `${p} is empty` });
  });

  it('base URLs: DATASCHEMA_BASE_URL is an http(s) URL; PUBLIC_BASE_URL and SCHEMA_REGISTRY_URL have no query or fragment (paths are appended; a token in the query was published)', () => {
    expect(problemsOf({ DATASCHEMA_BASE_URL: 'notaurl' }).DATASCHEMA_BASE_URL).toBeDefined();
    expect(problemsOf({ PUBLIC_BASE_URL: 'https://gw.example/?token=S3CR3T' })).toEqual({ PUBLIC_BASE_URL: 'a base URL without a query (?…): paths are appended to it' });
    expect(problemsOf({ SCHEMA_REGISTRY_URL: 'http://u:S3CR3T@127.0.0.1:1/apis?token=S3CR3T' })).toEqual({ SCHEMA_REGISTRY_URL: 'a base URL without a query (?…): paths are appended to it' });
    expect(problemsOf({ DATASCHEMA_BASE_URL: 'https://gw.example/ids/#x' })).toEqual({ DATASCHEMA_BASE_URL: 'a base URL without a fragment (#…): paths are appended to it' });
    // The schema id may be appended to a query.
    expect(problemsOf({ DATASCHEMA_BASE_URL: 'https://registry.example/schemas?id=' })).toEqual({});
    expect(JSON.stringify(checkConfig({ SCHEMA_REGISTRY_URL: 'http://u:S3CR3T@127.0.0.1:1/apis?token=S3CR3T' }).problems)).not.toContain('S3CR3T');
  });
});

describe('env file', () => {
  it('readEnvFile reads KEY=value lines, skipping blanks, comments and lines without a key', () => {
    const p = file('env1', '# stack\nKAFKA_BROKERS=127.0.0.1:19092\n\n  PORT = 9000 \nURL=http://x/?a=b\n=nokey\njunk\n');
    expect(readEnvFile(p)).toEqual({ KAFKA_BROKERS: '127.0.0.1:19092', PORT: '9000', URL: 'http://x/?a=b' });
  });

  it('environment(): the environment wins over the file, which fills the rest', () => {
    const p = file('env2', 'PORT=1111\nLOG_LEVEL=debug\n');
    const r = environment({ CE_GATEWAY_ENV_FILE: p, PORT: '2222' }, '/nowhere');
    expect(r.file).toBe(p);
    expect(r.vars.PORT).toBe('2222');
    expect(r.vars.LOG_LEVEL).toBe('debug');
    expect(loadConfig(r.vars).http.port).toBe(2222);
  });

  it('environment(): uses <cwd>/.stack/env by default and only the environment when it is absent', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'ceg-cwd-'));
    expect(environment({ PORT: '1' }, cwd)).toEqual({ vars: { PORT: '1' } });
    const stack = join(cwd, '.stack');
    mkdirSync(stack, { recursive: true });
    writeFileSync(join(stack, 'env'), 'KAFKA_BROKERS=127.0.0.1:19092\n');
    const r = environment({}, cwd);
    expect(r.file).toBe(join(stack, 'env'));
    expect(r.vars.KAFKA_BROKERS).toBe('127.0.0.1:19092');
  });

  it('environment(): a CE_GATEWAY_ENV_FILE naming a missing file is a CEG_INVALID_OPTIONS naming the variable', () => {
    const err = caught(() => environment({ CE_GATEWAY_ENV_FILE: join(dir, 'nope') }, '/'));
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'CEG_INVALID_OPTIONS', retriable: false, details: { variable: 'CE_GATEWAY_ENV_FILE' } });
    expect(err.message).toMatch(/CE_GATEWAY_ENV_FILE names a missing file/);
  });

  it('readEnvFile understands a file written for a shell: export prefixes and quoted values; # inside a value is kept', () => {
    const p = file('env3', ['export LOG_LEVEL="warn"', 'export  PORT=9001', "NAME='a b'", 'PW=p#ss"word', 'HALF="open', 'EMPTY=""', ''].join('\n'));
    expect(readEnvFile(p)).toEqual({ LOG_LEVEL: 'warn', PORT: '9001', NAME: 'a b', PW: 'p#ss"word', HALF: '"open', EMPTY: '' });
    expect(loadConfig(readEnvFile(p)).logLevel).toBe('warn');
  });
});

describe('KAFKA_CLIENT: the Kafka client library behind the transport (issue 14)', () => {
  it('defaults to platformatic and accepts kafkajs', () => {
    expect(loadConfig({ KAFKA_BROKERS: '127.0.0.1:9092' }).kafka?.client).toBe('platformatic');
    expect(loadConfig({ KAFKA_BROKERS: '127.0.0.1:9092', KAFKA_CLIENT: 'kafkajs' }).kafka?.client).toBe('kafkajs');
    expect(CONFIG_KEYS).toContain('KAFKA_CLIENT');
  });

  it('refuses any other value, naming the variable', () => {
    const err = caught(() => loadConfig({ KAFKA_BROKERS: '127.0.0.1:9092', KAFKA_CLIENT: 'librdkafka' }));
    expect(err).toMatchObject({ code: 'CEG_INVALID_OPTIONS', retriable: false });
    expect((err as Error).message).toMatch(/KAFKA_CLIENT: /);
  });
});

describe('KAFKA_SESSION_TIMEOUT_MS and KAFKA_HEARTBEAT_INTERVAL_MS (Kafka\'s session.timeout.ms, heartbeat.interval.ms)', () => {
  const kafka = { KAFKA_BROKERS: '127.0.0.1:9092' };
  it('unset: none given to the transport, whose defaults (30000, 3000) apply; config\'s DEFAULT_SESSION_TIMEOUT_MS is the transport\'s', () => {
    const c = loadConfig(kafka).kafka!;
    expect([c.sessionTimeoutMs, c.heartbeatIntervalMs]).toEqual([undefined, undefined]);
    expect(DEFAULT_SESSION_TIMEOUT_MS).toBe(resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'] }).sessionTimeoutMs);
  });

  it('reads both into config.kafka, ms', () => {
    expect(loadConfig({ ...kafka, KAFKA_SESSION_TIMEOUT_MS: '6000' }).kafka).toMatchObject({ sessionTimeoutMs: 6000 });
    expect(loadConfig({ ...kafka, KAFKA_SESSION_TIMEOUT_MS: '45000', KAFKA_HEARTBEAT_INTERVAL_MS: '15000' }).kafka).toMatchObject({ sessionTimeoutMs: 45_000, heartbeatIntervalMs: 15_000 });
    expect(CONFIG_KEYS).toEqual(expect.arrayContaining(['KAFKA_SESSION_TIMEOUT_MS', 'KAFKA_HEARTBEAT_INTERVAL_MS']));
  });

  it.each([
    ['KAFKA_SESSION_TIMEOUT_MS', { KAFKA_SESSION_TIMEOUT_MS: '1' }],
    ['KAFKA_SESSION_TIMEOUT_MS', { KAFKA_SESSION_TIMEOUT_MS: '6s' }],
    ['KAFKA_SESSION_TIMEOUT_MS', { KAFKA_SESSION_TIMEOUT_MS: '2147483648' }],
    ['KAFKA_HEARTBEAT_INTERVAL_MS', { KAFKA_HEARTBEAT_INTERVAL_MS: '0' }],
    // A heartbeat not more often than the session timeout ends every session between two heartbeats.
    ['KAFKA_HEARTBEAT_INTERVAL_MS', { KAFKA_SESSION_TIMEOUT_MS: '6000', KAFKA_HEARTBEAT_INTERVAL_MS: '6000' }],
    ['KAFKA_HEARTBEAT_INTERVAL_MS', { KAFKA_HEARTBEAT_INTERVAL_MS: '30000' }],
  ])('refuses %s in %j, naming it (exit 2 at start-up)', (variable, vars) => {
    const { config, problems } = checkConfig({ ...kafka, ...vars });
    expect(config).toBeUndefined();
    expect(problems.map((p) => p.variable)).toEqual([variable]);
  });

  it('the transport takes what config accepts (a heartbeat below the default session timeout)', () => {
    const c = loadConfig({ ...kafka, KAFKA_HEARTBEAT_INTERVAL_MS: '29999' }).kafka!;
    expect(resolveKafkaTransportOptions({ brokers: c.brokers, sessionTimeoutMs: c.sessionTimeoutMs, heartbeatIntervalMs: c.heartbeatIntervalMs })).toMatchObject({ sessionTimeoutMs: 30_000, heartbeatIntervalMs: 29_999 });
  });
});

describe('authentication and TLS settings (issue 11)', () => {
  it('AUTH defaults to partners with PARTNERS_FILE, else none; metrics need an admin by default', () => {
    expect(loadConfig({}).auth).toMatchObject({ mode: 'none', metrics: 'admin', requestsPerSecond: 100, eventsPerSecond: 1000, failuresPerMinute: 10 });
    expect(loadConfig({ PARTNERS_FILE: '/p.yaml' }).auth).toMatchObject({ mode: 'partners', partnersFile: '/p.yaml' });
    expect(loadConfig({ PARTNERS_FILE: '/p.yaml', AUTH: 'none' }).auth.mode).toBe('none');
    expect(loadConfig({ METRICS_AUTH: 'public', RATE_LIMIT_REQUESTS_PER_S: '7' }).auth).toMatchObject({ metrics: 'public', requestsPerSecond: 7 });
  });
  it('refuses AUTH=partners without PARTNERS_FILE, and half a TLS pair, naming the variables', () => {
    expect(() => loadConfig({ AUTH: 'partners' })).toThrow(/AUTH=partners needs PARTNERS_FILE/);
    expect(() => loadConfig({ AUTH: 'oidc' })).toThrow(/AUTH: /);
    expect(() => loadConfig({ TLS_CERT_FILE: '/c.pem' })).toThrow(/TLS_CERT_FILE: goes together with TLS_KEY_FILE/);
  });
  it('OIDC: issuer, audience and one JWKS source, with PARTNERS_FILE; the claim defaults to sub, the token type to at+jwt', () => {
    const oidc = { PARTNERS_FILE: '/p', OIDC_ISSUER: 'https://i', OIDC_AUDIENCE: 'a' };
    expect(loadConfig({ ...oidc, OIDC_JWKS_FILE: '/j' }).auth.oidc).toEqual({ issuer: 'https://i', audience: 'a', jwksFile: '/j', partnerClaim: 'sub', tokenTypes: ['at+jwt'] });
    expect(loadConfig({ ...oidc, OIDC_JWKS_FILE: '/j', OIDC_TOKEN_TYPES: 'at+jwt, application/okta-internal-at+jwt' }).auth.oidc?.tokenTypes).toEqual(['at+jwt', 'application/okta-internal-at+jwt']);
    expect(loadConfig({ ...oidc, OIDC_JWKS_FILE: '/j', OIDC_TOKEN_TYPES: '*' }).auth.oidc?.tokenTypes).toBeUndefined();
    expect(() => loadConfig({ ...oidc, OIDC_JWKS_FILE: '/j', OIDC_TOKEN_TYPES: 'at jwt' })).toThrow(/OIDC_TOKEN_TYPES/);
    // The key set decides who may sign: plain http only to loopback.
    for (const u of ['https://idp.example/jwks', 'http://127.0.0.1:9/jwks', 'http://localhost/jwks', 'http://[::1]:8080/jwks']) expect(loadConfig({ ...oidc, OIDC_JWKS_URL: u }).auth.oidc?.jwksUrl).toBe(u);
    for (const u of ['http://idp.example/jwks', 'HTTP://10.0.0.5/jwks', 'http://127.0.0.1.evil.example/jwks']) expect(() => loadConfig({ ...oidc, OIDC_JWKS_URL: u }), u).toThrow(/OIDC_JWKS_URL: must be https/);
    expect(() => loadConfig({ ...oidc, OIDC_JWKS_URL: 'https://idp.example/jwks', OIDC_JWKS_FILE: '/j' })).toThrow(/OIDC_JWKS_URL: goes without OIDC_JWKS_FILE/);
    expect(() => loadConfig({ PARTNERS_FILE: '/p', OIDC_ISSUER: 'https://i', OIDC_JWKS_FILE: '/j' })).toThrow(/OIDC needs OIDC_ISSUER and OIDC_AUDIENCE/);
  });
  it('OIDC without OIDC_JWKS_URL or OIDC_JWKS_FILE: discovery from OIDC_ISSUER, which must then be an https URL (plain http only to loopback) without userinfo, query or fragment', () => {
    const base = { PARTNERS_FILE: '/p', OIDC_AUDIENCE: 'a' };
    for (const i of ['https://i', 'https://login.example/realms/acme/', 'http://127.0.0.1:8080/realms/acme', 'http://localhost']) {
      const oidc = loadConfig({ ...base, OIDC_ISSUER: i }).auth.oidc;
      expect(oidc?.issuer, i).toBe(i);
      expect(oidc?.jwksUrl ?? oidc?.jwksFile, i).toBeUndefined();
    }
    for (const [i, why] of [
      ['http://idp.example', /OIDC_ISSUER: must be https:\/\/ for discovery/],
      ['acme-idp', /OIDC_ISSUER: not a URL/],
      ['ftp://idp.example', /OIDC_ISSUER: an issuer for discovery is an https URL/],
      ['https://u:p@idp.example', /OIDC_ISSUER: an issuer for discovery is an https URL without user:password@/],
      ['https://idp.example/?tenant=1', /without user:password@, query or fragment/],
      ['https://idp.example/#x', /without user:password@, query or fragment/],
    ] as const) {
      expect(() => loadConfig({ ...base, OIDC_ISSUER: i }), i).toThrow(why);
    }
    // With a key set given, the issuer is only compared with `iss`: any string, as before.
    expect(loadConfig({ ...base, OIDC_ISSUER: 'acme-idp', OIDC_JWKS_FILE: '/j' }).auth.oidc?.issuer).toBe('acme-idp');
    expect(() => loadConfig({ OIDC_ISSUER: 'https://i', OIDC_AUDIENCE: 'a', OIDC_JWKS_FILE: '/j' })).toThrow(/OIDC needs PARTNERS_FILE/);
    expect(loadConfig({}).auth.oidc).toBeUndefined();
  });
  it('TLS makes the default public base URL https', () => {
    const c = loadConfig({ TLS_CERT_FILE: '/c.pem', TLS_KEY_FILE: '/k.pem', PORT: '8443' });
    expect(c.http.tls).toEqual({ certFile: '/c.pem', keyFile: '/k.pem' });
    expect(c.publicBaseUrl).toBe('https://127.0.0.1:8443');
    expect(loadConfig({}).http.tls).toBeUndefined();
  });
});

describe('private CAs of the Kafka and registry clients (issue 11)', () => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  it('reads KAFKA_SSL_CA_FILE and SCHEMA_REGISTRY_CA_FILE at load into the PEM text', () => {
    const ca = file('ca.pem', pem);
    const c = loadConfig({ KAFKA_BROKERS: 'k:9093', KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: ca, SCHEMA_REGISTRY_URL: 'https://r:8081', SCHEMA_REGISTRY_CA_FILE: ca });
    expect(c.kafka).toMatchObject({ ssl: true, ca: pem });
    expect(c.registry).toMatchObject({ url: 'https://r:8081', ca: pem });
    expect(loadConfig({ KAFKA_BROKERS: 'k:9093', KAFKA_SSL: 'true' }).kafka?.ca).toBeUndefined();
  });
  it('refuses a missing file, a file without a certificate, a CA without TLS, each naming its variable', () => {
    const ca = file('ca2.pem', pem);
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:9093', KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: join(dir, 'absent.pem') })).toThrow(/KAFKA_SSL_CA_FILE: cannot read .*ENOENT/);
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:9093', KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: file('key.pem', '-----BEGIN PRIVATE KEY-----\n') })).toThrow(/KAFKA_SSL_CA_FILE: .* holds no PEM certificate/);
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:9093', KAFKA_SSL_CA_FILE: ca })).toThrow(/KAFKA_SSL_CA_FILE: needs KAFKA_SSL=true/);
    expect(() => loadConfig({ SCHEMA_REGISTRY_URL: 'http://r:8081', SCHEMA_REGISTRY_CA_FILE: ca })).toThrow(/SCHEMA_REGISTRY_CA_FILE: needs an https/);
  });
});

describe('CONFIG_KEYS: every variable the gateway reads (deployment files are checked against it)', () => {
  it('lists the settings, each secret\'s _FILE and the env file variable', () => {
    for (const k of ['PORT', 'KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'SHUTDOWN_TIMEOUT_MS', 'OUTBOX_DATABASE_URL', 'OUTBOX_DATABASE_URL_FILE', 'KAFKA_SASL_PASSWORD_FILE', 'CE_GATEWAY_ENV_FILE']) expect(CONFIG_KEYS).toContain(k);
    expect(CONFIG_KEYS).not.toContain('KAFKA_BROKER');
    for (const s of SECRET_KEYS) expect(CONFIG_KEYS).toContain(`${s}_FILE`);
  });

  it('SHUTDOWN_TIMEOUT_MS is a positive integer', () => {
    expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: '40000' }).shutdownTimeoutMs).toBe(40_000);
    expect(() => loadConfig({ SHUTDOWN_TIMEOUT_MS: '0' })).toThrow(/SHUTDOWN_TIMEOUT_MS/);
  });

  it('HEAP_GROWING_PERCENT (issue 14, memory): unset by default (V8 decides); an integer 1–1000 when set', () => {
    expect(loadConfig({}).heapGrowingPercent).toBeUndefined();
    expect(loadConfig({ HEAP_GROWING_PERCENT: '20' }).heapGrowingPercent).toBe(20);
    for (const bad of ['0', '1001', '12.5', 'lean', '-3']) expect(() => loadConfig({ HEAP_GROWING_PERCENT: bad }), bad).toThrow(/HEAP_GROWING_PERCENT/);
  });

  it('GATEWAY_WORKERS (issue 14): 1 by default; 1–64 or auto (one per CPU); more than 1 needs Kafka', () => {
    const kafka = { KAFKA_BROKERS: '127.0.0.1:9092' };
    expect(loadConfig({}).workers).toBe(1);
    expect(loadConfig({ ...kafka, GATEWAY_WORKERS: '4' }).workers).toBe(4);
    expect(loadConfig({ ...kafka, GATEWAY_WORKERS: 'auto' }).workers).toBe(Math.min(64, usableCpus()));
    expect(loadConfig({ GATEWAY_WORKERS: '1' }).workers).toBe(1);
    for (const bad of ['0', '65', '1.5', 'all', '-2']) expect(() => loadConfig({ ...kafka, GATEWAY_WORKERS: bad }), bad).toThrow(/GATEWAY_WORKERS/);
    expect(() => loadConfig({ ...kafka, GATEWAY_WORKERS: 'all' })).toThrow('GATEWAY_WORKERS: an integer from 1 to 64, or auto');
    // The in-memory bus lives in one process: two workers would be two buses.
    const err = caught(() => loadConfig({ GATEWAY_WORKERS: '2' }));
    expect(err.details.problems).toEqual(['GATEWAY_WORKERS: more than one worker needs KAFKA_BROKERS (the in-memory bus lives in one process)']);
    // auto is refused without Kafka whatever this machine's CPU count (the same settings start everywhere or nowhere).
    expect(caught(() => loadConfig({ GATEWAY_WORKERS: 'auto' })).details.problems).toEqual(['GATEWAY_WORKERS: auto (one worker per CPU) needs KAFKA_BROKERS, also where it would come to one worker (the in-memory bus lives in one process)']);
  });

  it('PUSH_FETCH_LINGER_MS (issue 8): none by default, an integer 0–100 ms', () => {
    expect(loadConfig({}).subscriptions.fetchLingerMs).toBe(0);
    expect(loadConfig({ PUSH_FETCH_LINGER_MS: '5' }).subscriptions.fetchLingerMs).toBe(5);
    expect(loadConfig({ PUSH_FETCH_LINGER_MS: '0' }).subscriptions.fetchLingerMs).toBe(0);
    expect(loadConfig({ PUSH_FETCH_LINGER_MS: '100' }).subscriptions.fetchLingerMs).toBe(100);
    for (const bad of ['-1', '101', '2.5', 'soon']) expect(() => loadConfig({ PUSH_FETCH_LINGER_MS: bad }), bad).toThrow(/PUSH_FETCH_LINGER_MS/);
  });
});

describe('tracing (issue 15): OpenTelemetry\'s own variables', () => {
  it('is off by default; the traces URL as given, or the base URL + /v1/traces', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({ endpoint: 'http://collector:4318/v1/traces' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/x' }).tracing).toEqual({ endpoint: 'https://b/x' });
    expect((caught(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })) as Error).message).toMatch(/OTEL_EXPORTER_OTLP_ENDPOINT: /);
  });
});

describe('loadConfig: URLs that are published hold no credentials', () => {
  it('moves the userinfo of SCHEMA_REGISTRY_URL into username and password; url is left without it', () => {
    const c = loadConfig({ SCHEMA_REGISTRY_URL: 'http://admin:p%40ss@reg.example/apis/ccompat/v7/' });
    expect(c.registry?.url).toBe('http://reg.example/apis/ccompat/v7');
    expect(c.registry?.username).toBe('admin');
    expect(c.registry?.password).toBe('p@ss');
    expect(JSON.stringify(c)).not.toContain('p%40ss');
    // SCHEMA_REGISTRY_USERNAME / _PASSWORD win over the URL's, as in the client's options.
    const both = loadConfig({ SCHEMA_REGISTRY_URL: 'http://admin:pw@reg.example', SCHEMA_REGISTRY_USERNAME: 'ru', SCHEMA_REGISTRY_PASSWORD: 'rp' });
    expect(both.registry).toMatchObject({ url: 'http://reg.example', username: 'ru', password: 'rp' });
    // A bare % in the password (not percent-encoded) is taken as written, not a bare URIError.
    expect(loadConfig({ SCHEMA_REGISTRY_URL: 'http://admin:50%off@reg.example' }).registry).toMatchObject({ url: 'http://reg.example', username: 'admin', password: '50%off' });
  });

  it('the webhook handshake origin defaults to the host name of PUBLIC_BASE_URL, without its port', () => {
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://gw.example:8443/base' }).subscriptions.requestOrigin).toBe('gw.example');
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://gw.example:8443', WEBHOOK_REQUEST_ORIGIN: 'events.example' }).subscriptions.requestOrigin).toBe('events.example');
  });
  it('refuses PUBLIC_BASE_URL and DATASCHEMA_BASE_URL with user:password@, naming the variable, never the value', () => {
    const err = caught(() => loadConfig({ PUBLIC_BASE_URL: 'https://u:s3cret@gw.example', DATASCHEMA_BASE_URL: 'https://u:s3cret@gw.example/schemas/ids/' }));
    expect(err.message).toContain('PUBLIC_BASE_URL: must not hold credentials');
    expect(err.message).toContain('DATASCHEMA_BASE_URL: must not hold credentials');
    expect(err.message).not.toContain('s3cret');
  });
  it('refuses OIDC_JWKS_URL with user:password@ (or a user alone), naming the variable, never the value', () => {
    const oidc = { PARTNERS_FILE: '/p', OIDC_ISSUER: 'https://i', OIDC_AUDIENCE: 'a' };
    for (const u of ['http://jwksuser:UPASS1@127.0.0.1:18555/jwks?token=QSECRET1', 'https://jwksuser@idp.example/jwks']) {
      const err = caught(() => loadConfig({ ...oidc, OIDC_JWKS_URL: u }));
      expect(err.message).toContain('OIDC_JWKS_URL: must not hold credentials');
      expect(err.message).not.toMatch(/UPASS1|QSECRET1|jwksuser/);
    }
  });
});

describe('loadConfig: OUTBOX_BATCH_BYTES', () => {
  it('defaults to the relay\'s DEFAULT_OUTBOX_BATCH_BYTES and refuses 0', () => {
    expect(loadConfig({}).outbox.batchBytes).toBe(DEFAULT_OUTBOX_BATCH_BYTES);
    expect(loadConfig({ OUTBOX_BATCH_BYTES: '1048576' }).outbox.batchBytes).toBe(1_048_576);
    expect(() => loadConfig({ OUTBOX_BATCH_BYTES: '0' })).toThrow(/OUTBOX_BATCH_BYTES/);
  });
});

describe('loadConfig: OUTBOX_TOPICS', () => {
  it('any by default (the relay publishes the topic a row names), catalog when set, anything else refused naming the variable', () => {
    expect(loadConfig({}).outbox.topics).toBe('any');
    expect(loadConfig({ OUTBOX_TOPICS: 'catalog' }).outbox.topics).toBe('catalog');
    for (const v of ['all', 'Catalog', 'none']) expect(() => loadConfig({ OUTBOX_TOPICS: v })).toThrow(/OUTBOX_TOPICS/);
  });
});

describe('loadConfig: OUTBOX_TABLE', () => {
  it('takes the names outboxTable takes and refuses the others at start, naming the variable (docs/outbox.md: table ≤ 48, whole ≤ 63)', () => {
    for (const name of ['ce_outbox', 'pdsp.outbox', 'x'.repeat(48), `${'s'.repeat(14)}.${'t'.repeat(48)}`]) {
      expect(loadConfig({ OUTBOX_TABLE: name }).outbox.table).toBe(name);
      expect(outboxTable(name).name).toBe(name);
    }
    for (const name of ['x'.repeat(49), `${'s'.repeat(20)}.${'t'.repeat(43)}`, `${'s'.repeat(64)}.t`, 'Outbox', 'a.b.c']) {
      expect(() => outboxTable(name)).toThrow(/at most 48 characters/);
      expect(() => loadConfig({ OUTBOX_TABLE: name })).toThrow(/OUTBOX_TABLE/);
    }
  });
});

describe('loadConfig: OUTBOX_BATCH_SIZE', () => {
  it("takes 1 to the relay's bound and refuses more, naming the variable", () => {
    expect(loadConfig({ OUTBOX_BATCH_SIZE: String(MAX_OUTBOX_BATCH_SIZE) }).outbox.batchSize).toBe(MAX_OUTBOX_BATCH_SIZE);
    expect(loadConfig({ OUTBOX_BATCH_SIZE: '1' }).outbox.batchSize).toBe(1);
    expect(() => loadConfig({ OUTBOX_BATCH_SIZE: String(MAX_OUTBOX_BATCH_SIZE + 1) })).toThrow(/OUTBOX_BATCH_SIZE/);
    expect(() => loadConfig({ OUTBOX_BATCH_SIZE: '0' })).toThrow(/OUTBOX_BATCH_SIZE/);
  });
});
