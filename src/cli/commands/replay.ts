/**
 * `ce-gateway replay <subscription> --to-time T | --to-earliest | --to-latest | --to-offsets P:O,… [--dry-run]`
 * (issue 9): asks a gateway (`--gateway`, default PUBLIC_BASE_URL) to replay a subscription over
 * HTTP (`POST /subscriptions/{name}/replay`), prints the answer — per partition the offsets from
 * and to and the events handed out again — and then, unless `--dry-run` or `--no-wait`, shows the
 * replayed backlog drain: the subscription's committed offsets (read from Kafka, KAFKA_BROKERS)
 * climbing from `to` back to `from`. On a terminal that is a progress bar (cli-progress);
 * otherwise, and with `--json`, one JSON line per step:
 *   {"type":"replay", …the answer…}
 *   {"type":"progress","drained":N,"events":TOTAL}      (when N changes, at most twice a second)
 *   {"type":"done","drained":TOTAL,"events":TOTAL}
 * Against a gateway with PARTNERS_FILE it authenticates with CE_GATEWAY_API_KEY (or
 * CE_GATEWAY_API_KEY_FILE), and `--owner` names another partner's subscription (admins), on the
 * replay and on the read of the subscription alike (gateway-client.ts).
 * Exit codes: 0 done (or dry run; also when the gateway could not write its audit entry — said on
 * stderr, auditFailure — or without KAFKA_BROKERS, for a paused subscription, or for a
 * pull subscription — its clients drain it, at their pace — where the drain is not watched, as
 * with `--no-wait`); 1 the replay WAS done but its drain was not seen
 * through — not drained within `--timeout`, the subscription is `gone`, or the watch failed (Kafka or the gateway not answering the watch's reads): the
 * message says so, and the replay must not be run again; 1 also when the request was sent but
 * no answer came (the connection broke or timed out): the replay may have been done, and the
 * message says how to check before running it again;
 * 2 nothing was replayed: usage, refusal or connection error (DESIGN "Conventions").
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import { parsePartitionKey } from '../../bus/subscriptions/index.js';
import type { ReplayReport } from '../../bus/subscriptions/index.js';
import type { CommittedOffset } from '../../transport/port.js';
import { errorMessage } from '../../core/errors.js';
import { printable } from '../../core/printable.js';
import { hasUserinfo, publicText, publicUrl } from '../../core/public-url.js';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../observability/index.js';
import { EXIT_CHECK_FAILED, EXIT_USAGE, brokerDeadline, setup, openGateway } from '../context.js';
import { cliKafkaTimeouts } from '../broker-deadline.js';
import { GatewayClient, gatewayClient, withGatewayOptions } from '../gateway-client.js';
import { parseSince } from '../since.js';
import { wholeNumber } from '../numbers.js';

interface ReplayOptions {
  toTime?: string;
  toEarliest?: boolean;
  toLatest?: boolean;
  toOffsets?: Record<string, number | string>;
  dryRun?: boolean;
  gateway?: string;
  owner?: string;
  json?: boolean;
  wait: boolean;
  timeout: number;
}

/**
 * `P:O,P:O` (or `TOPIC/P:O` for a subscription of several topics) → `{ "P": O }`; offsets beyond
 * 2^53 stay decimal strings. `previous`: the pairs of the earlier `--to-offsets` options of the
 * same command line (commander passes them), which this one adds to — before, the last option
 * silently replaced the earlier ones, so `--to-offsets 0:1 --to-offsets 3:2` replayed partition 3
 * only. A partition named twice, in one option or over several, is refused (the HTTP API refuses
 * duplicate members too; the last value silently winning would replay from an offset nobody checked).
 * Errors: commander's InvalidArgumentError (usage, exit 2): a pair that is not `P:O`, or a partition
 *   given twice, named.
 */
export function parseOffsetsOption(value: string, previous?: Readonly<Record<string, number | string>>): Record<string, number | string> {
  const out: Record<string, number | string> = { ...previous };
  for (const part of value.split(',')) {
    const m = /^([^:\s]+):(\d{1,19})$/.exec(part.trim());
    if (m === null) throw new InvalidArgumentError('partition:offset pairs separated by commas, e.g. 0:42,3:1000 (TOPIC/PARTITION:OFFSET when the subscription reads several topics)');
    const partition = m[1]!;
    if (Object.hasOwn(out, partition)) throw new InvalidArgumentError(`partition ${partition} is given twice (${partition}:${String(out[partition])} and ${partition}:${m[2]!}); give each partition once`);
    const n = Number(m[2]);
    out[partition] = Number.isSafeInteger(n) ? n : m[2]!;
  }
  return out;
}

