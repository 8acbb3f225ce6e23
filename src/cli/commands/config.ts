/**
 * `ce-gateway config check [--json]`: validates the one configuration the other commands use —
 * environment variables over the optional env file (CE_GATEWAY_ENV_FILE, else ./.stack/env),
 * secrets from the environment or `<NAME>_FILE` files — and explains every problem: the variable,
 * what is wrong, and what it takes. Also loads the catalog (CATALOG_DIR) and the connector files
 * (CONNECTORS_DIR), and warns about variables that look like ours but are not (typos).
 * Secret values are never printed: only whether each secret is set, and from where. Says who may
 * call the API (`auth`: off, the partners file, OIDC with its issuer) and counts the partners and
 * API keys PARTNERS_FILE loaded (never a key or hash); a partner no request can authenticate as is
 * a warning (docs/security.md "The partners file").
 * Exit codes: 0 valid; 2 any problem (DESIGN "Conventions": usage or configuration error). The text
 * report begins and ends with the verdict; the last line also counts problems and warnings and
 * names the exit code (summaryLine); `--json` adds it as `summary`, and `exitCode`.
 * Spec: issue 15 "Configuration".
 */
import type { Command } from 'commander';
import { errorMessage } from '../../core/errors.js';
import { CONFIG_HELP, CONFIG_KEYS, SECRET_KEYS, checkConfig, environment } from '../../config/index.js';
import type { Config } from '../../config/index.js';
import { loadCatalog } from '../../catalog/index.js';
import type { Catalog } from '../../catalog/index.js';
import { secretsKeyDecision } from '../../bus/subscriptions/index.js';
import { connectorFilesInSubfolders, loadConnectors, noConnectorFilesWarning } from '../../connectors/index.js';
import { parseAllowList, parsePorts } from '../../connectors/sinks/webhook/index.js';
import { loadPartners, partnersWithoutCredentials, readJwksFile, withoutCredentialsMessage } from '../../http/auth/index.js';
import type { Partner } from '../../http/auth/index.js';
import { readTlsPair } from '../../http/tls.js';
import { isLoopbackHost } from '../../core/loopback.js';
import { EXIT_OK, EXIT_USAGE } from '../context.js';
import { CLIENT_VARIABLES } from '../gateway-client.js';
import { BROKER_TIMEOUT_VARIABLE, DEFAULT_BROKER_TIMEOUT_MS, brokerTimeoutMs } from '../broker-deadline.js';
import { MAX_TIMER_MS } from '../../core/timer-limit.js';

/** Prefixes of the gateway's own variables: an unknown variable with one of them is probably a typo. */
const OUR_PREFIXES = ['OPS_', 'KAFKA_', 'SCHEMA_REGISTRY_', 'INGRESS_', 'HTTP_', 'OUTBOX_', 'PUBLISH_', 'WEBHOOK_', 'SUBSCRIPTION', 'SHUTDOWN_', 'READINESS_', 'BUS_', 'CE_GATEWAY_', 'CATALOG_', 'CONNECTORS_', 'DATASCHEMA_'];

/** Variables of the development stack's env file (scripts/stack) that share a prefix of ours. */
// KAFKA_LIBS and DATABASE_URL: written into .stack/env by `npm run stack:up` for the tests (their
// Kafka tools, their PostgreSQL); CE_GATEWAY_STACK_DIR and CE_GATEWAY_CACHE_DIR: the stack's own
// folders (scripts/stack/config.ts). No setting of the gateway (`serve` reads no database), no typo either.
const STACK_VARIABLES = ['KAFKA_LIBS', 'DATABASE_URL', 'CE_GATEWAY_STACK_DIR', 'CE_GATEWAY_CACHE_DIR'];

interface Report {
  readonly ok: boolean;
  readonly envFile: string | null;
  readonly problems: readonly { readonly variable: string; readonly message: string; readonly expected?: string }[];
  readonly warnings: readonly string[];
  readonly settings?: Record<string, unknown>;
}

/**
 * Who may call the API, as `serve` would decide (app/gateway.ts httpAuth): `off …`, `partners file
 * <path> (API keys)`, or that plus `and OIDC tokens (issuer <url>, claim <name>)`. Neither a key nor
 * a hash: the issuer is a public URL.
 */
