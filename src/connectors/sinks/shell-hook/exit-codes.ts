/**
 * Exit status → outcome. Defaults follow sysexits(3): 0 handled; 75 EX_TEMPFAIL retry; every
 * other code (1, 65 EX_DATAERR, …) dead letter; a timeout, a death by signal or a failure to
 * start retry. Every entry can be changed per connector.
 * Spec: bus spec S5 (three outcomes), "Migration Path" (operator scripts keep working).
 */
import type { SinkOutcome } from '../../outcome.js';
import type { ProcessEnd } from './run.js';

/** How a hook's end maps to an outcome. */
export interface ExitCodePolicy {
  /** Exit code (0–255) → outcome; codes not listed take {@link ExitCodePolicy.otherwise}. */
  readonly codes: ReadonlyMap<number, SinkOutcome>;
  readonly otherwise: SinkOutcome;
  /** Killed by the gateway after the timeout. */
  readonly timeout: SinkOutcome;
  /** Died of a signal the gateway did not send (OOM killer, operator `kill`). */
  readonly signal: SinkOutcome;
  /** Could not be started (ENOENT, EACCES, E2BIG…). */
  readonly spawnFailure: SinkOutcome;
}

/** sysexits(3) EX_TEMPFAIL: "temporary failure, try again later". */
export const EX_TEMPFAIL = 75;

/** 0 → handled, 75 → retry, other codes → dead letter; timeout, signal, start failure → retry. */
export const defaultExitCodePolicy: ExitCodePolicy = Object.freeze({
  codes: new Map<number, SinkOutcome>([
    [0, 'handled'],
    [EX_TEMPFAIL, 'retry'],
  ]),
  otherwise: 'deadLetter',
  timeout: 'retry',
  signal: 'retry',
  spawnFailure: 'retry',
});

/** Overrides of the default policy, as a connector file states them. */
export interface ExitCodeOverrides {
  /** Merged over the defaults: `{ 75: deadLetter }` turns EX_TEMPFAIL into a dead letter. */
  readonly exitCodes?: Readonly<Record<number, SinkOutcome>>;
  readonly otherExitCodes?: SinkOutcome;
  readonly onTimeout?: SinkOutcome;
  readonly onSignal?: SinkOutcome;
  readonly onSpawnFailure?: SinkOutcome;
}

/** The default policy with `o` applied; frozen. Codes must already be integers 0–255 (the schema checks). */
export function exitCodePolicy(o: ExitCodeOverrides = {}): ExitCodePolicy {
  const codes = new Map(defaultExitCodePolicy.codes);
  for (const [code, outcome] of Object.entries(o.exitCodes ?? {})) codes.set(Number(code), outcome);
  return Object.freeze({
    codes,
    otherwise: o.otherExitCodes ?? defaultExitCodePolicy.otherwise,
    timeout: o.onTimeout ?? defaultExitCodePolicy.timeout,
    signal: o.onSignal ?? defaultExitCodePolicy.signal,
    spawnFailure: o.onSpawnFailure ?? defaultExitCodePolicy.spawnFailure,
  });
}

/** The outcome of one hook run under `policy`. Pure. */
export function classifyEnd(end: ProcessEnd, policy: ExitCodePolicy): SinkOutcome {
  switch (end.kind) {
    case 'exited':
      return policy.codes.get(end.code) ?? policy.otherwise;
    case 'timedOut':
      return policy.timeout;
    case 'signaled':
      return policy.signal;
    case 'spawnFailed':
      return policy.spawnFailure;
    case 'stopped':
      // The sink never classifies this end (it leaves the event uncommitted); a retry if asked.
      return 'retry';
    default: {
      const never: never = end;
      return never;
    }
  }
}

/** A one-line description of how a hook ended, for logs and dead-letter reasons. */
export function describeEnd(end: ProcessEnd): string {
  switch (end.kind) {
    case 'exited':
      return `exited with code ${end.code}`;
    case 'timedOut':
      return `timed out after ${end.timeoutMs} ms and was killed (${end.killedWith})`;
    case 'signaled':
      return `was killed by ${end.signal}`;
    case 'spawnFailed':
      return `could not be started: ${end.error}`;
    case 'stopped':
      return `was stopped by the sink stopping (${end.killedWith})`;
    default: {
      const never: never = end;
      return never;
    }
  }
}
