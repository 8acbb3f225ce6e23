/**
 * pino JSON-line logger factory. Secret-bearing fields are redacted by path so a misplaced
 * password or connection string never reaches a log line (bus spec defect 6).
 */
import { pino } from 'pino';
import type { Logger as PinoLogger, LevelWithSilent } from 'pino';

export type Logger = PinoLogger;

export const redactPaths: readonly string[] = [
  'password',
  '*.password',
  'databaseUrl',
  '*.databaseUrl',
  'connectionString',
  '*.connectionString',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'sasl',
  '*.sasl',
];

/** A logger writing JSON lines to stdout (or `destination`), at `level`. */
export function createLogger(opts: { level: LevelWithSilent; name?: string; destination?: NodeJS.WritableStream }): Logger {
  return pino(
    { level: opts.level, name: opts.name ?? 'ce-gateway', redact: { paths: [...redactPaths], censor: '[redacted]' }, base: { pid: process.pid } },
    opts.destination ?? process.stdout,
  );
}

/** A logger that drops everything (library default when the caller passes none). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
