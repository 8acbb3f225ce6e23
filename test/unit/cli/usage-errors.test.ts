/**
 * Bad option values are usage errors (exit 2, naming the option) before anything connects or is
 * created: a negative `trace --timeout`, `subscribe --max-events 0`, a `topics --subscription`
 * name that cannot name a topic. The broker address is a port where nothing listens, so a command
 * that got past its checks would fail differently (and never create anything).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { wholeNumber } from '../../../src/cli/numbers.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';
import { PRICE_LOADING_COMPLETED } from '../../fixtures/events.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

function cli(args: readonly string[], kafka = true): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', KAFKA_BROKERS: '127.0.0.1:1', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1' };
  if (!kafka) {
    delete env.KAFKA_BROKERS;
    delete env.SCHEMA_REGISTRY_URL;
    // Not the local stack's .stack/env either (it would set KAFKA_BROKERS while the stack runs).
    env.CE_GATEWAY_ENV_FILE = EMPTY_ENV;
    env.OUTBOX_DATABASE_URL = 'postgres://ceg@127.0.0.1:1/none';
  }
  // Asynchronous: a synchronous spawn blocks the test worker for the whole run of the command, and
  // many in a row kept vitest's worker from answering its RPC ("Timeout calling onTaskUpdate").
  return run(process.execPath, [...CLI_ENTRY, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (err: { code?: number | string; stdout?: string; stderr?: string }) => ({ code: typeof err.code === 'number' ? err.code : null, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
  );
}
const run = promisify(execFile);

const EMPTY_ENV = join(mkdtempSync(join(tmpdir(), 'ceg-usage-')), 'empty.env');
writeFileSync(EMPTY_ENV, '');

describe('wholeNumber', () => {
  it('takes digits in range and refuses everything else', () => {
    const p = wholeNumber(1, 1000);
    expect(p('1')).toBe(1);
    expect(p(' 1000 ')).toBe(1000);
    for (const bad of ['0', '-5', '1001', '10abc', '1e3', '1.5', '', '0x10', 'NaN']) expect(() => p(bad), bad).toThrow(/whole number from 1 to 1000/);
    fc.assert(fc.property(fc.string(), (s) => {
      let n: number | undefined;
      try {
        n = p(s);
      } catch {
        return true;
      }
      return Number.isInteger(n) && n >= 1 && n <= 1000 && String(n) === s.trim().replace(/^0+(?=\d)/, '');
    }));
  });
});

// Concurrent (vitest's maxConcurrency, 5 at a time): each case is a CLI child of its own against
// ports where nothing listens, sharing only the read-only empty env file. One after another the 39
// children took ~25 s in CI, one process start at a time on a 2-core machine.
describe.concurrent('usage errors exit 2 before anything connects', { timeout: 60_000 }, () => {
  it.each([
    [['trace', 'c-1', '--timeout', '-5'], /--timeout/],
    [['trace', 'c-1', '--timeout', '0'], /--timeout/],
    [['subscribe', '--subscription', 's', '--kind', 'k', '--max-events', '0'], /--max-events/],
    [['topics', '--subscription', 'bad name'], /--subscription/],
    [['deadletters', 'list', 'h3', '--limit', '1e3'], /--limit/],
    [['deadletters', 'list', 'h3', '--limit', '10abc'], /--limit/],
    // break report D9: a subscription name starts with a letter or digit (no `..`, `.`, option-like names)
    [['topics', '--subscription', '..'], /--subscription: "\.\.": subscription names are 1–200 characters/],
    [['topics', '--subscription', '.'], /--subscription: "\.": subscription names/],
    [['topics', '--subscription', '-rf'], /--subscription/],
    [['topics', '--subscription', '_x'], /--subscription: "_x": subscription names/],
    [['subscribe', '--subscription', '..', '--kind', 'k'], /subscription: subscription names are 1–200 characters/],
    // break report D10: --owner is a partner id, as for replay
    [['deadletters', 'list', 'h3', '--owner', 'bad owner'], /--owner.*a partner id/],
    [['deadletters', 'purge', 'h3', '--all', '--owner', '../x'], /--owner.*a partner id/],
    [['deadletters', 'redrive', 'h3', '--all', '--owner', ''], /--owner.*a partner id/],
    // break report E5: --source narrows --id to one source's events
    [['deadletters', 'purge', 'h3', '--all', '--source', 'urn:x'], /--source narrows --id; --all selects every source/],
    [['deadletters', 'redrive', 'h3', '--source', 'urn:x'], /--id <event id…> \(with --source <uri> for one source\)/],
    [['deadletters', 'purge', 'h3', '--id', 'a', '--source', ''], /--source: the event source, a non-empty URI-reference/],
    // break report E5: --dead-letter <partition>:<offset> names one dead letter, readable or not
    [['deadletters', 'purge', 'h3', '--dead-letter', '0:9223372036854775808'], /--dead-letter.*offset/],
    [['deadletters', 'redrive', 'h3', '--dead-letter', '0:1', '--all'], /either --dead-letter or --all/],
    // Options that were silently ignored (exit 0 or the command ran): two starts for tail (--since
    // won), --ordering without a subscription for topics, --timeout with replay --no-wait; and a
    // bad replay --to-time named the option nowhere.
    [['tail', 'PriceLoadingCompleted', '--from-beginning', '--since', '5m'], /option '--from-beginning' cannot be used with option '--since <when>'/],
    [['tail', '--since', '5m', '--from-beginning', 'PriceLoadingCompleted'], /option '--from-beginning' cannot be used with option '--since <when>'/],
    [['topics', '--ordering', 'none'], /--ordering: applies to the subscriptions named with --subscription/],
    [['replay', 'orders', '--to-earliest', '--no-wait', '--timeout', '5'], /option '--timeout <seconds>' cannot be used with option '--no-wait'/],
    [['replay', 'orders', '--to-time', 'yesterday'], /option '--to-time <time>' argument 'yesterday' is invalid\. a duration such as 90s/],
    // A kind named twice was taken (counted once), so a slip for another kind went unnoticed; the
    // subscription API answers 400 naming kinds[i] alike.
    [['tail', 'PriceLoadingCompleted', 'SeriesUpdateCompleted', 'PriceLoadingCompleted'], /tail: "PriceLoadingCompleted" \(kind 3\) names PriceLoadingCompleted \(eventId [^)]+\) again, as kind 1 did/],
    [['subscribe', '--subscription', 's', '--kind', 'PriceLoadingCompleted', '--kind', PRICE_LOADING_COMPLETED], /subscribe --kind: "[^"]+" \(kind 2\) names PriceLoadingCompleted .* again, as kind 1 did/],
  ])('%j', async (args, named) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(named);
  });

  // `outbox stuck --limit 0` said "--min-attempts: an integer ≥ 1; --limit: an integer 1–10000":
  // both options for the one that was wrong. Now each names only itself; `1e3` is no count (it was
  // taken as 1000), and a bound past the `integer` column failed in PostgreSQL.
  it.each([
    [['outbox', 'stuck', '--limit', '0'], '--limit', '--min-attempts'],
    [['outbox', 'stuck', '--limit', '10001'], '--limit', '--min-attempts'],
    [['outbox', 'stuck', '--limit', '1e3'], '--limit', '--min-attempts'],
    [['outbox', 'stuck', '--min-attempts', '0'], '--min-attempts', '--limit'],
    [['outbox', 'stuck', '--min-attempts', '2147483648'], '--min-attempts', '--limit'],
  ])('%j names %s only', async (args, named, notNamed) => {
    const r = await cli(args, false);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`option '${named} <n>' argument '${args[3]!}' is invalid`);
    expect(r.stderr).not.toContain(notNamed);
  });
});

// Concurrent too, for the same reasons (above).
describe.concurrent('commands that only work on Kafka refuse to run without KAFKA_BROKERS (break report D7; outbox relay and deadletters: the same kind)', { timeout: 60_000 }, () => {
  it.each([
    ['topics', ['topics']],
    ['topics', ['topics', '--subscription', 'orders']],
    ['tail', ['tail', 'PriceLoadingCompleted']],
    ['trace', ['trace', 'c-1']],
    ['subscribe', ['subscribe', '--subscription', 's', '--kind', 'PriceLoadingCompleted', '--max-events', '1']],
    ['deadletters', ['deadletters', 'list', 'orders']],
    ['deadletters', ['deadletters', 'redrive', 'orders', '--all']],
    // Before the outbox database is touched (nothing listens there): rows are never marked published into a bus that dies with the process.
    ['outbox relay', ['outbox', 'relay']],
  ])('%s %j: exit 2, "KAFKA_BROKERS is not set", nothing printed as done', async (name, args) => {
    const r = await cli(args, false);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${name}: KAFKA_BROKERS is not set`);
    expect(r.stdout).toBe('');
  });

  it('a pre-created HTTP subscription\'s topics stay allowed in topics --subscription (no reserved-group rule there)', async () => {
    // Past the name checks it needs the broker, which is not there: the failure is the connection, not the name.
    // --broker-timeout 2000: the name is checked before any connection, and the broker deadline ends the
    // command (exit 2) instead of kafkajs's ~12 s of connect retries (one run under load passed 60 s).
    const r = await cli(['--broker-timeout', '2000', 'topics', '--subscription', 'ce-gateway.sub.anonymous.orders'], true);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/--subscription|HTTP subscriptions/);
  });
});
