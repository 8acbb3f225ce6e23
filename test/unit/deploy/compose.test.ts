import { describe, expect, it } from 'vitest';
import { checkCompose, durationMs } from '../../../scripts/deploy/compose.js';
import type { ComposeProject } from '../../../scripts/deploy/compose.js';

const ROOT = new URL('../../../', import.meta.url).pathname.replace(/\/$/, '');
const healthy = { condition: 'service_healthy' };
const hc = { test: ['CMD', 'true'] };

/** A project as compose-go prints it (normalized: absolute bind sources, Go durations). */
function project(): ComposeProject {
  return {
    services: {
      kafka: { image: 'apache/kafka:4.1.1', environment: { KAFKA_PROCESS_ROLES: 'broker,controller' }, healthcheck: hc, ports: [{ host_ip: '127.0.0.1', published: '19092', target: 19092 }] },
      postgres: { image: 'postgres:15', healthcheck: hc },
      registry: { image: 'apicurio/apicurio-registry:3.0.9', healthcheck: hc, depends_on: { postgres: healthy } },
      gateway: {
        build: { context: ROOT, dockerfile: 'Dockerfile' },
        environment: {
          HOST: '0.0.0.0',
          KAFKA_BROKERS: 'kafka:9092',
          SCHEMA_REGISTRY_URL: 'http://registry:8080/apis/ccompat/v7',
          OUTBOX_DATABASE_URL: 'postgres://cegw:x@postgres:5432/cegw',
          CATALOG_DIR: '/etc/ce-gateway/catalog',
          CONNECTORS_DIR: '/etc/ce-gateway/connectors',
          SHUTDOWN_TIMEOUT_MS: '25000',
          PARTNERS_FILE: '/etc/ce-gateway/partners.yaml',
          SUBSCRIPTION_SECRETS_KEY: '0'.repeat(64),
        },
        healthcheck: { test: ['CMD', 'node', '-e', "fetch('http://127.0.0.1:8080/readyz')"] },
        depends_on: { kafka: healthy, registry: healthy, postgres: healthy },
        volumes: [
          { type: 'bind', source: `${ROOT}/schemas`, target: '/etc/ce-gateway/catalog', read_only: true },
          { type: 'bind', source: `${ROOT}/deploy/partners.dev.yaml`, target: '/etc/ce-gateway/partners.yaml', read_only: true },
          { type: 'bind', source: `${ROOT}/connectors`, target: '/etc/ce-gateway/connectors', read_only: true },
        ],
        ports: [{ host_ip: '127.0.0.1', published: '8080', target: 8080 }],
        stop_grace_period: '30s',
      },
    },
  };
}

describe('compose facts (scripts/deploy/compose.ts)', () => {
  it('hold for a complete stack, judged by the gateway’s own loaders', () => {
    const r = checkCompose(project(), ROOT);
    expect(r.problems).toEqual([]);
    expect(r.facts.join('\n')).toMatch(/the mounted catalog loads: \d+ event kinds/);
  });

  it.each([
    ['a misspelt variable', (p: ComposeProject) => void (p.services.gateway!.environment!.KAFKA_BROKER = 'kafka:9092'), /does not read: KAFKA_BROKER/],
    ['a value the gateway refuses', (p: ComposeProject) => void (p.services.gateway!.environment!.LOG_LEVEL = 'verbose'), /loadConfig refuses.*LOG_LEVEL/],
    ['a dependency that is only started', (p: ComposeProject) => void (p.services.gateway!.depends_on!.kafka = { condition: 'service_started' }), /depends on kafka with condition service_started/],
    ['a dependency left out', (p: ComposeProject) => void delete p.services.gateway!.depends_on!.postgres, /DATABASE_URL names postgres, which is not a service the gateway depends on/],
    ['a service without a health check', (p: ComposeProject) => void delete p.services.postgres!.healthcheck, /postgres has no health check/],
    ['a gateway healthy before it is ready', (p: ComposeProject) => void (p.services.gateway!.healthcheck = { test: ['CMD', 'node', '-e', "fetch('http://127.0.0.1:8080/healthz')"] }), /does not probe \/readyz/],
    ['a port on every address', (p: ComposeProject) => void (p.services.gateway!.ports = [{ published: '8080', target: 8080 }]), /on every address/],
    ['a grace period shorter than the drain', (p: ComposeProject) => void (p.services.gateway!.stop_grace_period = '20s'), /does not exceed SHUTDOWN_TIMEOUT_MS 25000/],
    ['the default grace period', (p: ComposeProject) => void delete p.services.gateway!.stop_grace_period, /10s \(default\)/],
    ['a writable catalog mount', (p: ComposeProject) => void (p.services.gateway!.volumes![0]!.read_only = false), /schemas\/ is not mounted read-only/],
    ['connectors not mounted', (p: ComposeProject) => void p.services.gateway!.volumes!.pop(), /connectors\/ is not mounted/],
    ['ZooKeeper mode', (p: ComposeProject) => void (p.services.kafka!.environment = { KAFKA_ZOOKEEPER_CONNECT: 'zk:2181' }), /not in KRaft/],
    ['no registry', (p: ComposeProject) => void delete p.services.registry, /no Confluent Schema Registry or Apicurio/],
    ['a gateway on in-memory adapters', (p: ComposeProject) => void delete p.services.gateway!.environment!.KAFKA_BROKERS, /in-memory adapters/],
  ])('reject %s', (_what, mutate, problem) => {
    const p = project();
    mutate(p);
    expect(checkCompose(p, ROOT).problems.join('\n')).toMatch(problem);
  });

  it('reads Go durations as compose-go prints them', () => {
    expect(durationMs('30s')).toBe(30_000);
    expect(durationMs('1m0s')).toBe(60_000);
    expect(durationMs('1m30s')).toBe(90_000);
    expect(durationMs('1h2m3.5s')).toBe(3_723_500);
    expect(durationMs('500ms')).toBe(500);
    expect(durationMs('soon')).toBeUndefined();
    expect(durationMs(undefined)).toBeUndefined();
  });
});