/** How many of a replay's records the subscription has handled again, given its committed offsets per topic. Pure. */
export function drained(report: Pick<ReplayReport, 'partitions'>, topics: readonly string[], committed: ReadonlyMap<string, readonly CommittedOffset[]>): number {
  let n = 0;
  for (const [key, p] of Object.entries(report.partitions)) {
    if (p.events <= 0) continue;
    const where = parsePartitionKey(key, topics);
    const c = where === undefined ? undefined : committed.get(where.topic)?.find((o) => o.partition === where.partition)?.offset;
    if (c === undefined || c === null) continue;
    const done = c - BigInt(p.to);
    n += done <= 0n ? 0 : done >= BigInt(p.events) ? p.events : Number(done);
  }
  return n;
}

function targetOf(o: ReplayOptions): unknown {
  const given = [o.toTime !== undefined, o.toEarliest === true, o.toLatest === true, o.toOffsets !== undefined].filter(Boolean).length;
  if (given !== 1) throw new InvalidArgumentError('give exactly one of --to-time, --to-earliest, --to-latest, --to-offsets');
  if (o.toEarliest === true) return 'earliest';
  if (o.toLatest === true) return 'latest';
  if (o.toOffsets !== undefined) return o.toOffsets;
  const t = o.toTime!;
  // An RFC 3339 time goes verbatim (the audit log keeps it as written; one before 1970 the gateway
  // takes as the earliest offset); a duration becomes the instant it names, at the earliest
  // 1970-01-01T00:00:00.000Z (parseSince: the same records).
  const ms = parseSince(t); // refuses anything else (exit 2 with the accepted forms)
  return /^\d{1,9}(ms|s|m|h|d)$/.test(t.trim()) ? new Date(ms).toISOString() : t;
}

function fail(message: string): never {
  process.stderr.write(`ce-gateway replay: ${message}\n`);
  process.exit(EXIT_USAGE);
}

/**
 * A failed request as one line: fetch's own message (`fetch failed`) with its cause — the system
 * error code and message (`ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:18553`), a timeout — and
 * every URL in it without credentials. Pure.
 */
export function requestFailure(err: unknown): string {
  const text = errorMessage(err);
  const cause = err instanceof Error ? err.cause : undefined;
  if (typeof cause !== 'object' || cause === null) return publicText(text);
  const c = cause as { code?: unknown; message?: unknown; errors?: unknown };
  const code = typeof c.code === 'string' ? c.code : '';
  // A host with IPv4 and IPv6 addresses fails with an AggregateError (empty message), one error per address.
  const message = typeof c.message === 'string' && c.message !== '' ? c.message : Array.isArray(c.errors) ? c.errors.map((e) => errorMessage(e)).join('; ') : '';
  const detail = message.includes(code) ? message : message === '' ? code : `${code}: ${message}`;
  return publicText(detail === '' || text.includes(detail) ? text : `${text} (${detail})`);
}

/**
 * Where the default gateway URL came from, for a request that reached no gateway: the replay goes
 * to PUBLIC_BASE_URL, by default `http://HOST:PORT`, and `.stack/env` does not record the
 * gateway's PORT, so a gateway started on another port (README: `PORT=28080`) is missed by a shell
 * that did not set it too. Pure.
 */
export function unreachableHint(vars: Readonly<Record<string, string | undefined>>): string {
  const set = (k: string): boolean => vars[k] !== undefined && vars[k] !== '';
  if (set('PUBLIC_BASE_URL')) return 'is the gateway running at PUBLIC_BASE_URL? Or name it with --gateway URL';
  return `the URL is PUBLIC_BASE_URL's default from HOST and PORT (${set('PORT') ? `PORT=${vars.PORT!}` : 'PORT unset: 8080'}): set PORT as the gateway has it, or name the gateway with --gateway URL`;
}

/** Failures of a request that may have reached the gateway: the connection broke or timed out after it was sent. */
const AFTER_SEND = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * True when a failed request may have reached the gateway, so the replay may have been done: the
 * connection broke (`other side closed`, a reset) or the answer timed out after the request was
 * sent. False for failures before anything was sent (refused connection, unknown host, bad TLS). Pure.
 */
