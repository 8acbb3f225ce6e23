import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkManifests, parseManifests } from '../../../scripts/deploy/manifests.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const labels = { 'app.kubernetes.io/name': 'ce-gateway', 'app.kubernetes.io/instance': 'gw' };

/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are plain YAML objects */
/** A render of the chart reduced to what the checks read, in the chart's shape. */
function render(): any[] {
  const catalog = readFileSync(`${ROOT}schemas/catalog.yaml`, 'utf8');
  const avsc = (p: string) => readFileSync(`${ROOT}schemas/${p}`, 'utf8');
  const files = ['trading/price-loading-completed.avsc', 'trading/series-update-completed.avsc', 'trading/indicators-computed.avsc', 'trading/chart-data-ready.avsc', 'trading/strategy-signal.avsc', 'writing-guide/content-changed.avsc'];
  const meta = (name: string) => ({ name, labels: { ...labels, 'app.kubernetes.io/component': 'gateway' } });
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('gw-ce-gateway'), data: { HOST: '0.0.0.0', PORT: '8080', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '25000', CATALOG_DIR: '/etc/ce-gateway/catalog', PARTNERS_FILE: '/etc/ce-gateway/partners/partners.yaml' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('gw-ce-gateway-catalog'), data: { 'catalog.yaml': catalog, ...Object.fromEntries(files.map((f) => [f.replace('/', '__'), avsc(f)])) } },
    { apiVersion: 'v1', kind: 'Service', metadata: meta('gw-ce-gateway'), spec: { selector: labels, ports: [{ name: 'http', port: 8080, targetPort: 'http' }] } },
    { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: meta('gw-ce-gateway'), spec: { maxUnavailable: 1, selector: { matchLabels: labels } } },
    { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: meta('gw-ce-gateway'), spec: { podSelector: { matchLabels: labels }, ingress: [{ ports: [{ port: 'http' }] }] } },
    { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: meta('gw-ce-gateway'), spec: { selector: { matchLabels: labels }, endpoints: [{ port: 'http', path: '/metrics', authorization: { type: 'Bearer', credentials: { name: 'metrics', key: 'api-key' } } }] } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('gw-ce-gateway'),
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels: { ...labels, 'app.kubernetes.io/component': 'gateway' }, annotations: { 'checksum/secrets': '0'.repeat(64) } },
          spec: {
            automountServiceAccountToken: false,
            securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
            terminationGracePeriodSeconds: 35,
            containers: [
              {
                name: 'gateway',
                ports: [{ name: 'http', containerPort: 8080 }],
                envFrom: [{ configMapRef: { name: 'gw-ce-gateway' } }],
                env: [
                  { name: 'OUTBOX_DATABASE_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'OUTBOX_DATABASE_URL' } } },
                  { name: 'NODE_OPTIONS', value: '--max-old-space-size=384' },
                ],
                startupProbe: { httpGet: { path: '/healthz', port: 'http' } },
                livenessProbe: { httpGet: { path: '/healthz', port: 'http' } },
                readinessProbe: { httpGet: { path: '/readyz', port: 'http' } },
                lifecycle: { preStop: { exec: { command: ['sleep', '5'] } } },
                resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
                securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }, { name: 'catalog', mountPath: '/etc/ce-gateway/catalog', readOnly: true }, { name: 'partners', mountPath: '/etc/ce-gateway/partners', readOnly: true }],
              },
            ],
            volumes: [
              { name: 'tmp', emptyDir: {} },
              { name: 'partners', secret: { secretName: 'partners', items: [{ key: 'partners.yaml', path: 'partners.yaml' }] } },
              { name: 'catalog', configMap: { name: 'gw-ce-gateway-catalog', items: [{ key: 'catalog.yaml', path: 'catalog.yaml' }, ...files.map((f) => ({ key: f.replace('/', '__'), path: f }))] } },
            ],
          },
        },
      },
    },
  ];
}
/**
 * The same render with ops.port 9090 (OPS_PORT): the probes on the plain ops port, the
 * ServiceMonitor on the headless ops Service without credentials, the NetworkPolicy admitting it.
 */
