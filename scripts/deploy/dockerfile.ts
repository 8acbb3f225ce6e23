/**
 * Facts the Dockerfile must hold (issue 16), read with dockerfile-ast (the parser behind the VS Code
 * Docker extension); hadolint lints it separately. `.dockerignore` is applied with
 * @balena/dockerignore, which follows Docker's own matching rules.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import type { Ignore } from '@balena/dockerignore';
import { DockerfileParser } from 'dockerfile-ast';
import type { Copy, Instruction } from 'dockerfile-ast';
import { report } from './report.js';
import type { Report } from './report.js';

// A CommonJS module whose types declare an ES default export: required as what it is.
const ignore = createRequire(import.meta.url)('@balena/dockerignore') as () => Ignore;

interface Stage {
  readonly name: string | null;
  readonly image: string;
  readonly instructions: Instruction[];
}

/** Words that must never name a build argument or an environment variable of the image. */
const SECRET_WORDS = /PASSWORD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|DATABASE_URL|API_KEY/i;

function words(i: Instruction): string[] {
  return i.getArguments().map((a) => a.getValue());
}

/** The stage a COPY takes its files from (`--from=`), if any. */
function copyFrom(i: Instruction): string | undefined {
  return i.getKeyword() === 'COPY' ? ((i as Copy).getFromFlag()?.getValue() ?? undefined) : undefined;
}

/** JSON (exec) form arguments, or undefined for the shell form. */
function execForm(i: Instruction): string[] | undefined {
  const raw = (i.getRawArgumentsContent() ?? '').trim();
  const json = raw.replace(/^--\S+\s+/g, '');
  if (!json.startsWith('[')) return undefined;
  try {
    const v: unknown = JSON.parse(json);
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
  } catch {
    return undefined;
  }
}

function filesUnder(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(root, p));
    else out.push(relative(root, p));
  }
  return out;
}

/** The final stage's HEALTHCHECK command in exec form, or undefined. */
export function healthcheckCommand(dockerfile: string): string[] | undefined {
  const df = DockerfileParser.parse(dockerfile);
  const hc = df.getInstructions().filter((i) => i.getKeyword() === 'FROM' || i.getKeyword() === 'HEALTHCHECK');
  const last = hc.at(-1);
  if (last === undefined || last.getKeyword() !== 'HEALTHCHECK') return undefined;
  const raw = last.getRawArgumentsContent() ?? '';
  const at = raw.indexOf('CMD');
  if (at < 0) return undefined;
  try {
    const v: unknown = JSON.parse(raw.slice(at + 3).replace(/\\\n/g, ' ').trim());
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
  } catch {
    return undefined;
  }
}

export interface DockerfileInput {
  readonly dockerfile: string;
  readonly dockerignore: string;
  /** The build context (the repository root). */
  readonly contextDir: string;
  /** The gateway's configuration keys (CONFIG_KEYS). */
  readonly configKeys: readonly string[];
}