function authMode(a: Config['auth']): string {
  if (a.mode === 'none') {
    const why = a.partnersFile === undefined ? 'no PARTNERS_FILE' : 'AUTH=none: PARTNERS_FILE is not read';
    return `off (${why}): every caller is the anonymous admin; serve binds only to a loopback HOST`;
  }
  const oidc = a.oidc === undefined ? '' : ` and OIDC tokens (issuer ${a.oidc.issuer}, claim ${a.oidc.partnerClaim})`;
  return `partners file ${a.partnersFile ?? '-'} (API keys)${oidc}`;
}

/**
 * What the configuration amounts to, without a secret value in it. `partners`: those PARTNERS_FILE
 * loaded (undefined: authentication off, or the file did not load — a problem then); counted, the
 * partners and their API keys, never a key or hash.
 */
function summary(c: Config, vars: Record<string, string | undefined>, env: NodeJS.ProcessEnv, envFile: string | undefined, partners: readonly Partner[] | undefined): Record<string, unknown> {
  const given = (v: string | undefined): boolean => v !== undefined && v !== '';
  // Where a secret came from: the process environment, the env file, or a <NAME>_FILE file.
  const from = (k: string): string => (given(env[k]) || envFile === undefined ? 'environment' : `env file ${envFile}`);
  // The registry's credentials may be the user info of SCHEMA_REGISTRY_URL instead (config.ts registryOf).
  const inRegistryUrl = (k: string): boolean => (k === 'SCHEMA_REGISTRY_USERNAME' || k === 'SCHEMA_REGISTRY_PASSWORD') && c.registry?.[k === 'SCHEMA_REGISTRY_USERNAME' ? 'username' : 'password'] !== undefined;
  const secrets = Object.fromEntries(
    SECRET_KEYS.map((k) => [k, given(vars[k]) ? `set (${from(k)})` : given(vars[`${k}_FILE`]) ? `set (file ${vars[`${k}_FILE`]})` : inRegistryUrl(k) ? 'set (user info of SCHEMA_REGISTRY_URL)' : 'not set']),
  );
  return {
    http: `${c.http.host}:${c.http.port}`,
    // Said with what it is: a listener without TLS and without partner authentication.
    ops: c.ops === undefined ? null : `${c.ops.host}:${c.ops.port} (plain HTTP, no authentication: GET /metrics, /healthz, /readyz)`,
    transport: c.kafka === undefined ? 'in-memory (NOT durable)' : `kafka ${c.kafka.brokers.join(',')} (${c.kafka.client}${c.kafka.ssl ? ', TLS' : ''}${c.kafka.sasl === undefined ? '' : `, SASL ${c.kafka.sasl.mechanism}`})`,
    registry: c.registry === undefined ? 'in-memory (NOT durable)' : new URL(c.registry.url).origin + new URL(c.registry.url).pathname,
    role: c.role,
    source: `urn:${c.service}:${c.instance}`,
    logLevel: c.logLevel,
    shutdownTimeoutMs: c.shutdownTimeoutMs,
    auth: authMode(c.auth),
    partners: partners?.length ?? null,
    partnerKeys: partners?.reduce((n, p) => n + p.keyHashes.length, 0) ?? null,
    catalogDir: c.catalogDir ?? '(the package\'s schemas/)',
    connectorsDir: c.connectorsDir ?? null,
    secrets,
  };
}

