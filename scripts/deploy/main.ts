/**
 * The deployment checks behind scripts/check-deploy.sh; each prints what it verified and exits 1
 * on any problem (2 on a usage error).
 *
 *   tsx scripts/deploy/main.ts dockerfile
 *   tsx scripts/deploy/main.ts image-smoke APP_DIR             (the runtime stage laid out in APP_DIR)
 *   tsx scripts/deploy/main.ts compose PROJECT.json            (compose-go's normalized project)
 *   tsx scripts/deploy/main.ts manifests RENDERED.yaml --kubernetes-validate BIN --kube-version V [--values FILE]…
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Ajv } from 'ajv';
import { parse, stringify } from 'yaml';
import { CONFIG_KEYS, SECRET_KEYS } from '../../src/config/index.js';
import { checkCompose } from './compose.js';
import type { ComposeProject } from './compose.js';
import { checkDockerfile, healthcheckCommand } from './dockerfile.js';
import { checkManifests, parseManifests } from './manifests.js';
import { print, report } from './report.js';
import type { Report } from './report.js';
import { SCHEMA_FILE } from './vendor-servicemonitor-schema.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * kubernetes-validate --strict on every document but the ServiceMonitor. It only warns (exit 0)
 * about a kind it has no schema for, so every document must be reported as passed.
 */
