/**
 * Shell-hook sink: runs an operator script once per event, as the original system's hooks did,
 * now behind a durable subscription (at-least-once, bounded retries, dead letters, correlation).
 * The script gets the event as a structured-mode CloudEvent (JSON) on stdin and its attributes
 * as `CE_*` variables (data decoded from Avro is shown as JSON: see event-view.ts); its exit status decides handled / retry / dead letter.
 * Spec: bus spec "Migration Path" (shell hooks become a subscriber adapter), S3, S5;
 * CloudEvents JSON format 1.0.2 §3 (stdin); DESIGN "Connectors".
 */
import { basename } from 'node:path';
import type { DeliveryContext, EventHandler, Outcome } from '../../../bus/subscriber/index.js';
import { structuredJsonText } from '../../../codec/json/index.js';
import { GatewayError } from '../../../core/errors.js';
import type { Envelope } from '../../../envelope/types.js';
import type { Logger } from '../../../observability/index.js';
import { jsonView } from '../../event-view.js';
import { toOutcome } from '../../outcome.js';
import type { SinkOutcome } from '../../outcome.js';
import { buildHookEnv } from './env.js';
import { classifyEnd, describeEnd } from './exit-codes.js';
import type { ShellHookOptions } from './options.js';
import { startProcess } from './run.js';
import type { ProcessResult, RunningProcess } from './run.js';

/** Characters of stderr / stdout quoted in a failure message. */
const REASON_STDERR_CHARS = 1500;
const REASON_STDOUT_CHARS = 500;

// Control characters other than tab and newline are shown as U+FFFD in reasons and logs.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

function quoteTail(text: string, max: number, truncated: boolean): string {
  const trimmed = text.trim().replace(CONTROL, '\ufffd');
  const cut = trimmed.length > max || truncated;
  return JSON.stringify(`${cut ? '…' : ''}${trimmed.length > max ? trimmed.slice(-max) : trimmed}`);
}

/**
 * The message of a hook that did not handle its event, e.g.
 * `hook on-price.sh exited with code 1 → deadLetter; stderr: "bad bar"; stdout: ""`.
 * It becomes the dead-letter reason, so it carries the end of the script's stderr and stdout.
 */
export function hookFailureMessage(command: string, r: ProcessResult, outcome: SinkOutcome): string {
  return `hook ${basename(command)} ${describeEnd(r.end)} → ${outcome}; stderr: ${quoteTail(r.stderr, REASON_STDERR_CHARS, r.stderrTruncated)}; stdout: ${quoteTail(r.stdout, REASON_STDOUT_CHARS, r.stdoutTruncated)}`;
}

/** Kept free at the end of a stop's `withinMs` (the waits after the last SIGKILL), ms. */
export const STOP_MARGIN_MS = 250;

/** How a shell-hook sink stops (see {@link ShellHookSink.stop}). */
export interface SinkStopOptions {
  /**
   * Time the stop may take in all, ms (integer ≥ 0): running hooks get the first part to finish
   * on their own, then their process group gets SIGTERM, and SIGKILL once the kill grace (the
   * hook's `killGraceMs`, cut to half of `withinMs − STOP_MARGIN_MS`) passed. Without it, running
   * hooks are waited for (each ends by its own `timeoutMs` at most) and nothing is killed early.
   */
  readonly withinMs?: number;
}

/** A shell-hook handler that can be stopped: it tracks the hooks it runs. */
export type ShellHookSink = EventHandler & {
  /**
   * Stops the sink: no new hook starts (a later call throws GatewayError CEG_CLOSED, retriable),
   * running hooks finish or are killed as `o` says, and the promise resolves once every one
   * exited (never rejects). A hook ended by the stop does not count as handled: its call throws
   * CEG_CLOSED (retriable), so a stopping subscriber leaves the event uncommitted and it comes
   * again after the restart (at least once). Stop the subscription first (or together): a
   * subscription still running would retry the event against the stopped sink.
   */
  stop(o?: SinkStopOptions): Promise<void>;
  /** Hooks running now. */
  readonly running: number;
};