export function checkDockerfile(input: DockerfileInput): Report {
  const r = report();
  const df = DockerfileParser.parse(input.dockerfile);
  const args = new Map<string, string>();
  for (const a of df.getInitialARGs()) for (const p of a.getProperties()) args.set(p.getName(), p.getValue() ?? '');
  const expand = (s: string): string => s.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_m, n: string) => args.get(n) ?? `\${${n}}`);

  const stages: Stage[] = [];
  for (const i of df.getInstructions()) {
    const kw = i.getKeyword();
    if (kw === 'FROM') {
      const w = words(i);
      const as = w.findIndex((x) => x.toUpperCase() === 'AS');
      stages.push({ name: as >= 0 ? (w[as + 1] ?? null) : null, image: expand(w.find((x) => !x.startsWith('--')) ?? ''), instructions: [] });
    } else if (stages.length > 0) stages.at(-1)!.instructions.push(i);
  }
  r.check(stages.length >= 2, `multi-stage (${stages.length} stages: ${stages.map((s) => s.name ?? '?').join(', ')})`, `not multi-stage (${stages.length} stage)`);
  const final = stages.at(-1);
  if (!final) {
    r.fail('no FROM');
    return r;
  }
  const of = (s: Stage, kw: string): Instruction[] => s.instructions.filter((i) => i.getKeyword() === kw);
  const stageNames = new Set(stages.map((s) => s.name).filter((n): n is string => n !== null));

  // Node LTS (an even major from 20 on), slim.
  for (const s of stages) {
    const m = /^(?:docker\.io\/(?:library\/)?)?node:(\d+)(?:[.\d]*)-(\w+-)?slim(@sha256:[a-f0-9]{64})?$/.exec(s.image);
    const major = m ? Number(m[1]) : NaN;
    r.check(m !== null && major >= 20 && major % 2 === 0, `stage ${s.name ?? '?'} is on Node LTS slim (${s.image})`, `stage ${s.name ?? '?'}: ${s.image} is not a Node LTS slim image (node:<even major ≥ 20>-…slim)`);
  }

  // Non-root.
  const users = of(final, 'USER').map((i) => words(i)[0] ?? '');
  const user = users.at(-1);
  const uid = user?.split(':')[0];
  r.check(uid !== undefined && uid !== 'root' && uid !== '0', `runs as a non-root user (USER ${user ?? '-'})`, `the final stage runs as root (USER ${user ?? 'missing'})`);
  r.check(uid !== undefined && /^\d+$/.test(uid), 'the user is numeric (Kubernetes runAsNonRoot can verify it)', `USER ${user ?? '-'} is not numeric: Kubernetes cannot verify runAsNonRoot`);

  // Production dependencies only: node_modules come from a stage that ran `npm ci --omit=dev`.
  const prodStages = stages.filter((s) => of(s, 'RUN').some((i) => /\bnpm ci\b[^&|;]*--omit=dev/.test(i.getArgumentsContent() ?? '')));
  r.check(prodStages.length > 0, `production dependencies installed by \`npm ci --omit=dev\` (stage ${prodStages.map((s) => s.name).join(', ')})`, 'no stage runs `npm ci --omit=dev`');
  const nodeModules = of(final, 'COPY').filter((i) => words(i).some((w) => /node_modules\/?$/.test(w)));
  const fromProd = nodeModules.length === 1 && prodStages.some((s) => s.name !== null && s.name === copyFrom(nodeModules[0]!));
  r.check(fromProd, 'the runtime stage takes node_modules from that stage only', 'the runtime stage does not take node_modules (only) from the `npm ci --omit=dev` stage');
  const finalInstalls = of(final, 'RUN').filter((i) => /\bnpm (ci|install|i)\b/.test(i.getArgumentsContent() ?? ''));
  r.check(finalInstalls.length === 0, 'the runtime stage installs nothing itself', `the runtime stage runs npm: ${finalInstalls.map((i) => i.getArgumentsContent()).join('; ')}`);

  // Health check: exec form, node's fetch of /healthz (no curl in slim images).
  const hc = of(final, 'HEALTHCHECK');
  const hcExec = healthcheckCommand(input.dockerfile);
  r.check(hc.length === 1 && hcExec?.[0] === 'node' && hcExec[1] === '-e' && /fetch\(.*\/healthz/.test(hcExec[2] ?? ''), 'HEALTHCHECK runs `node -e` fetch of /healthz (exec form)', `HEALTHCHECK is not a \`node -e\` fetch of /healthz in exec form: ${hc[0]?.getArgumentsContent() ?? 'missing'}`);

  // Start command.
  const cmd = of(final, 'CMD').at(-1);
  const cmdExec = cmd ? execForm(cmd) : undefined;
  r.check(cmdExec !== undefined && cmdExec[0] === 'node' && cmdExec.includes('serve'), `CMD ${JSON.stringify(cmdExec)} (exec form: node gets SIGTERM from the init)`, `CMD is not \`node … serve\` in exec form: ${cmd?.getArgumentsContent() ?? 'missing'}`);
  // An init as PID 1 that reaps shell-hook children and forwards signals (Kubernetes adds none).
  const entry = of(final, 'ENTRYPOINT').at(-1);
  const entryExec = entry ? execForm(entry) : undefined;
  r.check(entryExec !== undefined && /(^|\/)tini$/.test(entryExec[0] ?? '') && entryExec[1] === '--', `ENTRYPOINT ${JSON.stringify(entryExec)}: tini is PID 1 (reaps hook children, forwards signals)`, `ENTRYPOINT is not tini in exec form (${entry?.getArgumentsContent() ?? 'missing'}): node as PID 1 leaves shell-hook children as zombies on Kubernetes`);

  // COPY sources: from an existing stage, or from the context, existing in the repo and not excluded by .dockerignore.
  const ig = ignore().add(input.dockerignore.split('\n'));
  for (const s of stages) {
    for (const i of of(s, 'COPY').concat(of(s, 'ADD'))) {
      const w = words(i);
      const from = copyFrom(i);
      const paths = w.filter((x) => !x.startsWith('--'));
      const sources = paths.slice(0, -1);
      if (from !== undefined) {
        r.check(stageNames.has(from), `COPY --from=${from} names a stage`, `COPY --from=${from}: no such stage`);
        continue;
      }
      for (const src of sources) {
        const p = join(input.contextDir, src);
        if (!existsSync(p)) {
          r.fail(`COPY ${src}: not in the repository`);
          continue;
        }
        const files = statSync(p).isDirectory() ? filesUnder(input.contextDir, p) : [relative(input.contextDir, p)];
        const sent = files.filter((f) => !ig.ignores(f));
        r.check(sent.length > 0, `COPY ${src}: exists and reaches the build context (${sent.length} file(s))`, `COPY ${src}: excluded by .dockerignore`);
      }
    }
  }

  // Nothing secret in ARG/ENV; ENV of the runtime stage names gateway settings only (plus NODE_ENV).
  for (const s of stages) {
    for (const i of [...of(s, 'ARG'), ...of(s, 'ENV')]) {
      for (const w of words(i)) {
        const name = w.split('=')[0]!;
        if (SECRET_WORDS.test(name)) r.fail(`${i.getKeyword()} ${name} in stage ${s.name ?? '?'}: secrets never go into an image`);
      }
    }
  }
  const envNames = of(final, 'ENV').flatMap((i) => (i as unknown as { getProperties(): { getName(): string }[] }).getProperties().map((p) => p.getName()));
  const unknown = envNames.filter((n) => n !== 'NODE_ENV' && !input.configKeys.includes(n));
  r.check(unknown.length === 0, `runtime ENV ${envNames.join(', ')} are gateway settings (or NODE_ENV)`, `runtime ENV not read by the gateway: ${unknown.join(', ')}`);
  return r;
}