export function outcomeUnknown(err: unknown): boolean {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return true;
  const cause = err instanceof Error ? err.cause : undefined;
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  return typeof code === 'string' && AFTER_SEND.has(code);
}

/**
 * Exit code when the replay was done but its drain was not seen through (timeout, or the watch
 * could not run). Not 2: 2 says nothing was replayed, and an operator would run the replay again.
 */
export const EXIT_REPLAYED_NOT_WATCHED = EXIT_CHECK_FAILED;

/**
 * The stderr line for a replay that was done when the drain watch then failed or could not run:
 * says that the offsets moved and the replay must not be run again, then why the watch stopped.
 */
export function watchFailedMessage(name: string, report: Pick<ReplayReport, 'events'>, reason: string): string {
  return `ce-gateway replay: ${name} was replayed (${report.events} events again; the offsets moved, delivery goes on) — do not run the replay again; only watching the backlog drain failed: ${reason}\n`;
}

/**
 * The stderr line for a replay that was done (`200`) whose audit entry the gateway could not
 * write (`auditFailure: { code, message }`, docs/subscriptions.md): the offsets moved, so it is
 * not to be run again; the entry is missing from `GET …/replays` (the gateway logged it). Ends
 * with the failure's code, ` [CEG_…]`, as every CLI failure line does (broker-deadline.ts
 * codeSuffix); a code or message that is not text is left out. Printable. Pure.
 */
export function auditFailureMessage(name: string, failure: unknown): string {
  const f = (typeof failure === 'object' && failure !== null ? failure : {}) as { code?: unknown; message?: unknown };
  const code = typeof f.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(f.code) ? ` [${f.code}]` : '';
  const why = typeof f.message === 'string' && f.message !== '' ? `: ${f.message.slice(0, 500)}` : '';
  return `${printable(`ce-gateway replay: ${name} was replayed (the offsets moved) — do not run the replay again — but its entry is missing from the audit log (GET ${GatewayClient.subscriptionPath(name)}/replays; the gateway logged it): the write failed${why}${code}`)}\n`;
}

/** Everything the drain watch needs: the replay's answer and where to read the committed offsets. */
interface WatchContext {
  readonly name: string;
  readonly report: ReplayReport;
  readonly client: GatewayClient;
  readonly config: Config;
  readonly log: Logger;
  readonly lines: boolean;
  readonly timeoutS: number;
  /** The broker deadline, ms (--broker-timeout): the watch's first Kafka answer within it, else exit 1 (the replay was done). */
  readonly brokerTimeoutMs: number;
}

/**
 * Shows the replayed backlog drain (progress bar, or JSON lines) until it has drained
 * (`'drained'`) or `timeoutS` passed (`'timeout'`).
 * Errors: anything that stops the watch (a refused or failed read of the subscription or the
 *   catalog, Kafka not answering): the caller reports it as a watch failure after a done replay.
 */