function kubernetesValidate(bin: string, version: string, docs: object[]): Report {
  const r = report();
  const dir = mkdtempSync(join(tmpdir(), 'ceg-kv-'));
  try {
    docs.forEach((d, i) => writeFileSync(join(dir, `${String(i).padStart(2, '0')}.yaml`), stringify(d)));
    const files = docs.map((_, i) => join(dir, `${String(i).padStart(2, '0')}.yaml`));
    let out: string;
    let status = 0;
    try {
      out = execFileSync(bin, ['--strict', '--kubernetes-version', version, ...files], { encoding: 'utf8' });
    } catch (err) {
      const e = err as { stdout?: string; status?: number };
      out = e.stdout ?? '';
      status = e.status ?? 2;
    }
    const lines = out.split('\n').filter(Boolean);
    const passed = lines.filter((l) => l.startsWith('INFO ') && l.includes(' passed for resource '));
    for (const l of lines.filter((x) => !x.startsWith('INFO '))) r.fail(`kubernetes-validate: ${l.replaceAll(dir + '/', '')}`);
    for (const l of passed) r.ok(`schema ${/resource (\S+)/.exec(l)?.[1] ?? '?'} (Kubernetes ${version}, strict)`);
    if (status !== 0 || passed.length !== docs.length) r.fail(`kubernetes-validate: ${passed.length} of ${docs.length} documents passed (exit ${status})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return r;
}

function serviceMonitors(docs: object[]): Report {
  const r = report();
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  const validate = ajv.compile(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as object);
  for (const d of docs) {
    const name = (d as { metadata?: { name?: string } }).metadata?.name ?? '?';
    if (validate(d)) r.ok(`schema servicemonitor/${name} (vendored CRD schema, strict)`);
    else for (const e of validate.errors ?? []) r.fail(`servicemonitor/${name}${e.instancePath}: ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  }
  return r;
}

function extraEnvNames(valuesFiles: string[]): string[] {
  return valuesFiles.flatMap((f) => {
    const v = parse(readFileSync(f, 'utf8')) as { extraEnv?: { name: string }[] } | null;
    return (v?.extraEnv ?? []).map((e) => e.name);
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * The runtime stage without Docker: APP_DIR holds what the Dockerfile's last stage copies
 * (production node_modules from `npm ci --omit=dev`, dist/, schemas/, connectors/, package*.json).
 * The gateway starts from there with the image's CMD and ENV (on loopback), the image's own
 * HEALTHCHECK command must pass against it, SIGTERM must end it with exit code 0 within
 * SHUTDOWN_TIMEOUT_MS, and the HEALTHCHECK must then fail.
 */
async function imageSmoke(appDir: string): Promise<Report> {
  const r = report();
  const hc = healthcheckCommand(readFileSync(process.env.CE_GATEWAY_DOCKERFILE ?? join(ROOT, 'Dockerfile'), 'utf8'));
  if (hc === undefined) {
    r.fail('the Dockerfile has no exec-form HEALTHCHECK');
    return r;
  }
  // Plain HTTP, then HTTPS (TLS_CERT_FILE/TLS_KEY_FILE: the port speaks only HTTPS, and the image's
  // HEALTHCHECK must follow it, or a TLS deployment is never healthy).
  const certDir = mkdtempSync(join(tmpdir(), 'ceg-smoke-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1', '-keyout', join(certDir, 'key.pem'), '-out', join(certDir, 'cert.pem')], { stdio: 'ignore' });
    for (const tls of [false, true]) {
      const extra: Record<string, string> = tls ? { TLS_CERT_FILE: join(certDir, 'cert.pem'), TLS_KEY_FILE: join(certDir, 'key.pem') } : {};
      await smokeOnce(r, appDir, hc, extra, tls ? ' (HTTPS: TLS_CERT_FILE set)' : '');
    }
  } finally {
    rmSync(certDir, { recursive: true, force: true });
  }
  return r;
}

async function smokeOnce(r: ReturnType<typeof report>, appDir: string, hc: string[], extra: Record<string, string>, how: string): Promise<void> {
  const port = await freePort();
  const env = { PATH: process.env.PATH, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), CATALOG_DIR: join(appDir, 'schemas'), SHUTDOWN_TIMEOUT_MS: '10000', LOG_LEVEL: 'warn', ...extra };
  const child = spawn('node', ['dist/cli/main.js', 'serve'], { cwd: appDir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const probe = (): number => spawnSync(hc[0]!, hc.slice(1), { env, timeout: 10_000 }).status ?? -1;
  const scheme = extra.TLS_CERT_FILE === undefined ? 'http' : 'https';
  try {
    // Up when the port answers at all (any scheme mistake of the HEALTHCHECK shows below, not here).
    let up = false;
    for (let i = 0; i < 100 && !up && child.exitCode === null; i++) {
      up = await new Promise<boolean>((resolve) => {
        const req = (scheme === 'https' ? httpsGet : httpGet)({ host: '127.0.0.1', port, path: '/healthz', rejectUnauthorized: false, timeout: 2000 }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        });
        req.on('error', () => resolve(false));
        req.on('timeout', () => req.destroy());
      });
      if (!up) await new Promise((res) => setTimeout(res, 200));
    }
    r.check(up, `the runtime stage (production dependencies only) starts and serves /healthz${how}`, `the runtime stage does not serve /healthz${how}: ${stderr.slice(-2000)}`);
    if (!up) return;
    r.check(probe() === 0, `the image's HEALTHCHECK command passes against it${how}`, `the image's HEALTHCHECK command fails against a running gateway${how}`);
    const t0 = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    r.check(code === 0, `SIGTERM: drained and exited 0 in ${Date.now() - t0} ms${how}`, `SIGTERM: exit code ${code}${how} ${stderr.slice(-2000)}`);
    r.check(probe() !== 0, `the HEALTHCHECK command fails once the gateway is gone${how}`, `the HEALTHCHECK command passes with no gateway running${how}`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'dockerfile') {
    const r = checkDockerfile({ dockerfile: readFileSync(resolve(ROOT, rest[0] ?? 'Dockerfile'), 'utf8'), dockerignore: readFileSync(join(ROOT, '.dockerignore'), 'utf8'), contextDir: ROOT, configKeys: CONFIG_KEYS });
    return print('Dockerfile', r) ? 0 : 1;
  }
  if (cmd === 'compose' && rest[0] !== undefined) {
    const project = JSON.parse(readFileSync(rest[0], 'utf8')) as ComposeProject;
    return print('compose', checkCompose(project, ROOT)) ? 0 : 1;
  }
  if (cmd === 'image-smoke' && rest[0] !== undefined) {
    return print('image runtime stage', await imageSmoke(rest[0])) ? 0 : 1;
  }
  if (cmd === 'docs-variables' && rest[0] !== undefined) {
    // Every setting the gateway reads is in deploy.md's variable table (the `<SECRET>_FILE` forms are described once, under Secrets).
    const doc = readFileSync(resolve(ROOT, rest[0]), 'utf8');
    const at = doc.indexOf('## Environment variables');
    const section = at < 0 ? '' : doc.slice(at);
    const r = report();
    const secretFiles = new Set(SECRET_KEYS.map((k) => `${k}_FILE`));
    // Named in the first cell of a table row: a mention in another row's description does not document a setting.
    const named = new Set(section.split('\n').filter((l) => l.startsWith('|')).flatMap((l) => [...(l.split('|')[1] ?? '').matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!)));
    const missing = CONFIG_KEYS.filter((k) => !secretFiles.has(k) && !named.has(k));
    r.check(at >= 0 && missing.length === 0, `${rest[0]}: its variable table names every setting the gateway reads (${CONFIG_KEYS.length - secretFiles.size})`, `${rest[0]}: settings the gateway reads that its "Environment variables" section does not name: ${missing.join(', ') || '(no such section)'}`);
    return print('docs', r) ? 0 : 1;
  }
  if (cmd === 'docs-helm-example' && rest[0] !== undefined) {
    const args = docsHelmExample(resolve(ROOT, rest[0]));
    if (args === undefined) return 1;
    process.stdout.write(`${args.join('\n')}\n`);
    return 0;
  }
  if (cmd === 'manifests') {
    const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { 'kubernetes-validate': { type: 'string' }, 'kube-version': { type: 'string' }, values: { type: 'string', multiple: true } } });
    const file = positionals[0];
    const bin = values['kubernetes-validate'];
    const version = values['kube-version'];
    if (file === undefined || bin === undefined || version === undefined) return usage();
    const docs = parseManifests(readFileSync(file, 'utf8'));
    const title = `helm ${(values.values ?? []).map((f) => f.replace(ROOT, '')).join(' + ') || 'values.yaml'} (k8s ${version})`;
    const parts = [
      checkManifests({ manifests: docs, extraEnvNames: extraEnvNames(values.values ?? []) }),
      kubernetesValidate(bin, version, docs.filter((d) => d.kind !== 'ServiceMonitor')),
      serviceMonitors(docs.filter((d) => d.kind === 'ServiceMonitor')),
    ];
    return print(title, { facts: parts.flatMap((p) => p.facts), problems: parts.flatMap((p) => p.problems) }) ? 0 : 1;
  }
  return usage();
}

/** Shell words of a command line: '…' literal, "…" and \x outside quotes as a POSIX shell reads them (no expansions). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let cur: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      cur = (cur ?? '') + line.slice(i + 1, end < 0 ? undefined : end);
      i = end < 0 ? line.length : end;
    } else if (ch === '"') {
      let j = i + 1;
      let v = '';
      for (; j < line.length && line[j] !== '"'; j++) v += line[j] === '\\' && /["\\$`]/.test(line[j + 1] ?? '') ? line[++j] : line[j];
      cur = (cur ?? '') + v;
      i = j;
    } else if (ch === '\\') cur = (cur ?? '') + (line[++i] ?? '');
    else if (/\s/.test(ch)) {
      if (cur !== undefined) words.push(cur);
      cur = undefined;
    } else cur = (cur ?? '') + ch;
  }
  if (cur !== undefined) words.push(cur);
  return words;
}

/** The arguments after the chart of docs/deploy.md's first `helm install gw ./helm/ce-gateway …` example (continuation lines joined), one per line. */
function docsHelmExample(file: string): string[] | undefined {
  const lines = readFileSync(file, 'utf8').split('\n');
  const at = lines.findIndex((l) => l.startsWith('helm install gw ./helm/ce-gateway'));
  if (at < 0) return undefined;
  let cmd = '';
  for (let i = at; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.endsWith('\\')) cmd += `${l.slice(0, -1)} `;
    else {
      cmd += l;
      break;
    }
  }
  const words = shellWords(cmd.replace(/\s+#.*$/, ''));
  const args = words.slice(words.indexOf('./helm/ce-gateway') + 1);
  return args.some((a) => a === '--set') ? args : undefined;
}

function usage(): number {
  process.stderr.write('usage: main.ts dockerfile [FILE] | image-smoke APP_DIR | compose PROJECT.json | manifests RENDERED.yaml --kubernetes-validate BIN --kube-version V [--values FILE]…\n');
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
