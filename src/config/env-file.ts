/**
 * Reads KEY=value files (the local stack's `.stack/env`, or CE_GATEWAY_ENV_FILE). Values only
 * fill variables the environment does not set: the environment always wins (twelve-factor).
 */
import { existsSync, readFileSync } from 'node:fs';

export function readEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) continue;
    out[trimmed.slice(0, eq).trim()] = trimmed.slice(eq + 1).trim();
  }
  return out;
}

/** The environment merged over the env file, and the file used (if any). */
export function environment(env: NodeJS.ProcessEnv, cwd: string): { vars: Record<string, string | undefined>; file?: string } {
  const file = env.CE_GATEWAY_ENV_FILE ?? `${cwd}/.stack/env`;
  if (!existsSync(file)) {
    if (env.CE_GATEWAY_ENV_FILE) throw new Error(`CE_GATEWAY_ENV_FILE names a missing file: ${file}`);
    return { vars: { ...env } };
  }
  return { vars: { ...readEnvFile(file), ...env }, file };
}
