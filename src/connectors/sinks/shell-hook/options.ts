/**
 * Settings of a shell-hook sink: their schema (shared by the connector loader and programmatic
 * callers), defaults, and resolution into frozen {@link ShellHookOptions}.
 * Spec: DESIGN "Connectors"; bus spec "Migration Path".
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { envNameProblem, isSecretLikeName, pathProblem } from '../../names.js';
import { sinkOutcomes } from '../../outcome.js';
import type { SinkOutcome } from '../../outcome.js';
import type { HookEnvSettings } from './env.js';
import { exitCodePolicy } from './exit-codes.js';
import type { ExitCodePolicy } from './exit-codes.js';

/** PATH of a hook unless its connector sets one. */
export const DEFAULT_HOOK_PATH = '/usr/local/bin:/usr/bin:/bin';

const outcome = z.enum(sinkOutcomes as [SinkOutcome, ...SinkOutcome[]]);
const noNul = (what: string) => z.string().refine((s) => !s.includes('\0'), `${what} cannot contain NUL`);
/**
 * A string, or a number / boolean taken as its text (`RETRIES: 3` → "3"). From a connector file
 * the loader passes an unquoted number as written (`1.10`, `007`, `0x1F` stay so: YAML would read
 * 1.1, 7, 31), see src/connectors/loader/parse.ts.
 */
const text = (what: string) =>
  z
    .union([z.string(), z.number(), z.boolean()], { error: `${what}: a string (a number or true/false is taken as its text; null is not a value)` })
    .transform((v) => String(v))
    .pipe(noNul(what));
const BARE_COMMAND = /^[A-Za-z0-9._+-]{1,255}$/;
const RESERVED = /^(CE_|CEG_)/i;

const envName = z.string().superRefine((name, ctx) => {
  const problem = envNameProblem(name);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  else if (name === 'PATH') ctx.addIssue({ code: 'custom', message: 'set PATH with the `path` setting' });
  else if (RESERVED.test(name)) ctx.addIssue({ code: 'custom', message: 'names starting with CE_ or CEG_ are reserved for the event and the delivery' });
});

const pathString = z.string().superRefine((p, ctx) => {
  const problem = pathProblem(p);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

/** Schema of the `sink:` section of a `kind: shell-hook` connector. Unknown keys are errors. */
export const shellHookSettingsSchema = z.strictObject({
  /** argv: the executable, then its arguments. No shell: `$VAR`, `;`, `|` are passed literally. */
  command: z
    .array(text('a command argument'))
    .min(1, 'command: the executable, then its arguments')
    .superRefine((argv, ctx) => {
      const file = argv[0];
      if (file === undefined) return;
      const problem = file.includes('/') ? pathProblem(file) : BARE_COMMAND.test(file) ? undefined : 'a bare command name is [A-Za-z0-9._+-]; give a path (./x.sh or /usr/bin/x) otherwise';
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, path: [0] });
    }),
  /** Working directory; relative = to the connector file's folder (the default). */
  workingDirectory: pathString.optional(),
  timeoutMs: z.number().int().min(1).max(86_400_000).default(30_000),
  killGraceMs: z.number().int().min(0).max(600_000).default(5_000),
  env: z.record(envName, text('a variable value')).default({}),
  /** Variables copied from the gateway's environment when set there; secret-like names are refused. */
  passEnv: z
    .array(
      envName.superRefine((name, ctx) => {
        if (isSecretLikeName(name)) ctx.addIssue({ code: 'custom', message: `${name} looks like a secret; the gateway never passes its secrets to hooks (set the value under env if the hook needs it)` });
      }),
    )
    .default([]),
  path: z
    .string()
    .default(DEFAULT_HOOK_PATH)
    .superRefine((p, ctx) => {
      for (const dir of p.split(':')) {
        const problem = !dir.startsWith('/') ? 'PATH entries must be absolute directories' : pathProblem(dir);
        if (problem !== undefined) {
          ctx.addIssue({ code: 'custom', message: `${JSON.stringify(dir)}: ${problem}` });
          return;
        }
      }
    }),
  /** Bytes of stdout and of stderr kept for logs and the dead-letter reason (the last ones). */
  maxOutputBytes: z.number().int().min(0).max(1_048_576).default(4096),
  /** Merged over the defaults `{ 0: handled, 75: retry }`. */
  exitCodes: z.record(z.string().regex(/^(0|[1-9][0-9]{0,2})$/, 'exit codes are integers 0–255').refine((k) => Number(k) <= 255, 'exit codes are integers 0–255'), outcome).default({}),
  otherExitCodes: outcome.optional(),
  onTimeout: outcome.optional(),
  onSignal: outcome.optional(),
  onSpawnFailure: outcome.optional(),
});

/** `sink:` of a shell-hook connector as written (before defaults). */
export type ShellHookSettings = z.input<typeof shellHookSettingsSchema>;
/** `sink:` of a shell-hook connector after validation and defaults. */
export type ParsedShellHookSettings = z.output<typeof shellHookSettingsSchema>;

/** A resolved, frozen shell-hook configuration. */
export interface ShellHookOptions {
  /** argv; `command[0]` is absolute when it was given as a path. */
  readonly command: readonly string[];
  /** Absolute working directory. */
  readonly cwd: string;
  /** ms */
  readonly timeoutMs: number;
  /** ms between SIGTERM and SIGKILL. */
  readonly killGraceMs: number;
  /** bytes per stream */
  readonly maxOutputBytes: number;
  readonly env: HookEnvSettings;
  readonly exitCodes: ExitCodePolicy;
}

export interface ResolveContext {
  /** Folder relative paths are resolved against (the connector file's folder). */
  readonly baseDir: string;
  /** Where `passEnv` variables are read from; default `process.env`. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
}

/** Validated settings → frozen options (paths made absolute, `passEnv` read). */
export function shellHookOptionsFrom(s: ParsedShellHookSettings, ctx: ResolveContext): ShellHookOptions {
  const environment = ctx.environment ?? process.env;
  const [file, ...args] = s.command;
  const vars: Record<string, string> = {};
  for (const name of s.passEnv) {
    const v = environment[name];
    if (v !== undefined && !v.includes('\0')) vars[name] = v;
  }
  Object.assign(vars, s.env);
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(ctx.baseDir, p));
  return Object.freeze({
    command: Object.freeze([file!.includes('/') ? abs(file!) : file!, ...args]),
    cwd: s.workingDirectory === undefined ? resolve(ctx.baseDir) : abs(s.workingDirectory),
    timeoutMs: s.timeoutMs,
    killGraceMs: s.killGraceMs,
    maxOutputBytes: s.maxOutputBytes,
    env: Object.freeze({ path: s.path, vars: Object.freeze(vars) }),
    exitCodes: exitCodePolicy({
      exitCodes: Object.fromEntries(Object.entries(s.exitCodes).map(([k, v]) => [Number(k), v])),
      ...(s.otherExitCodes === undefined ? {} : { otherExitCodes: s.otherExitCodes }),
      ...(s.onTimeout === undefined ? {} : { onTimeout: s.onTimeout }),
      ...(s.onSignal === undefined ? {} : { onSignal: s.onSignal }),
      ...(s.onSpawnFailure === undefined ? {} : { onSpawnFailure: s.onSpawnFailure }),
    }),
  });
}
