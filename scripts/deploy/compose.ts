/**
 * Facts docker-compose.yml must hold (issue 16), checked on the project that compose-go's loader
 * produced (scripts/deploy/compose-check: schema-validated, interpolated with an empty
 * environment, every profile on). The gateway's own code judges its part: its environment goes
 * through loadConfig, the mounted catalog through loadCatalog, the connectors through loadConnectors.
 */
import { join, resolve } from 'node:path';
import { loadCatalog } from '../../src/catalog/index.js';
import { CONFIG_KEYS, loadConfig } from '../../src/config/index.js';
import { loadConnectors } from '../../src/connectors/index.js';
import { errorMessage } from '../../src/core/errors.js';
import { checkGatewayEnvironment, standInFiles } from './gateway-env.js';
import { report } from './report.js';
import type { Report } from './report.js';

interface Service {
  image?: string;
  build?: { context?: string; dockerfile?: string };
  environment?: Record<string, string | null>;
  healthcheck?: { test?: string[]; disable?: boolean };
  depends_on?: Record<string, { condition?: string }>;
  volumes?: { type: string; source?: string; target: string; read_only?: boolean }[];
  ports?: { host_ip?: string; published?: string; target: number }[];
  stop_grace_period?: string;
  profiles?: string[];
}
export interface ComposeProject {
  services: Record<string, Service>;
}

/** Go durations as compose-go prints them (`30s`, `1m0s`, `1m30s`), in ms. */
export function durationMs(d: string | undefined): number | undefined {
  if (d === undefined) return undefined;
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$/.exec(d);
  if (!m || d === '') return undefined;
  return ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000 + Number(m[4] ?? 0);
}

function hostsOf(env: Record<string, string | undefined>): Map<string, string> {
  const out = new Map<string, string>();
  for (const b of (env.KAFKA_BROKERS ?? '').split(',').filter(Boolean)) out.set(b.trim().replace(/:\d+$/, ''), 'KAFKA_BROKERS');
  for (const k of ['SCHEMA_REGISTRY_URL', 'OUTBOX_DATABASE_URL']) {
    const v = env[k];
    if (v) {
      try {
        out.set(new URL(v).hostname, k);
      } catch {
        /* loadConfig reports it */
      }
    }
  }
  return out;
}