async function watchDrain(w: WatchContext): Promise<'drained' | 'timeout' | 'paused' | 'gone' | 'pull'> {
  const { name, report, client, config, log, lines } = w;
  if (config.kafka === undefined) throw new Error('KAFKA_BROKERS is not set (the watch reads the committed offsets from Kafka; --no-wait skips it)');
  // Which topics the subscription reads, for its committed offsets: its kinds, through the gateway's catalog.
  // The subscription's read carries --owner like the replay (an admin's read of another partner's
  // subscription); the catalog is the same for every caller and takes no owner.
  const path = GatewayClient.subscriptionPath(name);
  const read = await client.call('GET', path);
  if (read.status !== 200) throw new Error(`cannot read ${name}: ${client.refusal(read)}`);
  const view = read.body as { group?: string; kinds?: string[]; state?: string; delivery?: { mode?: string } };
  // Nothing drains while the subscription does not deliver: waiting would only end in the timeout.
  if (view.state === 'paused' || view.state === 'gone') return view.state;
  // A pull subscription has no member the gateway runs: its offsets move only when its clients
  // commit cursors, at their own pace (or never, for a client that only passes cursors on), so
  // the watch would mostly wait out --timeout and then call a done replay "not drained".
  if (view.delivery?.mode === 'pull') return 'pull';
  const listed = await client.call('GET', '/catalog');
  if (listed.status !== 200) throw new Error(`cannot read the catalog: ${client.refusal(listed)}`);
  const catalog = listed.body as { kinds?: { name: string; eventId: string; topic: string }[] };
  const topics = [...new Set((view.kinds ?? []).map((k) => catalog.kinds?.find((c) => c.name === k || c.eventId === k)?.topic).filter((t): t is string => t !== undefined))];
  if (view.group === undefined || topics.length === 0) throw new Error(`cannot tell the consumer group and topics of ${name}`);
  const group = view.group;
  const gw = await openGateway(config, log, { readOnly: true, kafkaTimeouts: cliKafkaTimeouts(w.brokerTimeoutMs) });
  // The replay is done: a broker that does not answer ends the watch with exit 1, as a failed watch does.
  const deadline = brokerDeadline(gw.transport, config, w.brokerTimeoutMs, 'replay', { exitCode: EXIT_REPLAYED_NOT_WATCHED, message: (text) => watchFailedMessage(name, report, text) });
  try {
    // Loaded here: the progress bar is this command's alone (the CLI's other commands start without it).
    const cliProgress = lines ? undefined : (await import('cli-progress')).default;
    const bar = cliProgress === undefined ? undefined : new cliProgress.SingleBar({ format: `${name} {bar} {value}/{total} events | {percentage}% | {duration_formatted}`, hideCursor: true }, cliProgress.Presets.shades_classic);
    bar?.start(report.events, 0);
    const deadline = Date.now() + w.timeoutS * 1000;
    let last = -1;
    try {
      for (;;) {
        const committed = new Map<string, readonly CommittedOffset[]>();
        for (const t of topics) committed.set(t, await gw.transport.committedOffsets(group, t));
        const n = drained(report, topics, committed);
        if (n !== last) {
          last = n;
          if (bar !== undefined) bar.update(n);
          else if (n < report.events) process.stdout.write(`${JSON.stringify({ type: 'progress', drained: n, events: report.events })}\n`);
        }
        if (n >= report.events) {
          bar?.stop();
          if (lines) process.stdout.write(`${JSON.stringify({ type: 'done', drained: n, events: report.events })}\n`);
          return 'drained';
        }
        if (Date.now() > deadline) {
          bar?.stop();
          process.stderr.write(`ce-gateway replay: ${n} of ${report.events} replayed events handled after ${w.timeoutS} s; still draining\n`);
          return 'timeout';
        }
        await sleep(500);
      }
    } finally {
      bar?.stop();
    }
  } finally {
    // A failure to close (Kafka gone) must not hide what happened.
    await gw.close().catch(() => undefined);
    deadline.stop();
  }
}

