/**
 * Facts the rendered Helm manifests must hold beyond what the Kubernetes schemas can say (issue 16):
 * the restricted security context, probes on /healthz and /readyz (on the plain ops port when
 * OPS_PORT is set, as is the ServiceMonitor's scrape and a NetworkPolicy rule), resources, a drain that fits
 * in the grace period, environment names the gateway reads and no secret values, selectors that
 * find the pods. The catalog and connectors shipped in ConfigMaps are written out as the kubelet
 * would mount them and loaded with the gateway's own loaders. Schema validation is separate
 * (kubernetes-validate for the core kinds, the vendored CRD schema for the ServiceMonitor).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadCatalog } from '../../src/catalog/index.js';
import { CONFIG_KEYS, SECRET_KEYS } from '../../src/config/index.js';
import { loadConnectors } from '../../src/connectors/index.js';
import { SHUTDOWN_MARGIN_MS } from '../../src/cli/workers.js';
import { errorMessage } from '../../src/core/errors.js';
import { checkGatewayEnvironment, standIn, standInFiles } from './gateway-env.js';
import { report } from './report.js';
import type { Report } from './report.js';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The image's ENV (Dockerfile): what the container starts with before the ConfigMap and env. */
const IMAGE_ENV: Record<string, string> = { NODE_ENV: 'production', HOST: '0.0.0.0', PORT: '8080', CATALOG_DIR: '/app/schemas' };

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are untyped YAML */
type K8s = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [k: string]: any };

export function parseManifests(text: string): K8s[] {
  const docs = parseAllDocuments(text);
  const out: K8s[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`rendered YAML does not parse: ${d.errors[0]!.message}`);
    const v = d.toJS() as K8s | null;
    if (v !== null) out.push(v);
  }
  return out;
}

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/** Writes a ConfigMap volume's files as the kubelet would (items key → path, mode), and returns the folder. */
function materialize(cm: K8s, volume: any): string {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-cm-'));
  const items: { key: string; path: string; mode?: number }[] = volume.configMap.items ?? Object.keys(cm.data ?? {}).map((key) => ({ key, path: key }));
  for (const it of items) {
    const p = join(dir, it.path);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, String(cm.data?.[it.key] ?? ''));
    chmodSync(p, it.mode ?? volume.configMap.defaultMode ?? 0o644);
  }
  return dir;
}

export interface ManifestInput {
  readonly manifests: K8s[];
  /** Variable names the values put in extraEnv (not gateway settings, e.g. NODE_OPTIONS). */
  readonly extraEnvNames: readonly string[];
}

