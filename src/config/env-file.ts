/**
 * Reads KEY=value files (the local stack's `.stack/env`, or CE_GATEWAY_ENV_FILE). Values only
 * fill variables the environment does not set: the environment always wins (twelve-factor).
 */
import { existsSync, readFileSync } from 'node:fs';
import { GatewayError } from '../core/errors.js';

/** `export KEY=…` as a shell-sourced file writes it. */
const EXPORT_PREFIX = /^export\s+/;

/**
 * The variables of an env file: one `KEY=value` per line; blank lines and lines starting with `#`
 * are skipped, as are lines without a key. The docker-compose / dotenv conventions that a file
 * written for a shell uses are understood: an `export ` prefix, spaces around `=`, and a value in
 * matching double or single quotes (the quotes are not part of it; no escapes are interpreted).
 * Everything else is the value as written, `#` included (a password may hold one: there are no
 * inline comments). Errors: the file's read error (ENOENT, EACCES) as thrown by `readFileSync`.
 */
export function readEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const trimmed = line.trim().replace(EXPORT_PREFIX, '');
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) continue;
    out[trimmed.slice(0, eq).trim()] = unquoted(trimmed.slice(eq + 1).trim());
  }
  return out;
}

function unquoted(v: string): string {
  const q = v[0];
  return v.length >= 2 && (q === '"' || q === "'") && v.endsWith(q) ? v.slice(1, -1) : v;
}

/**
 * The environment merged over the env file, and the file used (if any).
 * Errors: CEG_INVALID_OPTIONS (retriable: false, `details.variable`) when CE_GATEWAY_ENV_FILE
 *   names a file that does not exist or cannot be read.
 */
export function environment(env: NodeJS.ProcessEnv, cwd: string): { vars: Record<string, string | undefined>; file?: string } {
  const file = env.CE_GATEWAY_ENV_FILE ?? `${cwd}/.stack/env`;
  if (!existsSync(file)) {
    if (env.CE_GATEWAY_ENV_FILE) throw new GatewayError('CEG_INVALID_OPTIONS', `CE_GATEWAY_ENV_FILE names a missing file: ${file}`, { retriable: false, details: { variable: 'CE_GATEWAY_ENV_FILE' } });
    return { vars: { ...env } };
  }
  let fromFile: Record<string, string>;
  try {
    fromFile = readEnvFile(file);
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `env file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { retriable: false, details: { variable: 'CE_GATEWAY_ENV_FILE' } });
  }
  return { vars: { ...fromFile, ...env }, file };
}