export function registerReplayCommand(program: Command): void {
  const cmd = program
    .command('replay')
    .description('replay a subscription by resetting its offsets (every gateway instance pauses it, the offsets move, delivery resumes); shows the replayed backlog draining')
    .argument('<subscription>', 'the subscription\'s name')
    // Checked as it is read, so a bad time is refused like any bad option value, naming --to-time
    // (it said only "replay: a duration such as …"); kept as written (targetOf).
    .option('--to-time <time>', 'the first record written at or after this RFC 3339 time (or a duration back from now: 90s, 15m, 2h, 7d); before 1970: the earliest', (v: string) => {
      parseSince(v);
      return v;
    })
    .option('--to-earliest', 'the start of the log')
    .option('--to-latest', 'the end of the log (skip what is not delivered yet)')
    .option('--to-offsets <pairs>', 'explicit offsets: PARTITION:OFFSET,… (TOPIC/PARTITION:OFFSET for a subscription of several topics); repeated options add up, each partition once', parseOffsetsOption)
    .option('--dry-run', 'only report what would move; nothing changes');
  withGatewayOptions(cmd)
    .option('--json', 'JSON lines on stdout even on a terminal')
    .option('--no-wait', 'do not wait for the replayed backlog to drain')
    // With --no-wait nothing is watched, so a --timeout given with it would be ignored: a usage error.
    .addOption(new Option('--timeout <seconds>', 'longest wait for the backlog to drain, whole seconds (at most a week; not with --no-wait)').argParser(wholeNumber(1, 604_800)).default(600).conflicts('wait'))
    .action(async (name: string, opts: ReplayOptions) => {
      const { config, log, vars, brokerTimeoutMs } = setup(program);
      let to: unknown;
      try {
        to = targetOf(opts);
      } catch (err) {
        program.error(`replay: ${(err as Error).message}`, { exitCode: EXIT_USAGE });
      }
      // fetch cannot send user:password@ (it refused, quoting the URL — password and all); the
      // gateway takes an API key, from the environment.
      if (opts.gateway !== undefined && hasUserinfo(opts.gateway)) fail(`--gateway ${publicUrl(opts.gateway)}: no user:password@ in the URL; the API key comes from CE_GATEWAY_API_KEY or CE_GATEWAY_API_KEY_FILE`);
      let client: GatewayClient;
      try {
        client = gatewayClient(config, vars, opts);
      } catch (err) {
        fail((err as Error).message);
      }
      const base = publicUrl(client.base);
      const lines = opts.json === true || process.stdout.isTTY !== true;
      const path = GatewayClient.subscriptionPath(name);
      const answer = await client.call('POST', `${path}/replay`, { to, dryRun: opts.dryRun === true }).catch((err: unknown) => {
        // Sent, but no answer: the gateway may have moved the offsets (exit 2 would say nothing was
        // replayed, and running it again hands the backlog out once more).
        if (opts.dryRun !== true && outcomeUnknown(err)) {
          process.stderr.write(`ce-gateway replay: ${base}: ${requestFailure(err)} — the request was sent but no answer came, so ${name} may have been replayed: check GET ${path}/replays (its newest entry) and the subscription's replay state before running the replay again\n`);
          process.exit(EXIT_REPLAYED_NOT_WATCHED);
        }
        // Nothing was sent. Without --gateway the URL is PUBLIC_BASE_URL or its default from HOST and
        // PORT, which a shell that did not set PORT as the gateway's has wrong: say where it came from.
        return fail(`${base}: ${requestFailure(err)}${opts.gateway === undefined ? ` — nothing was replayed; ${unreachableHint(vars)}` : ''}`);
      });
      if (answer.status !== 200) fail(client.refusal(answer));
      const report = answer.body as ReplayReport & { readonly auditFailure?: unknown };
      if (lines) process.stdout.write(`${JSON.stringify({ type: 'replay', ...report })}\n`);
      else {
        process.stdout.write(`${report.dryRun ? 'dry run: would replay' : 'replayed'} ${name}: ${report.events} events again${report.skipped > 0 ? `, ${report.skipped} skipped` : ''}\n`);
        for (const [k, p] of Object.entries(report.partitions)) process.stdout.write(`  partition ${k}\t${p.from} → ${p.to}\t${p.events} events${p.skipped > 0 ? ` (${p.skipped} skipped)` : ''}\n`);
      }
      // Done, but not in the audit log: said where an operator (or a script reading stderr) sees it,
      // not only inside the JSON line. Still exit 0: the offsets moved, and a run again would hand
      // the backlog out once more.
      if (report.auditFailure !== undefined) process.stderr.write(auditFailureMessage(name, report.auditFailure));
      if (report.dryRun || !opts.wait || report.events === 0) return;
      // No Kafka here (an operator with HTTP access only): nothing to watch with, as with --no-wait.
      if (config.kafka === undefined) {
        process.stderr.write(`replay: ${name} was replayed; its drain is not shown: KAFKA_BROKERS is not set (the watch reads the committed offsets from Kafka)\n`);
        return;
      }
      // From here on the replay is done: a failing watch must say so, and exits like one that timed out.
      try {
        const outcome = await watchDrain({ name, report, client, config, log, lines, timeoutS: opts.timeout, brokerTimeoutMs });
        if (outcome === 'timeout') process.exitCode = EXIT_REPLAYED_NOT_WATCHED;
        else if (outcome === 'paused') {
          process.stderr.write(`replay: ${name} was replayed; it is paused, so the ${report.events} replayed events are delivered once it is resumed (PATCH its state to active); the drain is not watched\n`);
        } else if (outcome === 'pull') {
          process.stderr.write(`replay: ${name} was replayed; it is a pull subscription, so its ${report.events} replayed events are served to its clients' pulls (a pull without a cursor reads from the new positions; drop cursors from before the replay) and drain as they commit; the drain is not watched (GET ${path}/status shows the lag)\n`);
        } else if (outcome === 'gone') {
          process.stderr.write(`replay: ${name} was replayed, but it is gone (its sink answered 410 Gone), so nothing is delivered until it is re-activated (PATCH its state to active); the drain is not watched\n`);
          process.exitCode = EXIT_REPLAYED_NOT_WATCHED;
        }
      } catch (err) {
        process.stderr.write(watchFailedMessage(name, report, requestFailure(err)));
        process.exitCode = EXIT_REPLAYED_NOT_WATCHED;
      }
    });
}