export function checkConfiguration(env: NodeJS.ProcessEnv, cwd: string): Report {
  let vars: Record<string, string | undefined>;
  let file: string | undefined;
  try {
    ({ vars, file } = environment(env, cwd));
  } catch (err) {
    return { ok: false, envFile: env.CE_GATEWAY_ENV_FILE ?? null, problems: [{ variable: 'CE_GATEWAY_ENV_FILE', message: errorMessage(err) }], warnings: [] };
  }
  // The CLI's own client variables (CE_GATEWAY_API_KEY[_FILE], gateway-client.ts; CE_GATEWAY_BROKER_TIMEOUT_MS, broker-deadline.ts) are not the gateway's settings, but no typo either.
  // KAFKA_LIBS: written into .stack/env by `npm run stack:up` for the tests' Kafka tools; no typo either.
  const known = new Set([...CONFIG_KEYS, ...CLIENT_VARIABLES, BROKER_TIMEOUT_VARIABLE, ...STACK_VARIABLES]);
  const warnings = Object.keys(vars)
    .filter((k) => !known.has(k) && OUR_PREFIXES.some((p) => k.startsWith(p)))
    .sort()
    .map((k) => `${k} is not a setting of ce-gateway (a typo?); it is ignored`);
  // Both forms of a secret are a problem of checkConfig (config.ts secretVariable).
  // The CLI's broker deadline: every Kafka command of the CLI exits 2 on a value it does not take.
  const cli: { variable: string; message: string; expected?: string }[] = [];
  try {
    brokerTimeoutMs(undefined, vars);
  } catch (err) {
    cli.push({ variable: BROKER_TIMEOUT_VARIABLE, message: errorMessage(err).replace(`${BROKER_TIMEOUT_VARIABLE}: `, ''), expected: `whole milliseconds from 1 to ${MAX_TIMER_MS}: how long the CLI's Kafka commands wait for the broker's first answer (default ${DEFAULT_BROKER_TIMEOUT_MS})` });
  }
  const { config, problems } = checkConfig(vars);
  const explained = problems.map((p) => ({ ...p, ...(CONFIG_HELP[p.variable] === undefined ? {} : { expected: CONFIG_HELP[p.variable] }) }));
  if (config === undefined) return { ok: false, envFile: file ?? null, problems: [...explained, ...cli], warnings };
  const more: { variable: string; message: string; expected?: string }[] = [...cli];
  let catalog: Catalog | undefined;
  try {
    catalog = loadCatalog(config.catalogDir);
  } catch (err) {
    more.push({ variable: 'CATALOG_DIR', message: errorMessage(err), expected: CONFIG_HELP.CATALOG_DIR });
  }
  if (catalog !== undefined && config.connectorsDir !== undefined) {
    try {
      const defs = loadConnectors(config.connectorsDir, { catalog });
      // Valid, but likely not what was meant: `CONNECTORS_DIR=connectors` in this repository
      // starts nothing (its examples are one level down, and serve never reads sub-folders).
      if (defs.length === 0) {
        const subs = connectorFilesInSubfolders(config.connectorsDir);
        if (subs.length > 0) warnings.push(noConnectorFilesWarning(config.connectorsDir, subs));
      }
    } catch (err) {
      more.push({ variable: 'CONNECTORS_DIR', message: errorMessage(err), expected: CONFIG_HELP.CONNECTORS_DIR });
    }
  }
  // What `serve` checks when it starts, so that "OK" here means it starts (config break report 2).
  const startCheck = (variable: string, check: () => unknown): void => {
    try {
      check();
    } catch (err) {
      more.push({ variable, message: errorMessage(err), ...(CONFIG_HELP[variable] === undefined ? {} : { expected: CONFIG_HELP[variable] }) });
    }
  };
  const a = config.auth;
  let partners: readonly Partner[] | undefined;
  if (a.mode === 'partners' && a.partnersFile !== undefined) {
    if (catalog !== undefined) startCheck('PARTNERS_FILE', () => (partners = loadPartners(a.partnersFile!, catalog, vars).partners));
    // Loaded by serve too (a revocation), but no request can authenticate as them: serve warns the same.
    for (const p of partnersWithoutCredentials(partners ?? [], a.oidc !== undefined)) warnings.push(withoutCredentialsMessage(p));
  } else if (!isLoopbackHost(config.http.host)) {
    more.push({ variable: 'HOST', message: `no authentication on ${config.http.host}: set PARTNERS_FILE, or bind HOST to a loopback address (127.0.0.1) for local use (serve refuses this)` });
  }
  if (config.http.tls !== undefined) startCheck('TLS_CERT_FILE', () => readTlsPair(config.http.tls!));
  startCheck('WEBHOOK_ALLOWED_HOSTS', () => parseAllowList(vars.WEBHOOK_ALLOWED_HOSTS));
  startCheck('WEBHOOK_ALLOWED_PORTS', () => parsePorts(vars.WEBHOOK_ALLOWED_PORTS));
  if (a.oidc?.jwksFile !== undefined) startCheck('OIDC_JWKS_FILE', () => readJwksFile(a.oidc!.jwksFile!));
  // serve starts without it (a log line), but push subscriptions cannot be created then and pulls
  // answer 503: said here, where a deployment is checked before it runs (secretsKeyDecision).
  if (config.kafka !== undefined && config.subscriptions.secretsKey === undefined && secretsKeyDecision(undefined, 'kafka', config.http.host) === 'absent') {
    warnings.push(`SUBSCRIPTION_SECRETS_KEY is not set: on Kafka with HOST ${config.http.host} (not loopback), push subscriptions cannot be created and pulls answer 500 CEG_SECRETS_KEY_MISSING; set it (32 bytes, e.g. \`openssl rand -base64 32\`), the same on every instance`);
  }
  return { ok: more.length === 0, envFile: file ?? null, problems: more, warnings, settings: summary(config, vars, env, file, partners) };
}