export function checkManifests({ manifests, extraEnvNames }: ManifestInput): Report {
  const r = report();
  const of = (kind: string): K8s[] => manifests.filter((m) => m.kind === kind);
  r.check(of('Secret').length === 0, 'no Secret is rendered (the chart only references Secrets)', 'the chart renders a Secret: secret values must never come from the chart');
  const deployments = of('Deployment');
  if (deployments.length !== 1) {
    r.fail(`expected one Deployment, got ${deployments.length}`);
    return r;
  }
  const dep = deployments[0]!;
  const pod = dep.spec.template.spec;
  const podLabels: Record<string, string> = dep.spec.template.metadata.labels;
  r.check(matches(dep.spec.selector.matchLabels, podLabels), 'the Deployment selects its own pods', 'the Deployment selector does not match its pod labels');
  const containers: any[] = pod.containers;
  const c = containers[0];
  r.check(containers.length === 1, 'one container', `${containers.length} containers`);

  // Restricted Pod Security Standard, and more: read-only root filesystem, no token.
  const psc = pod.securityContext ?? {};
  const sc = c.securityContext ?? {};
  r.check((sc.runAsNonRoot ?? psc.runAsNonRoot) === true, 'runAsNonRoot', 'runAsNonRoot is not true');
  r.check((sc.runAsUser ?? psc.runAsUser ?? 1) !== 0, 'not uid 0', 'runAsUser is 0');
  r.check(['RuntimeDefault', 'Localhost'].includes((sc.seccompProfile ?? psc.seccompProfile)?.type), 'seccompProfile RuntimeDefault', 'no RuntimeDefault/Localhost seccompProfile');
  r.check(sc.allowPrivilegeEscalation === false, 'allowPrivilegeEscalation false', 'allowPrivilegeEscalation is not false');
  r.check(sc.readOnlyRootFilesystem === true, 'readOnlyRootFilesystem', 'readOnlyRootFilesystem is not true');
  r.check((sc.capabilities?.drop ?? []).includes('ALL') && (sc.capabilities?.add ?? []).length === 0, 'capabilities: drop ALL, add none', 'capabilities do not drop ALL (or add some)');
  r.check(sc.privileged !== true && !pod.hostNetwork && !pod.hostPID && !pod.hostIPC, 'not privileged, no host namespaces', 'privileged or host namespaces');
  r.check(!(pod.volumes ?? []).some((v: any) => v.hostPath), 'no hostPath volumes', 'a hostPath volume');
  r.check(pod.automountServiceAccountToken === false, 'no service account token mounted', 'the service account token is mounted');

  // Probes and resources.
  const ports: any[] = c.ports ?? [];
  const probe = (name: string, path: string): void => {
    const p = c[name]?.httpGet;
    const portOk = ports.some((x) => x.name === p?.port || x.containerPort === p?.port);
    r.check(p?.path === path && portOk, `${name} on ${path}`, `${name} is not an httpGet of ${path} on a container port (${JSON.stringify(c[name] ?? null)})`);
  };
  probe('startupProbe', '/healthz');
  probe('livenessProbe', '/healthz');
  probe('readinessProbe', '/readyz');
  const res = c.resources ?? {};
  r.check(res.requests?.cpu !== undefined && res.requests?.memory !== undefined && res.limits?.memory !== undefined, `resources: requests ${res.requests?.cpu}/${res.requests?.memory}, memory limit ${res.limits?.memory}`, 'resources lack CPU and memory requests or a memory limit');

  // Environment: names the gateway reads; secrets only by reference.
  const envCms = (c.envFrom ?? []).map((e: any) => e.configMapRef?.name).filter(Boolean);
  const settings: Record<string, string> = Object.assign({}, ...of('ConfigMap').filter((m) => envCms.includes(m.metadata.name)).map((m) => m.data ?? {}));
  const cmKeys = Object.keys(settings);
  // The port speaks HTTPS when TLS_CERT_FILE is set (src/http/tls.ts): the probes must follow.
  const scheme = settings.TLS_CERT_FILE !== undefined || (c.env ?? []).some((e: any) => e.name === 'TLS_CERT_FILE') ? 'HTTPS' : 'HTTP';
  // OPS_PORT (src/config): a second listener, always plain HTTP and without partner keys; the
  // probes belong there, so that they depend on neither TLS_CERT_FILE nor the partners.
  const opsPort = settings.OPS_PORT === undefined ? undefined : Number(settings.OPS_PORT);
  const opsContainerPort = opsPort === undefined ? undefined : ports.find((x) => Number(x.containerPort) === opsPort);
  if (opsPort !== undefined) r.check(opsContainerPort !== undefined, `OPS_PORT ${opsPort} is container port ${opsContainerPort?.name ?? opsPort}`, `OPS_PORT ${opsPort} is not a container port: the probes and the scrape cannot name it`);
  /** Whether a probe's or Service's target (a name or number) is the ops port. */
  const isOps = (target: unknown): boolean => opsContainerPort !== undefined && (target === opsContainerPort.name || Number(target) === opsPort);
  for (const name of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    const got = c[name]?.httpGet?.scheme ?? 'HTTP';
    const onOps = isOps(c[name]?.httpGet?.port);
    const want = onOps ? 'HTTP' : scheme;
    r.check(got === want, `${name} over ${want}${onOps ? ' on the ops port' : ''}`, `${name} uses ${got}, but the port speaks ${want}${onOps ? ' (the ops port is never TLS)' : scheme === 'HTTPS' ? ' (TLS_CERT_FILE is set)' : ''}: the pod would never be ready`);
    if (opsPort !== undefined) r.check(onOps, `${name} on the ops port`, `${name} is not on the ops port although OPS_PORT is set: it depends on the API port's TLS and settings`);
  }
  const notSettings = cmKeys.filter((k) => !CONFIG_KEYS.includes(k));
  r.check(cmKeys.length > 0 && notSettings.length === 0, `ConfigMap variables are gateway settings: ${cmKeys.sort().join(', ')}`, `ConfigMap variables the gateway does not read: ${notSettings.join(', ') || '(no ConfigMap in envFrom)'}`);
  const secretInCm = cmKeys.filter((k) => SECRET_KEYS.includes(k));
  r.check(secretInCm.length === 0, 'no secret in a ConfigMap', `secret variables in a ConfigMap: ${secretInCm.join(', ')}`);
  const mounts: any[] = c.volumeMounts ?? [];
  const envNames = (c.env ?? []).map((e: any) => e.name as string);
  const dbUrl = [...cmKeys, ...envNames].filter((n: string) => n === 'DATABASE_URL' || n === 'DATABASE_URL_FILE');
  r.check(dbUrl.length === 0, 'no DATABASE_URL (nothing in the gateway reads it)', `${dbUrl.join(', ')} is set, but nothing in the gateway reads it (the outbox commands read OUTBOX_DATABASE_URL)`);
  const twice = envNames.filter((n: string, i: number) => envNames.indexOf(n) !== i);
  r.check(twice.length === 0, 'no env variable is given twice', `env variables given twice (the last wins): ${twice.join(', ')}`);
  const overriding = envNames.filter((n: string) => cmKeys.includes(n));
  r.check(overriding.length === 0, 'env overrides none of the ConfigMap\'s variables (the chart\'s checked settings)', `env overrides the ConfigMap's ${overriding.join(', ')} (env wins over envFrom): the chart's checks are bypassed`);
  for (const e of c.env ?? []) {
    const known = CONFIG_KEYS.includes(e.name) || extraEnvNames.includes(e.name);
    r.check(known, `env ${e.name} is ${CONFIG_KEYS.includes(e.name) ? 'a gateway setting' : 'from extraEnv'}`, `env ${e.name} is not a gateway setting`);
    if (SECRET_KEYS.includes(e.name)) r.check(e.value === undefined && e.valueFrom?.secretKeyRef?.name !== undefined, `${e.name} comes from Secret ${e.valueFrom?.secretKeyRef?.name}`, `${e.name} is given as a value, not a secretKeyRef`);
    if (e.name.endsWith('_FILE') && SECRET_KEYS.includes(e.name.slice(0, -5))) {
      r.check(mounts.some((m) => String(e.value).startsWith(`${m.mountPath}/`) && m.readOnly === true), `${e.name} points into a read-only secret mount`, `${e.name}=${e.value} is not under a read-only volume mount`);
    }
  }

  // Secrets are read once at start-up (the TLS pair excepted: reloaded by the gateway), so a
  // changed Secret must roll the pods: the chart's checksum/secrets (docs/deploy.md "Changing a Secret").
  const tlsDir = typeof settings.TLS_CERT_FILE === 'string' ? settings.TLS_CERT_FILE.replace(/\/[^/]*$/, '') : undefined;
  const tlsVolumes = new Set(mounts.filter((m) => tlsDir !== undefined && m.mountPath.replace(/\/$/, '') === tlsDir).map((m) => m.name as string));
  const readsSecrets = (c.env ?? []).some((e: any) => e.valueFrom?.secretKeyRef !== undefined) || (pod.volumes ?? []).some((v: any) => !tlsVolumes.has(v.name) && (v.secret !== undefined || (v.projected?.sources ?? []).some((x: any) => x.secret !== undefined)));
  if (readsSecrets) {
    const annotations: Record<string, string> = dep.spec.template.metadata.annotations ?? {};
    r.check(annotations['checksum/secrets'] !== undefined, 'the pods roll when a Secret they read changes (checksum/secrets)', 'the pods read Secrets at start-up but carry no checksum/secrets annotation: a changed Secret (a partner\'s new key) would not reach running pods');
  }

  // Shutdown: preStop sleep + SHUTDOWN_TIMEOUT_MS < terminationGracePeriodSeconds.
  const preStop: string[] = c.lifecycle?.preStop?.exec?.command ?? [];
  const sleepS = preStop[0] === 'sleep' ? Number(preStop[1]) : 0;
  const drainMs = Number(settings.SHUTDOWN_TIMEOUT_MS ?? 25_000);
  const grace = Number(pod.terminationGracePeriodSeconds ?? 30);
  r.check(preStop.length === 0 || (preStop[0] === 'sleep' && Number.isInteger(sleepS)), `preStop sleeps ${sleepS} s before SIGTERM`, `preStop is not a plain sleep: ${JSON.stringify(preStop)}`);
  // With GATEWAY_WORKERS the cluster primary waits SHUTDOWN_MARGIN_MS beyond the drain before it kills it.
  const marginMs = settings.GATEWAY_WORKERS !== undefined && settings.GATEWAY_WORKERS !== '1' ? SHUTDOWN_MARGIN_MS : 0;
  const margin = marginMs > 0 ? ` + the workers' margin ${marginMs} ms` : '';
  r.check(grace * 1000 > sleepS * 1000 + drainMs + marginMs, `terminationGracePeriodSeconds ${grace} > preStop ${sleepS} s + SHUTDOWN_TIMEOUT_MS ${drainMs} ms${margin}`, `terminationGracePeriodSeconds ${grace} does not exceed preStop ${sleepS} s + SHUTDOWN_TIMEOUT_MS ${drainMs} ms${margin}`);

  // The catalog and connectors in ConfigMaps: mounted where CATALOG_DIR / CONNECTORS_DIR point, and loadable.
  const shipped = (variable: string, load: (dir: string) => string): void => {
    const dir = settings[variable];
    const mount = dir === undefined ? undefined : mounts.find((m) => m.mountPath === dir);
    const volume = mount === undefined ? undefined : (pod.volumes ?? []).find((v: any) => v.name === mount.name);
    if (volume?.configMap === undefined) return;
    const cm = of('ConfigMap').find((m) => m.metadata.name === volume.configMap.name);
    if (cm === undefined) {
      r.fail(`${variable}: ConfigMap ${volume.configMap.name} is not rendered`);
      return;
    }
    const tmp = materialize(cm, volume);
    try {
      r.ok(`${variable} ${dir}: ConfigMap ${cm.metadata.name} ${load(tmp)}`);
    } catch (err) {
      r.fail(`${variable} ${dir}: ConfigMap ${cm.metadata.name} does not load: ${errorMessage(err)}`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  };
  shipped('CATALOG_DIR', (d) => `holds a catalog that loads (${loadCatalog(d).kinds.length} event kinds)`);
  shipped('CONNECTORS_DIR', (d) => `holds connectors that load (${loadConnectors(d).length} definition(s))`);

  const scrapeAnnotation = dep.spec.template.metadata.annotations?.['prometheus.io/scrape'] === 'true';
  const annotatedOps = opsPort !== undefined && Number(dep.spec.template.metadata.annotations?.['prometheus.io/port']) === opsPort;
  if (scrapeAnnotation) r.check(settings.METRICS_AUTH === 'public' || annotatedOps, annotatedOps ? 'prometheus.io/scrape on the ops port (no key needed)' : 'prometheus.io/scrape with METRICS_AUTH=public (annotation scrapes send no key)', `prometheus.io/scrape annotation, but METRICS_AUTH=${settings.METRICS_AUTH ?? 'admin (default)'}: annotation scrapes send no key and get 401 (point prometheus.io/port at OPS_PORT)`);

  // The container's environment as the process sees it (image ENV, then envFrom, then env), run
  // through `config check`: a pod that would exit 2 fails here.
  const env: Record<string, string | undefined> = { ...IMAGE_ENV, ...settings };
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef !== undefined) env[e.name] = standIn(e.name);
    else if (e.valueFrom?.configMapKeyRef !== undefined) env[e.name] = of('ConfigMap').find((m) => m.metadata.name === e.valueFrom.configMapKeyRef.name)?.data?.[e.valueFrom.configMapKeyRef.key];
  }
  const readOnlyMounts = mounts.filter((m) => m.readOnly === true && (pod.volumes ?? []).some((v: any) => v.name === m.name && (v.secret || v.projected || v.configMap)));
  const under = (path: string, m: any): boolean => path === m.mountPath || path.startsWith(`${String(m.mountPath).replace(/\/$/, '')}/`);
  const temps: string[] = [];
  const dirOf = (variable: string, image: string | undefined): void => {
    const dir = env[variable];
    if (dir === undefined) return;
    if (dir === image) {
      env[variable] = join(ROOT, variable === 'CATALOG_DIR' ? 'schemas' : 'connectors');
      return;
    }
    const mount = mounts.find((m) => m.mountPath === dir);
    const volume = mount === undefined ? undefined : (pod.volumes ?? []).find((v: any) => v.name === mount.name);
    const cm = volume?.configMap === undefined ? undefined : of('ConfigMap').find((m) => m.metadata.name === volume.configMap.name);
    if (cm !== undefined) {
      const tmp = materialize(cm, volume);
      temps.push(tmp);
      env[variable] = tmp;
    }
  };
  dirOf('CATALOG_DIR', '/app/schemas');
  dirOf('CONNECTORS_DIR', '/app/connectors');
  try {
    const checked = checkGatewayEnvironment(standInFiles(env, (p) => readOnlyMounts.some((m) => under(p, m))), 'the gateway container');
    for (const f of checked.facts) r.ok(f);
    for (const p of checked.problems) r.fail(p);
  } finally {
    for (const t of temps) rmSync(t, { recursive: true, force: true });
  }

  // Who finds whom.
  const services = of('Service');
  for (const s of services) {
    r.check(matches(s.spec.selector, podLabels), `Service ${s.metadata.name} selects the pods`, `Service ${s.metadata.name} selector does not match the pods`);
    for (const p of s.spec.ports ?? []) r.check(ports.some((x) => x.name === p.targetPort || x.containerPort === p.targetPort), `Service port ${p.name ?? p.port} → container port ${p.targetPort}`, `Service port ${p.name ?? p.port} targets ${p.targetPort}, which the container does not expose`);
  }
  for (const p of of('PodDisruptionBudget')) r.check(matches(p.spec.selector?.matchLabels, podLabels), `PodDisruptionBudget ${p.metadata.name} selects the pods`, `PodDisruptionBudget ${p.metadata.name} selector does not match the pods`);
  const hpas = of('HorizontalPodAutoscaler');
  for (const h of hpas) {
    const t = h.spec.scaleTargetRef;
    r.check(t.kind === 'Deployment' && t.name === dep.metadata.name, `HorizontalPodAutoscaler scales Deployment ${t.name} (${h.spec.minReplicas}–${h.spec.maxReplicas})`, `HorizontalPodAutoscaler targets ${t.kind}/${t.name}, not the Deployment`);
    r.check(dep.spec.replicas === undefined, 'the Deployment leaves replicas to the autoscaler', 'the Deployment sets replicas although an autoscaler owns them');
  }
  // In-cluster brokers over TLS have the cluster's own CA (Strimzi, …), which Node does not trust.
  const inCluster = (settings.KAFKA_BROKERS ?? '').split(',').some((b) => /\.svc(\.cluster\.local)?:\d+$/.test(b.trim()));
  if (settings.KAFKA_SSL === 'true' && inCluster) r.check(settings.KAFKA_SSL_CA_FILE !== undefined, 'KAFKA_SSL to in-cluster brokers with their CA (KAFKA_SSL_CA_FILE)', 'KAFKA_SSL=true to in-cluster brokers (*.svc) without KAFKA_SSL_CA_FILE: their certificates are signed by the cluster\'s own CA, and the handshake fails');
  for (const n of of('NetworkPolicy')) {
    const egress: any[] | undefined = (n.spec.policyTypes ?? []).includes('Egress') ? (n.spec.egress ?? []) : undefined;
    if (egress !== undefined) {
      const ports = (rule: any): number[] => (rule.ports ?? []).map((p: any) => Number(p.port));
      const beyond = egress.some((rule) => (rule.to ?? []).some((peer: any) => peer.ipBlock !== undefined) && (ports(rule).length === 0 || ports(rule).includes(443)));
      r.check(beyond, `NetworkPolicy ${n.metadata.name}: egress admits HTTPS beyond the cluster (webhooks, OIDC_JWKS_URL)`, `NetworkPolicy ${n.metadata.name} restricts egress without a rule for HTTPS beyond the cluster: push subscriptions' webhooks and OIDC_JWKS_URL are blocked`);
      const otlp = settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? settings.OTEL_EXPORTER_OTLP_ENDPOINT;
      if (otlp !== undefined) {
        const u = new URL(otlp);
        const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
        r.check(egress.some((rule) => ports(rule).length === 0 || ports(rule).includes(port)), `NetworkPolicy ${n.metadata.name}: egress admits the OTLP endpoint's port ${port}`, `NetworkPolicy ${n.metadata.name} restricts egress without a rule for the OTLP endpoint's port ${port}: traces are dropped`);
      }
    }
    r.check(matches(n.spec.podSelector?.matchLabels, podLabels), `NetworkPolicy ${n.metadata.name} selects the pods`, `NetworkPolicy ${n.metadata.name} does not select the pods`);
    const ingressPorts = (n.spec.ingress ?? []).flatMap((rule: any) => (rule.ports ?? []).map((p: any) => p.port));
    // Behind an ingress controller without TRUSTED_PROXIES every partner shares the controller's
    // address, and so its failed-authentication allowance.
    const viaIngress = (n.spec.ingress ?? []).some((rule: any) => (rule.from ?? []).some((peer: any) => /ingress/.test(String(peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ?? ''))));
    if (viaIngress) r.check(settings.TRUSTED_PROXIES !== undefined && settings.TRUSTED_PROXIES !== '', `behind the ingress controller, TRUSTED_PROXIES is set (${settings.TRUSTED_PROXIES})`, `NetworkPolicy ${n.metadata.name} admits an ingress controller's namespace, but TRUSTED_PROXIES is not set: every client shares the controller's address and failed-authentication allowance`);
    r.check(ingressPorts.some((p: unknown) => ports.some((x) => x.name === p || x.containerPort === p)), 'NetworkPolicy admits the HTTP port', 'NetworkPolicy admits no container port: the Service and probes would be cut off');
    if (opsPort !== undefined) {
      const opsRules = (n.spec.ingress ?? []).filter((rule: any) => (rule.ports ?? []).some((p: any) => isOps(p.port)));
      r.check(opsRules.length > 0, `NetworkPolicy ${n.metadata.name} admits the ops port (${opsRules.map((rule: any) => (rule.from === undefined ? 'any source' : `${rule.from.length} peer(s)`)).join(', ')})`, `NetworkPolicy ${n.metadata.name} does not admit the ops port: Prometheus cannot scrape OPS_PORT`);
    }
  }
  for (const m of of('ServiceMonitor')) {
    const svc = services.find((s) => matches(m.spec.selector?.matchLabels, s.metadata.labels));
    r.check(svc !== undefined, `ServiceMonitor ${m.metadata.name} selects Service ${svc?.metadata.name}`, `ServiceMonitor ${m.metadata.name} selects no rendered Service`);
    /** Whether an endpoint scrapes the ops port (its Service port targets it): plain HTTP, no key. */
    const onOps = (e: any): boolean => (svc?.spec.ports ?? []).some((p: any) => p.name === e.port && isOps(p.targetPort));
    for (const e of m.spec.endpoints ?? []) {
      const want = onOps(e) ? 'http' : scheme.toLowerCase();
      r.check((e.scheme ?? 'http') === want, `ServiceMonitor scrapes over ${want}${onOps(e) ? ' on the ops port' : ''}`, `ServiceMonitor endpoint ${e.port} scrapes over ${e.scheme ?? 'http'}, but the port speaks ${want}${onOps(e) ? ' (the ops port is never TLS)' : ''}`);
    }
    const metricsAuth = settings.METRICS_AUTH ?? 'admin';
    for (const e of m.spec.endpoints ?? []) {
      if (onOps(e)) {
        r.ok(`ServiceMonitor endpoint ${e.port} is the ops port: no credentials needed`);
        continue;
      }
      const bearer = e.authorization?.credentials?.name !== undefined || e.bearerTokenSecret?.name !== undefined;
      r.check(metricsAuth === 'public' || bearer, `ServiceMonitor endpoint ${e.port} sends a bearer token (METRICS_AUTH=${metricsAuth})`, `ServiceMonitor endpoint ${e.port} sends no credentials, but METRICS_AUTH=${metricsAuth}: every scrape gets 401`);
    }
    if (opsPort !== undefined) r.check((m.spec.endpoints ?? []).every(onOps), 'ServiceMonitor scrapes the ops port', 'ServiceMonitor does not scrape the ops port although OPS_PORT is set: the scrape depends on the API port\'s TLS and METRICS_AUTH');
    for (const e of m.spec.endpoints ?? []) r.check(svc !== undefined && (svc.spec.ports ?? []).some((p: any) => p.name === e.port) && e.path === '/metrics', `ServiceMonitor scrapes port ${e.port} at ${e.path}`, `ServiceMonitor endpoint ${e.port} ${e.path} is not the Service's port at /metrics`);
  }
  return r;
}
