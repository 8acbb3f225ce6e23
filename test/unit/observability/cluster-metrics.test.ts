/**
 * `GET /metrics` across node:cluster workers (src/observability/cluster-metrics.ts), with a real
 * primary and real forked workers (test/fixtures/cluster-metrics.ts), no Kafka: what the primary's
 * aggregate keeps of a worker that died, that does not answer in time, or whose answer comes too
 * late. The whole gateway in workers is test/integration/workers.kafka.test.ts; this file pins the
 * edge cases that test cannot reach.
 *
 * Every expected figure is exact. The fixture's gauges make the gauges' source visible:
 * `fixture_worker_id` is summed, and each worker sets it to its cluster id, so the sum names the
 * workers whose gauges were counted; `fixture_ready` is aggregated by minimum, as `ce_gateway_ready`.
 * No assertion is on time: waits poll with a bound (test/helpers/wait.ts), and a blocked worker is
 * blocked until the test removes a file, not for a guessed duration.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const BUCKETS = [1, 5, 10, 50];

/** A line the fixture primary writes on stdout (see test/fixtures/cluster-metrics.ts). */
interface Event {
  readonly event: 'ready' | 'exit' | 'collected';
  readonly id: number;
  readonly pid?: number;
  readonly port?: number;
  readonly shared?: number;
  readonly afterExit?: boolean;
  readonly signal?: string | null;
}

/** A listening worker: its cluster id, pid, own port and the shared one. */
interface Worker {
  readonly id: number;
  readonly pid: number;
  readonly port: number;
  readonly shared: number;
}

/** The figures of one scrape the assertions compare; a family missing from the scrape is `undefined`. */
interface Figures {
  readonly events: number | undefined;
  readonly workerIds: number | undefined;
  readonly ready: number | undefined;
  /** `fixture_batch_size`: count, sum and the cumulative buckets (le 1, 5, 10, 50, +Inf). */
  readonly batch: { count: number | undefined; sum: number | undefined; buckets: (number | undefined)[] };
}

/** The expected `fixture_batch_size` after these observations. */
const histogram = (observed: readonly number[]): Figures['batch'] => ({
  count: observed.length,
  sum: observed.reduce((s, n) => s + n, 0),
  buckets: [...BUCKETS, Number.POSITIVE_INFINITY].map((le) => observed.filter((n) => n <= le).length),
});

/** The value of one series (`name{labels}` exactly as prom-client writes it) in the text format. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** One request on a connection of its own (on the shared port, the primary hands each to the next worker). */
function call(port: number, method: string, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: new Agent({ keepAlive: false }) }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `GET /metrics` on `port`: must answer 200; its figures. */
async function scrape(port: number): Promise<Figures> {
  const r = await call(port, 'GET', '/metrics');
  expect(r.status, r.text).toBe(200);
  return {
    events: sample(r.text, 'fixture_events_total{outcome="accepted"}'),
    workerIds: sample(r.text, 'fixture_worker_id'),
    ready: sample(r.text, 'fixture_ready'),
    batch: {
      count: sample(r.text, 'fixture_batch_size_count'),
      sum: sample(r.text, 'fixture_batch_size_sum'),
      buckets: [...BUCKETS.map(String), '+Inf'].map((le) => sample(r.text, `fixture_batch_size_bucket{le="${le}"}`)),
    },
  };
}

/** A command to one worker, on its own port. */
async function tell(w: Worker, path: string): Promise<void> {
  const r = await call(w.port, 'POST', path);
  expect(r.status, r.text).toBe(200);
}