function printText(r: Report): void {
  const out: string[] = [];
  out.push(r.ok ? 'configuration OK' : `configuration INVALID: ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}`);
  out.push(`  read from: the environment${r.envFile === null ? '' : `, then ${r.envFile} for variables the environment does not set`}`);
  for (const p of r.problems) {
    out.push(`  ✗ ${p.variable}: ${p.message}`);
    if (p.expected !== undefined) out.push(`      takes: ${p.expected}`);
  }
  for (const w of r.warnings) out.push(`  ! ${w}`);
  if (r.settings !== undefined) {
    for (const [k, v] of Object.entries(r.settings)) {
      if (k === 'secrets') for (const [s, how] of Object.entries(v as Record<string, string>)) out.push(`  secret ${s}: ${how}`);
      else out.push(`  ${k}: ${v === null ? '-' : (typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v))}`);
    }
  }
  // The verdict again as the last line, valid or not: the settings (or many problems) push the
  // first line out of a terminal's view, and a log keeps the tail.
  out.push(summaryLine(r));
  process.stdout.write(`${out.join('\n')}\n`);
}

const plural = (n: number, word: string): string => `${n === 0 ? 'no' : n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The last line of the text report: the verdict, how many problems (`✗` lines) and warnings
 * (`!` lines), and the exit code — `configuration OK: no problems, 1 warning; exit 0`,
 * `configuration INVALID: 2 problems, no warnings; exit 2`.
 */
export function summaryLine(r: Pick<Report, 'ok' | 'problems' | 'warnings'>): string {
  return `configuration ${r.ok ? 'OK' : 'INVALID'}: ${plural(r.problems.length, 'problem')}, ${plural(r.warnings.length, 'warning')}; exit ${exitCodeOf(r)}`;
}

/** The exit code of `config check`: 0 valid, 2 any problem (warnings do not count). */
function exitCodeOf(r: Pick<Report, 'ok'>): number {
  return r.ok ? EXIT_OK : EXIT_USAGE;
}

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('the configuration: environment variables over an optional env file (CE_GATEWAY_ENV_FILE)');
  config
    .command('check')
    .description('validate the configuration, the catalog and the connector files; explain every problem (exit 2); secrets are never printed')
    .option('--json', 'print the report as JSON')
    .action((opts: { json?: boolean }) => {
      // The global --log-level is checked as serve would take it (it wins over LOG_LEVEL).
      const logLevel = program.opts<{ logLevel?: string }>().logLevel;
      const r = checkConfiguration(logLevel === undefined ? process.env : { ...process.env, LOG_LEVEL: logLevel }, process.cwd());
      // JSON: the report with the same closing verdict (`summary`) and `exitCode`.
      if (opts.json === true) process.stdout.write(`${JSON.stringify({ ...r, summary: summaryLine(r), exitCode: exitCodeOf(r) }, null, 2)}\n`);
      else printText(r);
      process.exit(exitCodeOf(r));
    });
}