function renderOps(): any[] {
  const m = render();
  m[0].data.OPS_PORT = '9090';
  const c = m.find((x) => x.kind === 'Deployment').spec.template.spec.containers[0];
  c.ports.push({ name: 'ops', containerPort: 9090 });
  for (const p of ['startupProbe', 'livenessProbe', 'readinessProbe']) c[p].httpGet.port = 'ops';
  const opsLabels = { ...labels, 'app.kubernetes.io/component': 'gateway', 'ce-gateway/port': 'ops' };
  m.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'gw-ce-gateway-ops', labels: opsLabels }, spec: { clusterIP: 'None', selector: labels, ports: [{ name: 'ops', port: 9090, targetPort: 'ops' }] } });
  m[4].spec.ingress.push({ ports: [{ port: 'ops' }], from: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }] });
  m[5].spec.selector.matchLabels = { ...labels, 'ce-gateway/port': 'ops' };
  m[5].spec.endpoints = [{ port: 'ops', path: '/metrics', scheme: 'http' }];
  return m;
}
const dep = (m: any[]) => m.find((x) => x.kind === 'Deployment');
const container = (m: any[]) => dep(m).spec.template.spec.containers[0];
const check = (m: any[]) => checkManifests({ manifests: m, extraEnvNames: ['NODE_OPTIONS'] });