export function checkCompose(project: ComposeProject, repoDir: string): Report {
  const r = report();
  const svc = project.services;
  const names = Object.keys(svc);
  const byImage = (re: RegExp): [string, Service][] => Object.entries(svc).filter(([, s]) => re.test(s.image ?? ''));
  const gateway = Object.entries(svc).find(([, s]) => s.build !== undefined && resolve(s.build.context ?? '') === resolve(repoDir));
  const kafka = byImage(/^apache\/kafka:/);
  const registries = byImage(/^(apicurio\/apicurio-registry|confluentinc\/cp-schema-registry)(:|$)/);
  const postgres = byImage(/^postgres:/);
  r.check(kafka.length === 1, `Kafka: service ${kafka[0]?.[0]} (${kafka[0]?.[1].image})`, 'no single apache/kafka service');
  const kEnv = kafka[0]?.[1].environment ?? {};
  const roles = (kEnv.KAFKA_PROCESS_ROLES ?? '').split(',').map((x) => x.trim());
  r.check(roles.includes('controller') && roles.includes('broker') && !Object.keys(kEnv).some((k) => /ZOOKEEPER/.test(k)), 'Kafka runs in KRaft mode (process.roles=broker,controller, no ZooKeeper)', `Kafka is not in KRaft combined mode (KAFKA_PROCESS_ROLES=${kEnv.KAFKA_PROCESS_ROLES ?? '-'})`);
  r.check(registries.length >= 1, `Confluent-compatible registry: ${registries.map(([n, s]) => `${n} (${s.image})`).join(', ')}`, 'no Confluent Schema Registry or Apicurio service');
  r.check(postgres.length === 1, `PostgreSQL: service ${postgres[0]?.[0]} (${postgres[0]?.[1].image})`, 'no single postgres service');
  if (!gateway) {
    r.fail('no gateway service built from the repository');
    return r;
  }
  const [gwName, gw] = gateway;
  r.ok(`gateway: service ${gwName}, built from the repository's ${gw.build?.dockerfile ?? 'Dockerfile'}`);

  for (const n of names) {
    const hc = svc[n]!.healthcheck;
    const test = hc?.test ?? [];
    r.check(hc !== undefined && !hc.disable && test.length > 0 && test[0] !== 'NONE', `${n} has a health check`, `${n} has no health check`);
    for (const p of svc[n]!.ports ?? []) r.check(p.host_ip === '127.0.0.1', `${n} publishes ${p.published ?? '?'} on 127.0.0.1 only`, `${n} publishes ${p.published ?? '?'}→${p.target} on ${p.host_ip ?? 'every address'}, not 127.0.0.1`);
    for (const [dep, d] of Object.entries(svc[n]!.depends_on ?? {})) r.check(d.condition === 'service_healthy', `${n} waits for ${dep} to be healthy`, `${n} depends on ${dep} with condition ${d.condition ?? '-'}, not service_healthy`);
  }
  const gwTest = (gw.healthcheck?.test ?? []).join(' ');
  const tlsEnv = Boolean((gw.environment ?? {}).TLS_CERT_FILE);
  if (tlsEnv) r.check(/https/.test(gwTest), 'the health check speaks HTTPS (TLS_CERT_FILE is set)', `TLS_CERT_FILE is set, but the gateway's health check does not speak HTTPS: ${gwTest}`);
  else r.check(!/^.*https:\/\/127/.test(gwTest), 'the health check speaks HTTP (no TLS_CERT_FILE)', `the health check speaks HTTPS to a plain-HTTP gateway: ${gwTest}`);
  r.check(/\/readyz/.test(gwTest), 'the gateway turns healthy on /readyz (up --wait waits for readiness)', `the gateway's health check does not probe /readyz: ${gwTest}`);

  // The gateway's environment: names it reads, values it accepts.
  const env = Object.fromEntries(Object.entries(gw.environment ?? {}).map(([k, v]) => [k, v ?? undefined]));
  const unknown = Object.keys(env).filter((k) => !CONFIG_KEYS.includes(k));
  r.check(unknown.length === 0, `gateway environment keys are gateway settings: ${Object.keys(env).sort().join(', ')}`, `gateway environment keys the gateway does not read: ${unknown.join(', ')}`);
  let shutdownMs = 25_000;
  try {
    const c = loadConfig(env);
    shutdownMs = c.shutdownTimeoutMs;
    r.ok('the gateway accepts its environment (loadConfig)');
    r.check(c.kafka !== undefined && c.registry !== undefined, 'the gateway is durable: Kafka and registry configured', 'the gateway would run on in-memory adapters (KAFKA_BROKERS or SCHEMA_REGISTRY_URL missing)');
    r.check(c.outbox.databaseUrl !== undefined, 'OUTBOX_DATABASE_URL is set (the outbox commands, run in the container)', 'OUTBOX_DATABASE_URL is not set: the outbox commands have no database');
  } catch (err) {
    r.fail(`loadConfig refuses the gateway's environment: ${errorMessage(err)}`);
  }
  // `config check` (serve's start-up checks) on the container's environment: the image's ENV under
  // compose's, paths mapped through the bind mounts to the repository's files.
  const local = (p: string): string | undefined => {
    const v = (gw.volumes ?? []).find((m) => m.type === 'bind' && (p === m.target || p.startsWith(`${m.target}/`)));
    return v?.source === undefined ? undefined : join(v.source, p.slice(v.target.length));
  };
  const container: Record<string, string | undefined> = { NODE_ENV: 'production', HOST: '0.0.0.0', PORT: '8080', CATALOG_DIR: '/app/schemas', ...env };
  for (const k of ['CATALOG_DIR', 'CONNECTORS_DIR'] as const) {
    const v = container[k];
    if (v !== undefined) container[k] = local(v) ?? (v === '/app/schemas' ? join(repoDir, 'schemas') : v);
  }
  const checked = checkGatewayEnvironment(standInFiles(container, () => false, local), `gateway service ${gwName}`);
  for (const f of checked.facts) r.ok(f);
  for (const p of checked.problems) r.fail(p);
  // Every service the gateway talks to is a dependency it waits for.
  for (const [host, key] of hostsOf(env)) {
    const dep = gw.depends_on?.[host];
    r.check(names.includes(host) && dep?.condition === 'service_healthy', `${key} host ${host} is a service the gateway waits for`, `${key} names ${host}, which is not a service the gateway depends on with service_healthy`);
  }
  const grace = durationMs(gw.stop_grace_period);
  r.check(grace !== undefined && grace > shutdownMs, `stop_grace_period ${gw.stop_grace_period ?? '-'} exceeds SHUTDOWN_TIMEOUT_MS ${shutdownMs}`, `stop_grace_period ${gw.stop_grace_period ?? '10s (default)'} does not exceed SHUTDOWN_TIMEOUT_MS ${shutdownMs}: Docker would kill the drain`);

  // The catalog and connectors are mounted where the gateway looks, and the gateway accepts them.
  const mount = (dir: string | undefined, from: string): string | undefined => {
    const v = (gw.volumes ?? []).find((m) => m.type === 'bind' && m.target === dir);
    if (v === undefined || resolve(v.source ?? '') !== resolve(join(repoDir, from))) return undefined;
    return v.read_only ? v.source : undefined;
  };
  const catalogSrc = mount(env.CATALOG_DIR, 'schemas');
  r.check(catalogSrc !== undefined, `schemas/ is mounted read-only at CATALOG_DIR (${env.CATALOG_DIR})`, `schemas/ is not mounted read-only at CATALOG_DIR (${env.CATALOG_DIR ?? 'unset'})`);
  if (catalogSrc !== undefined) {
    try {
      r.ok(`the mounted catalog loads: ${loadCatalog(catalogSrc).kinds.length} event kinds`);
    } catch (err) {
      r.fail(`the mounted catalog does not load: ${errorMessage(err)}`);
    }
  }
  const connectorsSrc = mount(env.CONNECTORS_DIR, 'connectors');
  r.check(connectorsSrc !== undefined, `connectors/ is mounted read-only at CONNECTORS_DIR (${env.CONNECTORS_DIR})`, `connectors/ is not mounted read-only at CONNECTORS_DIR (${env.CONNECTORS_DIR ?? 'unset'})`);
  if (connectorsSrc !== undefined) {
    try {
      r.ok(`the mounted connectors load: ${loadConnectors(connectorsSrc).length} definition(s)`);
    } catch (err) {
      r.fail(`the mounted connectors do not load: ${errorMessage(err)}`);
    }
  }
  return r;
}