/** The SIGTERM delay and the kill grace of a stop within `withinMs` (see {@link SinkStopOptions}), ms. */
export function stopSchedule(withinMs: number, killGraceMs: number): { readonly graceMs: number; readonly killGraceMs: number } {
  const within = Math.max(0, Math.floor(withinMs) - STOP_MARGIN_MS);
  const kill = Math.min(killGraceMs, Math.floor(within / 2));
  return { graceMs: within - kill, killGraceMs: kill };
}

/**
 * A subscriber handler that runs the hook of `o` for each event.
 * Outcomes (subscriber contract): resolves with nothing when the mapped outcome is `handled`,
 *   with `retry(reason)` (by default EX_TEMPFAIL 75, timeout, signal, start failure) or
 *   `deadLetter(reason)` (by default every other exit code), the reason carrying the exit status
 *   and the output tail ({@link hookFailureMessage}). Throws GatewayError retriable false (dead
 *   letter) for an event that cannot be handed to a script: an attribute with NUL
 *   (CEG_SINK_FAILED) or data with no JSON form (CEG_INVALID_DATA); throws GatewayError
 *   CEG_CLOSED (retriable) once the sink is stopping, and for a hook its stop ended.
 * The handler carries `stop` and `running` ({@link ShellHookSink}): the gateway's shutdown ends
 * the hooks still running (docs/connectors.md "On shutdown").
 * Spec: bus spec S5, "Migration Path".
 */
export function createShellHookSink(o: ShellHookOptions, log: Logger): ShellHookSink {
  const [file, ...args] = o.command;
  const command = file!;
  const running = new Set<RunningProcess>();
  let stopped = false;
  // A logger that already names the subscription (the subscription reconciler binds it) gets no second `subscription` key.
  const bound = 'subscription' in log.bindings();
  const handler = async (received: Envelope, ctx: DeliveryContext): Promise<Outcome | undefined> => {
    if (stopped) throw new GatewayError('CEG_CLOSED', `hook ${basename(command)} not run: the sink is stopping`, { retriable: true });
    const event = jsonView(received);
    const env = buildHookEnv(event, ctx, o.env);
    const stdin = Buffer.from(`${structuredJsonText(event)}\n`, 'utf8');
    // Nothing is awaited between the `stopped` check and here: a stop sees every hook it must end.
    const p = startProcess({ file: command, args, env, cwd: o.cwd, stdin, timeoutMs: o.timeoutMs, killGraceMs: o.killGraceMs, maxOutputBytes: o.maxOutputBytes });
    running.add(p);
    let r: ProcessResult;
    try {
      r = await p.result;
    } finally {
      running.delete(p);
    }
    const where = { ...(bound ? {} : { subscription: ctx.subscription }), id: event.attributes.id, attempt: ctx.attempt, hook: basename(command) };
    if (r.end.kind === 'stopped') {
      // Not handled, whatever status it exited with: the stopping subscriber leaves the event uncommitted.
      log.warn({ ...where, end: r.end, durationMs: r.durationMs }, 'hook stopped by the sink stopping; the event stays uncommitted and comes again');
      throw new GatewayError('CEG_CLOSED', `hook ${basename(command)} ${describeEnd(r.end)}`, { retriable: true });
    }
    const outcome = classifyEnd(r.end, o.exitCodes);
    const fields = { ...where, end: r.end, durationMs: r.durationMs, outcome };
    if (outcome === 'handled') {
      log.debug(fields, 'hook handled event');
      return undefined;
    }
    log.warn({ ...fields, stderr: r.stderr.slice(-REASON_STDERR_CHARS) }, 'hook did not handle event');
    return toOutcome(outcome, hookFailureMessage(command, r, outcome));
  };
  const stop = async (so: SinkStopOptions = {}): Promise<void> => {
    stopped = true;
    const all = [...running];
    if (all.length === 0) return;
    const finished = Promise.allSettled(all.map((p) => p.result));
    if (so.withinMs !== undefined) {
      const { graceMs, killGraceMs } = stopSchedule(so.withinMs, o.killGraceMs);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([finished, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      if (running.size > 0) log.warn({ hooks: running.size, hook: basename(command), killGraceMs }, 'stopping running hooks (SIGTERM to their process groups)');
      for (const p of all) p.stop(killGraceMs);
    }
    await finished;
  };
  return Object.defineProperties(handler, {
    stop: { value: stop },
    running: { get: () => running.size },
  }) as ShellHookSink;
}
