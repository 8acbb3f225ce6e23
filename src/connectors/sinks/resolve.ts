/**
 * The sinks for programmatic use — a sink as an ordinary subscription handler (docs/connectors.md
 * "Library use"): settings shaped like a connector file's `sink:` section, validated once and
 * resolved into frozen options, with every problem reported at once.
 * Spec: DESIGN "Connectors"; STYLE D7 (options validated once, every problem reported, frozen).
 */
import type { z } from 'zod';
import { GatewayError } from '../../core/errors.js';
import { fileDropOptionsFrom, fileDropSettingsSchema } from './file-drop/index.js';
import type { FileDropOptions, FileDropSettings } from './file-drop/index.js';
import { shellHookOptionsFrom, shellHookSettingsSchema } from './shell-hook/index.js';
import type { ResolveContext, ShellHookOptions, ShellHookSettings } from './shell-hook/index.js';
import { schemaIssues } from '../../core/schema-issues.js';

function invalid(what: string, issues: readonly z.core.$ZodIssue[]): GatewayError {
  const problems = issues.map((i) => ({ path: i.path.map(String).join('.') || '(root)', problem: i.message }));
  return new GatewayError('CEG_INVALID_OPTIONS', `invalid ${what} settings: ${problems.map((p) => `${p.path}: ${p.problem}`).join('; ')}`, {
    retriable: false,
    details: { problems },
  });
}

/**
 * Validates shell-hook settings and resolves them (paths against `ctx.baseDir`, `passEnv` read).
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false), `details.problems` =
 *   `{ path, problem }[]` for every problem.
 */
export function resolveShellHookOptions(input: ShellHookSettings, ctx: ResolveContext): ShellHookOptions {
  const parsed = shellHookSettingsSchema.safeParse(input);
  if (!parsed.success) throw invalid('shell-hook', schemaIssues(parsed.error.issues));
  return shellHookOptionsFrom(parsed.data, ctx);
}

/**
 * Validates file-drop settings and resolves them (`directory` against `ctx.baseDir`).
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false), `details.problems` as above.
 */
export function resolveFileDropOptions(input: FileDropSettings, ctx: { readonly baseDir: string }): FileDropOptions {
  const parsed = fileDropSettingsSchema.safeParse(input);
  if (!parsed.success) throw invalid('file-drop', schemaIssues(parsed.error.issues));
  return fileDropOptionsFrom(parsed.data, ctx);
}
