/**
 * `ce-gateway replay` as a process against a fake gateway (a plain HTTP server in this process):
 * what the operator is told when the replay was done but the drain watch then fails or cannot run
 * (tester: a Kafka that did not answer printed only `partitionCount: metadata failed…`, exit 2, so
 * the replay looked undone; without KAFKA_BROKERS there is nothing to watch with: exit 0); what a connection failure
 * says (the cause, never a password of `--gateway`).
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditFailureMessage, requestFailure } from '../../../src/cli/commands/replay.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const run = promisify(execFile);

/** The CLI with only `vars` of ours (no stack settings, no env file: it runs in a temporary folder). */
async function cli(args: string[], vars: Record<string, string> = {}): Promise<{ stdout: string; stderr: string; code: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', ...vars };
  for (const name of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'CONNECTORS_DIR', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE', 'PARTNERS_FILE', 'CE_GATEWAY_API_KEY', 'CE_GATEWAY_API_KEY_FILE', 'PUBLIC_BASE_URL']) if (vars[name] === undefined) delete env[name];
  return run(process.execPath, [...CLI_ENTRY, ...args], { cwd: tmpdir(), env }).then(
    (r) => ({ ...r, code: 0 }),
    (err: { stdout: string; stderr: string; code: number }) => ({ stdout: err.stdout, stderr: err.stderr, code: err.code }),
  );
}

/** Bodies of the replay requests the fake gateway received. */
const replays: unknown[] = [];
let fake: Server;
let base: string;

beforeAll(async () => {
  // A gateway that replays (5 events on partition 0) and answers the watch's reads of the
  // subscription and the catalog.
  fake = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST' && req.url === '/subscriptions/unaudited/replay') {
        replays.push(JSON.parse(body));
        // Done, but the audit entry could not be written (docs/subscriptions.md): 200 with auditFailure.
        res.end(JSON.stringify({ at: new Date().toISOString(), by: 'anonymous', to: 'earliest', dryRun: false, outcome: 'done', partitions: { '0': { from: '5', to: '0', events: 5, skipped: 0 } }, events: 5, skipped: 0, auditFailure: { code: 'CEG_BROKER_UNAVAILABLE', message: 'kafka: connect ECONNREFUSED 127.0.0.1:19092' } }));
      } else if (req.method === 'POST' && req.url === '/subscriptions/cut/replay') {
        replays.push(JSON.parse(body));
        req.socket.destroy(); // taken, then the connection breaks before the answer (a gateway killed mid-replay)
      } else if (req.method === 'POST') {
        replays.push(JSON.parse(body));
        res.end(JSON.stringify({ at: new Date().toISOString(), by: 'anonymous', to: 'earliest', dryRun: false, partitions: { '0': { from: '5', to: '0', events: 5, skipped: 0 } }, events: 5, skipped: 0 }));
      } else if (req.url === '/subscriptions/orders') res.end(JSON.stringify({ name: 'orders', group: 'ceg-replaycli-orders', kinds: ['PriceLoadingCompleted'], state: 'active' }));
      else if (req.url === '/subscriptions/held' || req.url === '/subscriptions/dropped') {
        res.end(JSON.stringify({ name: req.url.slice(15), group: `ceg-replaycli-${req.url.slice(15)}`, kinds: ['PriceLoadingCompleted'], state: req.url === '/subscriptions/held' ? 'paused' : 'gone' }));
      }
      else if (req.url === '/subscriptions/pulled') res.end(JSON.stringify({ name: 'pulled', group: 'ceg-replaycli-pulled', kinds: ['PriceLoadingCompleted'], state: 'active', delivery: { mode: 'pull' } }));
      else if (req.url === '/catalog') res.end(JSON.stringify({ kinds: [{ name: 'PriceLoadingCompleted', eventId: 'ceg.replaycli.v1', topic: 'ceg-replaycli-topic' }] }));
      else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
  });
  fake.listen(0, '127.0.0.1');
  await once(fake, 'listening');
  base = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
});

afterAll(() => {
  fake?.close();
});

