/**
 * Defects of a tester's report on connectors:
 * - D1: a connector's `subscription` (and `subscribe -s`) naming an HTTP subscription's consumer
 *   group (`ce-gateway.sub.…`) joined that group and took its events;
 * - D3: a `kind: subscription` push URL skipped the webhook target rules of `POST /subscriptions`
 *   (credentials, file:, metadata address) and a refused URL's credentials reached `dlq_sink`;
 * - D4: `passEnv` passed credential-carrying variables (registry URL, OTLP headers) to hooks;
 * - D6: a YAML alias bomb in one file failed the whole load without naming the file.
 * Spec: issue 8 ("Webhook targets are checked"); DESIGN "Connectors".
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Outcome } from '../../../src/bus/subscriber/index.js';
import { GROUP_PREFIX } from '../../../src/bus/subscriptions/index.js';
import { subscriptionOption } from '../../../src/cli/commands/subscribe.js';
import { isSecretLikeName, loadConnectors, parseConnectorText, reservedGroupProblem, subscriptionNameProblem } from '../../../src/connectors/index.js';
import { createWebhookSink, parseAllowList } from '../../../src/connectors/sinks/webhook/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { isGatewayError } from '../../../src/core/errors.js';

const FILE = join('/tmp', 'conn', 'sub.yaml');
const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const pushFile = (url: string): string => `kind: subscription\nname: p1\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: push, url: ${JSON.stringify(url)}, secretsFromEnv: [S1] }\n`;

describe('D1: the consumer groups of HTTP subscriptions are reserved', () => {
  it('reservedGroupProblem refuses names under GROUP_PREFIX, saying they belong to HTTP subscriptions; other names pass', () => {
    expect(reservedGroupProblem(`${GROUP_PREFIX}anonymous.h2`)).toMatch(/HTTP subscriptions/);
    expect(reservedGroupProblem('orders.audit')).toBeUndefined();
    // Kafka compares group ids exactly: another case is another group.
    expect(reservedGroupProblem('CE-GATEWAY.SUB.anonymous.h2')).toBeUndefined();
  });

  it('a connector file with subscription: ce-gateway.sub.anonymous.h2 is refused at `subscription`', () => {
    expect(subscriptionNameProblem('ce-gateway.sub.anonymous.h2')).toMatch(/HTTP subscriptions/);
    const r = parseConnectorText('kind: file-drop\nsubscription: ce-gateway.sub.anonymous.h2\nkinds: [PriceLoadingCompleted]\nsink: { directory: /tmp/drop, createDirectories: true }\n', join('/tmp', 'conn', 'steal.yaml'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([expect.objectContaining({ path: 'subscription', problem: expect.stringMatching(/HTTP subscriptions/) as unknown })]);
  });

  it('subscribe -s refuses a reserved group with an error naming subscription', () => {
    expect(() => subscriptionOption('ce-gateway.sub.anonymous.h2')).toThrow(InvalidArgumentError);
    expect(() => subscriptionOption('ce-gateway.sub.anonymous.h2')).toThrow(/^subscription: .*HTTP subscriptions/);
    expect(subscriptionOption('my-reader')).toBe('my-reader');
  });
});

describe('D3: push URLs of kind: subscription files pass the webhook target rules', () => {
  it.each([
    ['credentials', 'http://admin:hunter2@127.0.0.1:48090/hook', /credentials/],
    ['a file: URL', 'file:///etc/passwd', /http or https only/],
    ['the metadata address', 'http://169.254.169.254/latest/meta-data', /linkLocal/],
    ['a private address over https', 'https://10.0.0.5/hook', /private/],
    ['a fragment', 'https://hooks.example/x#', /fragment/],
    ['http to a host that is not allow-listed', 'http://hooks.example/x', /https is required/],
  ])('refuses %s at delivery.url, never echoing the URL', (_name, url, reason) => {
    const r = parseConnectorText(pushFile(url), FILE, { environment: { S1: SECRET } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([expect.objectContaining({ path: 'delivery.url', problem: expect.stringMatching(reason) as unknown })]);
    expect(JSON.stringify(r.problems)).not.toContain('hunter2');
  });

  it('WEBHOOK_ALLOWED_HOSTS of the environment (or ctx.allowedHosts) allows http to a listed address, as the gateway does', () => {
    const url = 'http://127.0.0.1:48090/hook';
    expect(parseConnectorText(pushFile(url), FILE, { environment: { S1: SECRET } }).ok).toBe(false);
    expect(parseConnectorText(pushFile(url), FILE, { environment: { S1: SECRET, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } }).ok).toBe(true);
    expect(parseConnectorText(pushFile(url), FILE, { environment: { S1: SECRET }, allowedHosts: parseAllowList('127.0.0.0/8') }).ok).toBe(true);
    const bad = parseConnectorText(pushFile(url), FILE, { environment: { S1: SECRET, WEBHOOK_ALLOWED_HOSTS: 'not a host!' } });
    expect(bad.ok ? [] : bad.problems).toEqual([expect.objectContaining({ path: 'delivery.url', problem: expect.stringMatching(/WEBHOOK_ALLOWED_HOSTS/) as unknown })]);
  });

  it('the view masks credentials in the query, as GET /subscriptions does', () => {
    const r = parseConnectorText(pushFile('https://hooks.example/x?token=abc123&a=1'), FILE, { environment: { S1: SECRET } });
    if (!r.ok || r.definition.kind !== 'subscription') throw new Error(`expected a subscription: ${JSON.stringify(r)}`);
    const view = r.definition.runtime.view?.delivery as { url?: string } | undefined;
    expect(view?.url).toBeDefined();
    expect(view?.url).not.toContain('abc123');
    // The delivery itself keeps the real URL.
    expect(r.definition.runtime.delivery).toMatchObject({ push: { url: 'https://hooks.example/x?token=abc123&a=1' } });
  });

  it('a refused target is dead-lettered with a sink name without credentials or query', async () => {
    const sink = createWebhookSink(
      { url: 'http://admin:hunter2@127.0.0.1:48090/hook?k=v', contentMode: 'binary', data: 'json', handshake: false, secrets: [], headers: {}, timeoutMs: 1000, retryAfterCapMs: 1000, rateLimit: null, concurrency: 1 },
      { log: silentLogger(), allow: parseAllowList('127.0.0.1'), origin: 'gateway.test', ctx: { markGone: () => {}, share: () => 1 } },
    );
    try {
      const out = (await sink.handler({ attributes: { specversion: '1.0', id: 'e-1', source: '/test', type: 'test.happened' }, data: { kind: 'json', value: {} } }, { subscription: 'test', topic: 't', partition: 0, offset: 0n, attempt: 1 })) as Outcome;
      expect(out).toMatchObject({ kind: 'deadLetter', failure: { sink: 'http://127.0.0.1:48090/hook' } });
      expect(JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).not.toContain('hunter2');
    } finally {
      await sink.close();
    }
  });
});

describe('D4: passEnv refuses the variables that carry the gateway credentials', () => {
  it.each(['SCHEMA_REGISTRY_URL', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'SCHEMA_REGISTRY_USERNAME', 'KAFKA_SASL_USERNAME', 'SUBSCRIPTION_SECRETS_KEY', 'OUTBOX_DATABASE_URL', 'DATABASE_URL', 'PARTNERS_FILE', 'OIDC_JWKS_URL', 'OIDC_ISSUER', 'schema_registry_url'])('%s is secret-like', (name) => {
    expect(isSecretLikeName(name)).toBe(true);
  });

  it.each(['TZ', 'HOME', 'LANG', 'MY_SERVICE_URL', 'BYPASS_MODE', 'PATHS', 'PASSENGER_COUNT', 'KEYBOARD', 'MONKEY_LEVEL', 'PATTERN'])('%s may be passed', (name) => {
    expect(isSecretLikeName(name)).toBe(false);
  });

  it('any name with a credential word as one of its _-separated parts is secret-like (abbreviations included), whatever surrounds it', () => {
    const word = fc.constantFrom('PASS', 'PWD', 'PW', 'PAT', 'CRED', 'CREDS', 'PASSWORD', 'PASSWD', 'PASSPHRASE', 'SECRET', 'TOKEN', 'KEY', 'APIKEY', 'COOKIE', 'BEARER', 'SESSION', 'AUTH', 'DSN');
    const part = fc.stringMatching(/^[A-Z][A-Z0-9]{0,7}$/);
    fc.assert(
      fc.property(fc.array(part, { maxLength: 2 }), word, fc.array(part, { maxLength: 2 }), fc.boolean(), (before, w, after, lower) => {
        const name = [...before, w, ...after].join('_');
        expect(isSecretLikeName(lower ? name.toLowerCase() : name), name).toBe(true);
      }),
    );
  });

  it('a shell-hook file with passEnv: [SCHEMA_REGISTRY_URL, OTEL_EXPORTER_OTLP_HEADERS] is refused, each entry named', () => {
    const r = parseConnectorText('kind: shell-hook\nsubscription: hook-1\nkinds: [PriceLoadingCompleted]\nsink: { command: [./h.sh], passEnv: [SCHEMA_REGISTRY_URL, OTEL_EXPORTER_OTLP_HEADERS] }\n', join('/tmp', 'conn', 'hook.yaml'), { environment: {} });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.path)).toEqual(['sink.passEnv[0]', 'sink.passEnv[1]']);
  });
});

describe('D6: a YAML alias bomb is that file’s problem', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('parseConnectorText reports it at (root) instead of throwing', () => {
    const levels = ['a0: &a0 [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i <= 7; i++) levels.push(`a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(', ')}]`);
    const r = parseConnectorText(`${levels.join('\n')}\n`, join('/tmp', 'conn', 'bomb.yaml'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([expect.objectContaining({ file: join('/tmp', 'conn', 'bomb.yaml'), path: '(root)', problem: expect.stringMatching(/alias/i) as unknown })]);
  });

  it('a file nested thousands of levels deep is a problem saying so, not the engine\'s stack overflow', () => {
    const r = parseConnectorText(`kind: shell-hook\nx: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`, join('/tmp', 'conn', 'deep.yaml'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([{ file: join('/tmp', 'conn', 'deep.yaml'), path: '(root)', problem: expect.stringMatching(/^YAML line 2 column \d+: nested too deeply/) as unknown }]);
  });

  it('loadConnectors names bomb.yaml together with the other files’ problems (CEG_INVALID_OPTIONS)', () => {
    dir = mkdtempSync(join(tmpdir(), 'ceg-bomb-'));
    const levels = ['a0: &a0 [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i <= 7; i++) levels.push(`a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(', ')}]`);
    writeFileSync(join(dir, 'bomb.yaml'), `${levels.join('\n')}\n`);
    writeFileSync(join(dir, 'other.yaml'), 'kind: file-drop\nkinds: [PriceLoadingCompleted]\n');
    let caught: unknown;
    try {
      loadConnectors(dir, { environment: {} });
    } catch (err) {
      caught = err;
    }
    expect(isGatewayError(caught, 'CEG_INVALID_OPTIONS')).toBe(true);
    const problems = (caught as { details: { problems: { file: string; path: string }[] } }).details.problems;
    expect(problems.some((p) => p.file.endsWith('bomb.yaml') && p.path === '(root)')).toBe(true);
    expect(problems.some((p) => p.file.endsWith('other.yaml'))).toBe(true);
  });
});