describe('rendered chart facts (scripts/deploy/manifests.ts)', () => {
  it('hold for a complete render, with the catalog ConfigMap loaded as mounted', () => {
    const r = check(render());
    expect(r.problems).toEqual([]);
    expect(r.facts.join('\n')).toMatch(/CATALOG_DIR \/etc\/ce-gateway\/catalog: ConfigMap gw-ce-gateway-catalog holds a catalog that loads \(6 event kinds\)/);
  });

  it.each([
    ['a writable root filesystem', (m: any[]) => void (container(m).securityContext.readOnlyRootFilesystem = false), /readOnlyRootFilesystem is not true/],
    ['privilege escalation', (m: any[]) => void delete container(m).securityContext.allowPrivilegeEscalation, /allowPrivilegeEscalation is not false/],
    ['kept capabilities', (m: any[]) => void (container(m).securityContext.capabilities = { drop: ['NET_RAW'] }), /do not drop ALL/],
    ['no seccomp profile', (m: any[]) => void delete dep(m).spec.template.spec.securityContext.seccompProfile, /seccompProfile/],
    [
      'root',
      (m: any[]) => {
        dep(m).spec.template.spec.securityContext.runAsNonRoot = false;
        delete container(m).securityContext.runAsNonRoot;
      },
      /runAsNonRoot is not true/,
    ],
    ['readiness on /healthz', (m: any[]) => void (container(m).readinessProbe.httpGet.path = '/healthz'), /readinessProbe is not an httpGet of \/readyz/],
    ['a probe on an unknown port', (m: any[]) => void (container(m).livenessProbe.httpGet.port = 'admin'), /livenessProbe is not an httpGet of \/healthz on a container port/],
    ['no memory limit', (m: any[]) => void delete container(m).resources.limits, /resources lack/],
    ['a grace period shorter than preStop + drain', (m: any[]) => void (dep(m).spec.template.spec.terminationGracePeriodSeconds = 30), /does not exceed preStop 5 s \+ SHUTDOWN_TIMEOUT_MS 25000 ms/],
    ['a secret value in env', (m: any[]) => void (container(m).env[0] = { name: 'OUTBOX_DATABASE_URL', value: 'postgres://u:p@db/x' }), /OUTBOX_DATABASE_URL is given as a value/],
    ['a secret in the ConfigMap', (m: any[]) => void (m[0].data.SCHEMA_REGISTRY_PASSWORD = 'x'), /secret variables in a ConfigMap: SCHEMA_REGISTRY_PASSWORD/],
    ['a variable the gateway does not read', (m: any[]) => void (m[0].data.KAFKA_BROKER = 'k:9092'), /ConfigMap variables the gateway does not read: KAFKA_BROKER/],
    ['pods that read Secrets but do not roll when they change', (m: any[]) => void delete dep(m).spec.template.metadata.annotations['checksum/secrets'], /no checksum\/secrets annotation/],
    ['a rendered Secret', (m: any[]) => void m.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { DATABASE_URL: 'x' } }), /renders a Secret/],
    ['a catalog that does not load', (m: any[]) => void (m[1].data['catalog.yaml'] = 'version: 1\nkinds: [ { name: Broken } ]\n'), /ConfigMap gw-ce-gateway-catalog does not load/],
    ['a Service that selects nothing', (m: any[]) => void (m[2].spec.selector = { app: 'other' }), /Service gw-ce-gateway selector does not match/],
    ['a Service port to nowhere', (m: any[]) => void (m[2].spec.ports[0].targetPort = 9090), /targets 9090, which the container does not expose/],
    ['a PDB that selects nothing', (m: any[]) => void (m[3].spec.selector.matchLabels = { app: 'other' }), /PodDisruptionBudget .* selector does not match/],
    ['a NetworkPolicy that shuts the port', (m: any[]) => void (m[4].spec.ingress = [{ ports: [{ port: 9999 }] }]), /admits no container port/],
    ['a ServiceMonitor on another port', (m: any[]) => void (m[5].spec.endpoints[0].port = 'metrics'), /ServiceMonitor endpoint metrics/],
    ['an autoscaler next to fixed replicas', (m: any[]) => void m.push({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h' }, spec: { scaleTargetRef: { kind: 'Deployment', name: 'gw-ce-gateway' }, minReplicas: 2, maxReplicas: 4 } }), /sets replicas although an autoscaler owns them/],
  ])('reject %s', (_what, mutate, problem) => {
    const m = render();
    mutate(m);
    expect(check(m).problems.join('\n')).toMatch(problem);
  });

  it('hold with ops.port: probes and the scrape on the plain ops port, no credentials there, Prometheus admitted', () => {
    const r = check(renderOps());
    expect(r.problems).toEqual([]);
    const facts = r.facts.join('\n');
    expect(facts).toMatch(/readinessProbe over HTTP on the ops port/);
    expect(facts).toMatch(/ServiceMonitor endpoint ops is the ops port: no credentials needed/);
    expect(facts).toMatch(/NetworkPolicy gw-ce-gateway admits the ops port \(1 peer\(s\)\)/);
    // The ops port is never TLS, whatever TLS_CERT_FILE says for the API port.
    const tls = renderOps();
    tls[0].data.TLS_CERT_FILE = '/etc/ce-gateway/tls/tls.crt';
    tls[0].data.TLS_KEY_FILE = '/etc/ce-gateway/tls/tls.key';
    expect(check(tls).problems.join('\n')).not.toMatch(/probe|ServiceMonitor/i);
  });

  it.each([
    ['a probe left on the API port', (m: any[]) => void (container(m).livenessProbe.httpGet.port = 'http'), /livenessProbe is not on the ops port although OPS_PORT is set/],
    ['a probe over HTTPS to the ops port', (m: any[]) => void (container(m).readinessProbe.httpGet.scheme = 'HTTPS'), /readinessProbe uses HTTPS, but the port speaks HTTP \(the ops port is never TLS\)/],
    ['OPS_PORT without its container port', (m: any[]) => void (container(m).ports = container(m).ports.filter((p: any) => p.name !== 'ops')), /OPS_PORT 9090 is not a container port/],
    ['a NetworkPolicy without the ops port', (m: any[]) => void m[4].spec.ingress.pop(), /does not admit the ops port: Prometheus cannot scrape OPS_PORT/],
    ['a ServiceMonitor still on the API port', (m: any[]) => void (m[5].spec.selector.matchLabels = labels, m[5].spec.endpoints = [{ port: 'http', path: '/metrics', authorization: { type: 'Bearer', credentials: { name: 'metrics', key: 'api-key' } } }]), /ServiceMonitor does not scrape the ops port although OPS_PORT is set/],
    ['a ServiceMonitor over https to the ops port', (m: any[]) => void (m[5].spec.endpoints[0].scheme = 'https'), /scrapes over https, but the port speaks http \(the ops port is never TLS\)/],
    ['OPS_PORT equal to PORT', (m: any[]) => void (m[0].data.OPS_PORT = '8080'), /OPS_PORT: must differ from PORT/],
  ])('with ops.port, reject %s', (_what, mutate, problem) => {
    const m = renderOps();
    mutate(m);
    expect(check(m).problems.join('\n')).toMatch(problem);
  });

  it('needs no checksum/secrets when the only Secret is the TLS pair the gateway reloads itself', () => {
    const m = render();
    const d = dep(m);
    delete d.spec.template.metadata.annotations['checksum/secrets'];
    container(m).env = container(m).env.filter((e: any) => e.valueFrom === undefined);
    d.spec.template.spec.volumes = d.spec.template.spec.volumes.map((v: any) => (v.name === 'partners' ? { name: 'tls', secret: { secretName: 'tls' } } : v));
    container(m).volumeMounts = container(m).volumeMounts.map((v: any) => (v.name === 'partners' ? { name: 'tls', mountPath: '/etc/ce-gateway/tls', readOnly: true } : v));
    m[0].data.TLS_CERT_FILE = '/etc/ce-gateway/tls/tls.crt';
    delete m[0].data.PARTNERS_FILE;
    expect(check(m).problems.join('\n')).not.toMatch(/checksum\/secrets/);
  });

  it('names extraEnv variables it was not told about', () => {
    expect(checkManifests({ manifests: render(), extraEnvNames: [] }).problems.join('\n')).toMatch(/env NODE_OPTIONS is not a gateway setting/);
  });

  it('parses multi-document YAML and refuses a broken one', () => {
    expect(parseManifests('---\na: 1\n---\n# only a comment\n---\nb: 2\n')).toEqual([{ a: 1 }, { b: 2 }]);
    expect(() => parseManifests('a: [1\n')).toThrow(/does not parse/);
  });
});