describe('ce-gateway replay: the replay was done, the drain watch failed', { timeout: 60_000 }, () => {
  it('says the replay was done and must not be run again, and exits 1, when the Kafka it watches with does not answer', async () => {
    const down = await cli(['replay', 'orders', '--to-earliest', '--gateway', base, '--json'], { KAFKA_BROKERS: '127.0.0.1:1' });
    expect(JSON.parse(down.stdout.split('\n')[0]!)).toMatchObject({ type: 'replay', events: 5 });
    expect(down.stderr).toContain('ce-gateway replay: orders was replayed (5 events again; the offsets moved, delivery goes on) — do not run the replay again; only watching the backlog drain failed: ');
    expect(down.stderr).toContain('ECONNREFUSED');
    expect(down.code).toBe(1);
  });

  it('without KAFKA_BROKERS (HTTP access only) does not watch, says so, and exits 0 like --no-wait', async () => {
    const unset = await cli(['replay', 'orders', '--to-earliest', '--gateway', base, '--json']);
    expect(JSON.parse(unset.stdout.split('\n')[0]!)).toMatchObject({ type: 'replay', events: 5 });
    expect(unset.stderr).toBe('replay: orders was replayed; its drain is not shown: KAFKA_BROKERS is not set (the watch reads the committed offsets from Kafka)\n');
    expect(unset.code).toBe(0);
  });

  it('--no-wait does not watch: exit 0', async () => {
    const r = await cli(['replay', 'orders', '--to-earliest', '--gateway', base, '--json', '--no-wait']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  s.close();
  await once(s, 'close');
  return port;
}

describe('ce-gateway replay: done, but its audit entry could not be written (200 with auditFailure)', { timeout: 60_000 }, () => {
  const line = 'ce-gateway replay: unaudited was replayed (the offsets moved) — do not run the replay again — but its entry is missing from the audit log (GET /subscriptions/unaudited/replays; the gateway logged it): the write failed: kafka: connect ECONNREFUSED 127.0.0.1:19092 [CEG_BROKER_UNAVAILABLE]\n';

  it('says so on stderr in one line ending with the code, keeps it in the JSON line, and exits 0 (the offsets moved)', async () => {
    const r = await cli(['replay', 'unaudited', '--to-earliest', '--gateway', base, '--json', '--no-wait']);
    expect(JSON.parse(r.stdout.split('\n')[0]!)).toMatchObject({ type: 'replay', events: 5, auditFailure: { code: 'CEG_BROKER_UNAVAILABLE' } });
    expect(r.stderr).toBe(line);
    expect(r.code).toBe(0);
  });

  it('said before the drain watch\'s own words (here: no KAFKA_BROKERS to watch with), exit 0', async () => {
    const r = await cli(['replay', 'unaudited', '--to-earliest', '--gateway', base]);
    expect(r.stderr).toBe(`${line}replay: unaudited was replayed; its drain is not shown: KAFKA_BROKERS is not set (the watch reads the committed offsets from Kafka)\n`);
    expect(r.code).toBe(0);
  });

  it('auditFailureMessage: a code that is not one is left out, control characters escaped', () => {
    expect(auditFailureMessage('s', { code: 'not a code', message: 'a\u001b[2Jb' })).toBe('ce-gateway replay: s was replayed (the offsets moved) — do not run the replay again — but its entry is missing from the audit log (GET /subscriptions/s/replays; the gateway logged it): the write failed: a\\u001b[2Jb\n');
    expect(auditFailureMessage('s', 'odd')).toContain('the write failed\n');
  });
});

describe('ce-gateway replay: a gateway that cannot be reached', { timeout: 60_000 }, () => {
  it('names the cause of a connection failure (ECONNREFUSED), not only "fetch failed"; exit 2', async () => {
    const port = await closedPort();
    const r = await cli(['replay', 'orders', '--to-earliest', '--gateway', `http://127.0.0.1:${port}`, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`ce-gateway replay: http://127.0.0.1:${port}: fetch failed (connect ECONNREFUSED 127.0.0.1:${port})\n`);
  });

  it('without --gateway: says the URL came from PORT and how to point it at the gateway (a shell without the gateway\'s PORT is the usual cause); exit 2', async () => {
    const port = await closedPort();
    const r = await cli(['replay', 'orders', '--to-earliest', '--json'], { PORT: String(port), HOST: '127.0.0.1' });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`ce-gateway replay: http://127.0.0.1:${port}: fetch failed (connect ECONNREFUSED 127.0.0.1:${port}) — nothing was replayed; the URL is PUBLIC_BASE_URL's default from HOST and PORT (PORT=${port}): set PORT as the gateway has it, or name the gateway with --gateway URL\n`);
    const named = await cli(['replay', 'orders', '--to-earliest', '--json'], { PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    expect(named.stderr).toMatch(/— nothing was replayed; is the gateway running at PUBLIC_BASE_URL\? Or name it with --gateway URL\n$/);
  });

  it('a connection that breaks after the request was sent: says the replay may have been done and how to check, exit 1 (not 2, "nothing was replayed")', async () => {
    const before = replays.length;
    const r = await cli(['replay', 'cut', '--to-earliest', '--gateway', base, '--json']);
    expect(replays.length).toBe(before + 1);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the request was sent but no answer came, so cut may have been replayed: check GET /subscriptions/cut/replays');
  });

  it('a dry run whose connection breaks: nothing was replayed either way, exit 2', async () => {
    const r = await cli(['replay', 'cut', '--to-earliest', '--dry-run', '--gateway', base, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('may have been replayed');
  });

  it('refuses user:password@ in --gateway without echoing the password (the API key comes from the environment); exit 2', async () => {
    const port = await closedPort();
    const r = await cli(['replay', 'orders', '--to-earliest', '--gateway', `http://user:s3cretpw@127.0.0.1:${port}`, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--gateway http://127.0.0.1:${port}: no user:password@ in the URL; the API key comes from CE_GATEWAY_API_KEY`);
    expect(r.stdout + r.stderr).not.toContain('s3cretpw');
    expect(r.stdout + r.stderr).not.toContain('//user');
  });

  it('requestFailure: the cause\'s code and message, an aggregate\'s errors, URLs without credentials', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    expect(requestFailure(new TypeError('fetch failed', { cause: refused }))).toBe('fetch failed (connect ECONNREFUSED 127.0.0.1:9)');
    expect(requestFailure(new TypeError('fetch failed', { cause: Object.assign(new Error('getaddrinfo failed'), { code: 'ENOTFOUND' }) }))).toBe('fetch failed (ENOTFOUND: getaddrinfo failed)');
    const both = Object.assign(new AggregateError([new Error('connect ECONNREFUSED ::1:9'), new Error('connect ECONNREFUSED 127.0.0.1:9')], ''), { code: 'ECONNREFUSED' });
    expect(requestFailure(new TypeError('fetch failed', { cause: both }))).toBe('fetch failed (connect ECONNREFUSED ::1:9; connect ECONNREFUSED 127.0.0.1:9)');
    expect(requestFailure(new TypeError('Request cannot be constructed from a URL that includes credentials: http://u:s3cretpw@gw.example/x'))).toBe('Request cannot be constructed from a URL that includes credentials: http://gw.example/x');
    expect(requestFailure(new Error('plain'))).toBe('plain');
  });
});

describe('ce-gateway replay --to-offsets', { timeout: 60_000 }, () => {
  it('refuses a partition named twice as a usage error (exit 2) naming it, and sends nothing', async () => {
    const before = replays.length;
    const r = await cli(['replay', 'orders', '--to-offsets', '0:1,0:2', '--gateway', base, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('partition 0 is given twice (0:1 and 0:2)');
    expect(replays.length).toBe(before);
  });

  it('refuses a partition named twice over two --to-offsets options (the last one silently won), exit 2, and sends nothing', async () => {
    const before = replays.length;
    const r = await cli(['replay', 'orders', '--to-offsets', '0:1', '--to-offsets', '0:2', '--gateway', base, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('partition 0 is given twice (0:1 and 0:2)');
    expect(replays.length).toBe(before);
  });

  it('takes the partitions of several --to-offsets options together', async () => {
    const before = replays.length;
    const r = await cli(['replay', 'orders', '--to-offsets', '0:1', '--to-offsets', '3:2', '--gateway', base, '--json', '--no-wait']);
    expect(r.code, r.stderr).toBe(0);
    expect(replays.slice(before)).toEqual([{ to: { '0': 1, '3': 2 }, dryRun: false }]);
  });
});

describe('ce-gateway replay: options and states (break report D10, D11)', { timeout: 60_000 }, () => {
  it('a paused subscription: says the replayed events come on resume and exits 0 at once instead of waiting out --timeout', async () => {
    const r = await cli(['replay', 'held', '--to-earliest', '--gateway', base, '--json', '--timeout', '600'], { KAFKA_BROKERS: '127.0.0.1:1' });
    expect(JSON.parse(r.stdout.split('\n')[0]!)).toMatchObject({ type: 'replay', events: 5 });
    expect(r.stderr).toBe('replay: held was replayed; it is paused, so the 5 replayed events are delivered once it is resumed (PATCH its state to active); the drain is not watched\n');
    expect(r.code).toBe(0);
  });

  it('a pull subscription: its clients drain it, so the drain is not watched (it waited out --timeout): says so, exit 0, Kafka not asked', async () => {
    // The broker does not answer: the old watch went on to read the committed offsets (and, with a
    // broker, polled them until --timeout, as no member of the gateway drains a pull subscription).
    const r = await cli(['replay', 'pulled', '--to-earliest', '--gateway', base, '--json', '--timeout', '600'], { KAFKA_BROKERS: '127.0.0.1:1' });
    expect(JSON.parse(r.stdout.split('\n')[0]!)).toMatchObject({ type: 'replay', events: 5 });
    expect(r.stdout.split('\n').filter((l) => l !== '')).toHaveLength(1);
    expect(r.stderr).toBe("replay: pulled was replayed; it is a pull subscription, so its 5 replayed events are served to its clients' pulls (a pull without a cursor reads from the new positions; drop cursors from before the replay) and drain as they commit; the drain is not watched (GET /subscriptions/pulled/status shows the lag)\n");
    expect(r.code).toBe(0);
  });

  it('a gone subscription: says nothing is delivered until it is re-activated; exit 1 (replayed, drain not seen)', async () => {
    const r = await cli(['replay', 'dropped', '--to-earliest', '--gateway', base, '--json'], { KAFKA_BROKERS: '127.0.0.1:1' });
    expect(r.stderr).toContain('replay: dropped was replayed, but it is gone');
    expect(r.code).toBe(1);
  });

  it.each([
    [['--timeout', '1e3'], /--timeout.*whole number from 1 to 604800/],
    [['--timeout', '0x10'], /--timeout.*whole number/],
    [['--timeout', '0'], /--timeout.*whole number/],
  ])('%j is a usage error (exit 2) and nothing is replayed', async (extra, message) => {
    const before = replays.length;
    const r = await cli(['replay', 'orders', '--to-earliest', '--gateway', base, ...extra]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(replays.length).toBe(before);
  });

  // It was a usage error (exit 2, "reaches back before 1970"), while the HTTP replay it sends takes
  // such a time as the earliest offset (as `start` does): now the CLI sends it, the RFC 3339 text
  // verbatim, a duration as the instant it names at the earliest 1970-01-01T00:00:00.000Z.
  it.each([
    ['999999999d', '1970-01-01T00:00:00.000Z'],
    ['30000d', '1970-01-01T00:00:00.000Z'],
    ['1969-12-31T23:59:59Z', '1969-12-31T23:59:59Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00Z'],
  ])('--to-time %s (before 1970) is replayed as the gateway takes it (from the earliest offset): to %s', async (when, sent) => {
    const before = replays.length;
    const r = await cli(['replay', 'orders', '--to-time', when, '--gateway', base, '--json', '--no-wait']);
    expect(r.stderr).not.toContain('Invalid time value');
    expect(r.code, r.stderr).toBe(0);
    expect(replays.slice(before)).toEqual([{ to: sent, dryRun: false }]);
  });

  it.each(['?x=1', '/?token=a', '#frag', '/api#x'])('--gateway with a query or fragment (%s) is refused (exit 2) before any request', async (tail) => {
    const before = replays.length;
    const r = await cli(['replay', 'orders', '--to-earliest', '--gateway', `${base}${tail}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--gateway: a base URL without a (query|fragment)/);
    expect(replays.length).toBe(before);
  });

  it('--gateway that is not an http(s) URL is refused (exit 2)', async () => {
    for (const bad of ['ftp://127.0.0.1/', '127.0.0.1:8080']) {
      const r = await cli(['replay', 'orders', '--to-earliest', '--gateway', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr, bad).toMatch(/--gateway: (an http:\/\/ or https:\/\/ URL|not an absolute URL)/);
    }
  });
});