/** The fixture primary, as a child process in a process group of its own (so cleanup reaches every worker and helper). */
class Primary {
  readonly events: Event[] = [];
  private stderr = '';
  private readonly exited: Promise<void>;
  private readyTaken = 0;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    let buffered = '';
    child.stdout.on('data', (b: Buffer) => {
      buffered += b.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const l of lines) if (l.trim() !== '') this.events.push(JSON.parse(l) as Event);
    });
    child.stderr.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.exited = new Promise((r) => child.once('exit', () => r()));
  }

  static start(collectTimeoutMs: number): Primary {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/cluster-metrics.ts'], {
      cwd: ROOT,
      env: { ...process.env, COLLECT_TIMEOUT_MS: String(collectTimeoutMs) },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    return new Primary(child);
  }

  /** The first event at index `from` or later that `match` accepts, polled for 20 s at most. */
  async waitEvent(what: string, match: (e: Event) => boolean, from = 0): Promise<Event> {
    return waitFor(what, () => {
      if (this.child.exitCode !== null) throw new Error(`the fixture primary exited: ${this.stderr.slice(-2000)}`);
      return this.events.slice(from).find(match);
    }, 20_000, 10);
  }

  /** Forks `n` workers and resolves once all of them listen, as far as the primary's metrics are concerned. */
  async fork(n: number): Promise<Worker[]> {
    for (let i = 0; i < n; i++) this.child.stdin.write('fork\n');
    const want = this.readyTaken + n;
    await waitFor(`${n} more workers listening`, () => {
      if (this.child.exitCode !== null) throw new Error(`the fixture primary exited: ${this.stderr.slice(-2000)}`);
      return this.events.filter((e) => e.event === 'ready').length >= want;
    }, 20_000, 10);
    const ready = this.events.filter((e) => e.event === 'ready').slice(this.readyTaken, want);
    this.readyTaken = want;
    return ready.map((e) => ({ id: e.id, pid: e.pid!, port: e.port!, shared: e.shared! }));
  }

  /** SIGKILL to one worker; resolves once the primary has handled its exit (serveClusterMetrics's listener included). */
  async kill(w: Worker): Promise<Event> {
    process.kill(w.pid, 'SIGKILL');
    return this.waitEvent(`worker ${w.id} exit`, (e) => e.event === 'exit' && e.id === w.id);
  }

  /** Ends the primary (stdin's end: it kills its workers), then SIGKILL to whatever is left of the process group. */
  async stop(): Promise<void> {
    this.child.stdin.end();
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 5000))]);
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }
}

const total = (xs: Iterable<number>): number => [...xs].reduce((s, n) => s + n, 0);

