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
import type { Envelope } from '../../../envelope/types.js';
import type { Logger } from '../../../observability/index.js';
import { jsonView } from '../../event-view.js';
import { toOutcome } from '../../outcome.js';
import type { SinkOutcome } from '../../outcome.js';
import { buildHookEnv } from './env.js';
import { classifyEnd, describeEnd } from './exit-codes.js';
import type { ShellHookOptions } from './options.js';
import { runProcess } from './run.js';
import type { ProcessResult } from './run.js';

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

/**
 * A subscriber handler that runs the hook of `o` for each event.
 * Outcomes (subscriber contract): resolves with nothing when the mapped outcome is `handled`,
 *   with `retry(reason)` (by default EX_TEMPFAIL 75, timeout, signal, start failure) or
 *   `deadLetter(reason)` (by default every other exit code), the reason carrying the exit status
 *   and the output tail ({@link hookFailureMessage}). Throws GatewayError retriable false (dead
 *   letter) for an event that cannot be handed to a script: an attribute with NUL
 *   (CEG_SINK_FAILED) or data with no JSON form (CEG_INVALID_DATA).
 * Spec: bus spec S5, "Migration Path".
 */
export function createShellHookSink(o: ShellHookOptions, log: Logger): EventHandler {
  const [file, ...args] = o.command;
  const command = file!;
  return async (received: Envelope, ctx: DeliveryContext): Promise<Outcome | undefined> => {
    const event = jsonView(received);
    const env = buildHookEnv(event, ctx, o.env);
    const stdin = Buffer.from(`${structuredJsonText(event)}\n`, 'utf8');
    const r = await runProcess({ file: command, args, env, cwd: o.cwd, stdin, timeoutMs: o.timeoutMs, killGraceMs: o.killGraceMs, maxOutputBytes: o.maxOutputBytes });
    const outcome = classifyEnd(r.end, o.exitCodes);
    const fields = { subscription: ctx.subscription, id: event.attributes.id, attempt: ctx.attempt, hook: basename(command), end: r.end, durationMs: r.durationMs, outcome };
    if (outcome === 'handled') {
      log.debug(fields, 'hook handled event');
      return undefined;
    }
    log.warn({ ...fields, stderr: r.stderr.slice(-REASON_STDERR_CHARS) }, 'hook did not handle event');
    return toOutcome(outcome, hookFailureMessage(command, r, outcome));
  };
}