describe('cluster metrics: what the primary keeps of workers that die, stall or answer late', () => {
  it("a dead worker's counters and histograms stay in every sum, also once the retired entries are compacted (twice); its gauges go with it", async () => {
    // Generous: nothing is slow here, and a collection timing out would drop a live worker's
    // gauges (behaviour of the next test) and make this one fail for the wrong reason.
    const p = Primary.start(10_000);
    try {
      const [survivor] = await p.fork(1);
      /** Every `/inc` ever made, by live and dead workers: each was followed by a scrape they answered. */
      const observed: number[] = [];
      /** The live workers' `fixture_ready`. */
      const ready = new Map<number, number>([[survivor!.id, 1]]);
      const expected = (): Figures => ({ events: total(observed), workerIds: total(ready.keys()), ready: Math.min(...ready.values()), batch: histogram(observed) });
      let dead = 0;
      // 4 rounds of 4 workers that die: 16 retired entries, compacted at the 8th (8 → 1) and at
      // the 15th (the sum of the first compaction + 7 → 1), so a sum of sums is checked too.
      for (let round = 0; round < 4; round++) {
        const victims = await p.fork(4);
        for (const [i, v] of victims.entries()) {
          const n = round * 4 + i + 1; // a different figure per worker: a lost or doubled one shows
          await tell(v, `/inc?n=${n}`);
          observed.push(n);
          // A dead worker's 0 must not keep the pod's minimum down.
          await tell(v, '/ready?v=0');
          ready.set(v.id, 0);
        }
        await tell(survivor!, `/inc?n=${100 + round}`);
        observed.push(100 + round);
        // Whichever worker a scrape reaches (new connections on the shared port, round-robin), it
        // answers the aggregate of all; these are also the last scrapes the victims answer.
        for (let i = 0; i < 5; i++) expect(await scrape(survivor!.shared)).toEqual(expected());
        for (const v of victims) {
          await p.kill(v);
          ready.delete(v.id);
          dead++;
          expect(await scrape(survivor!.port), `after ${dead} dead workers`).toEqual(expected());
        }
      }
      expect(dead).toBe(16);
      // A live worker's gauges are back as soon as it answers: nothing of the dead is left in them.
      expect(await scrape(survivor!.port)).toMatchObject({ workerIds: survivor!.id, ready: 1 });
    } finally {
      await p.stop();
    }
  }, 60_000);

  it('a worker that does not answer in time counts with the counters and histograms of its last answer, without its gauges; one that never answered is left out; their late answers are dropped', async () => {
    // Small, as it is waited out once; large enough that a worker that is not blocked answers in
    // time on a loaded machine.
    const p = Primary.start(1000);
    const dir = mkdtempSync(join(tmpdir(), 'ceg-cluster-metrics-'));
    const gate = join(dir, 'gate');
    try {
      const [a, b] = await p.fork(2);
      await tell(a!, '/inc?n=3');
      await tell(b!, '/inc?n=5');
      await tell(b!, '/ready?v=0');
      expect(await scrape(a!.port)).toEqual({ events: 8, workerIds: a!.id + b!.id, ready: 0, batch: histogram([3, 5]) });

      // B counts 4 more after that answer, then blocks its event loop. C starts, counts 7 and
      // blocks before any scrape: it has never answered.
      writeFileSync(gate, '');
      await tell(b!, `/block?inc=4&gate=${encodeURIComponent(gate)}`);
      const [c] = await p.fork(1);
      await tell(c!, '/inc?n=7');
      await tell(c!, `/block?gate=${encodeURIComponent(gate)}`);
      // B: its last answer's counter (5, not 9) and histogram; not its gauges (its stale
      // `fixture_ready` 0 would pull the minimum down, its id would be in the sum). C: nothing.
      expect(await scrape(a!.port)).toEqual({ events: 8, workerIds: a!.id, ready: 1, batch: histogram([3, 5]) });

      // Unblocked, B and C answer the collection they missed: after the timeout, so dropped.
      const mark = p.events.length;
      rmSync(gate);
      await p.waitEvent("B's late answer", (e) => e.event === 'collected' && e.id === b!.id, mark);
      await p.waitEvent("C's late answer", (e) => e.event === 'collected' && e.id === c!.id, mark);
      // C dies having never answered in time: the primary has none of its figures to keep (its 7
      // are lost, as whatever a worker counts after its last answered scrape). Had C's late
      // answer been taken, its 7 would be retired now and counted.
      await p.kill(c!);
      // B answers in time again: counted once, with its 9.
      expect(await scrape(a!.port)).toEqual({ events: 3 + 9, workerIds: a!.id + b!.id, ready: 0, batch: histogram([3, 5]) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await p.stop();
    }
  }, 60_000);

  it("an answer that reaches the primary after its worker's exit is dropped: the worker counts once, from its retired figures", async () => {
    // Larger than the test's time: the scrape below can complete only through X's late answer
    // (a collection that timed out would drop that answer for another reason; A's renderer would
    // give up first, after its own 6 s, and the scrape answer 500).
    const p = Primary.start(30_000);
    try {
      const [a, x] = await p.fork(2);
      await tell(a!, '/inc?n=3');
      await tell(x!, '/inc?n=5');
      expect(await scrape(a!.port)).toEqual({ events: 8, workerIds: a!.id + x!.id, ready: 1, batch: histogram([3, 5]) });
      // Counted after X's last answered scrape: in its late answer only.
      await tell(x!, '/inc?n=2');
      await tell(x!, '/die-on-collect');
      // X dies on this scrape's collection; its answer (its 5 and the 2) arrives once the primary
      // has handled its exit. X counts once, from its retired figures (5); no gauge of X.
      expect(await scrape(a!.port)).toEqual({ events: 8, workerIds: a!.id, ready: 1, batch: histogram([3, 5]) });
      expect(p.events.find((e) => e.event === 'exit' && e.id === x!.id)).toMatchObject({ signal: 'SIGKILL' });
      // The case did happen: the primary received X's answer after X's exit.
      await p.waitEvent("X's answer after its exit", (e) => e.event === 'collected' && e.id === x!.id && e.afterExit === true);
      expect(p.events.filter((e) => e.event === 'collected' && e.id === x!.id).map((e) => e.afterExit)).toEqual([false, true]);
      expect(await scrape(a!.port)).toEqual({ events: 8, workerIds: a!.id, ready: 1, batch: histogram([3, 5]) });
    } finally {
      await p.stop();
    }
  }, 60_000);
});
