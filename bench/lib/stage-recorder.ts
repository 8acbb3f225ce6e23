/**
 * Records the stage messages of src/core/stage-channels.ts, GC pauses and the event-loop delay
 * of THIS process, for `bench/latency-probe.ts` (issue 14: where the single-event p99 comes from).
 * Two uses: imported by the probe (the raw producer's side, in the probe process), and loaded
 * into the gateway child with `node --import tsx --import ./bench/lib/stage-recorder.ts`, where
 * `STAGE_PROBE_OUT=<file>` arms it: each SIGUSR2 writes what was recorded since the previous one
 * (or the start) to that file as JSON and starts a new window.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { Session } from 'node:inspector';
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import type { IngressStages, PublisherStages, SenderStages } from '../../src/core/stage-channels.js';
import { BENCH_DUE_HEADER } from './fixed-rate.js';

/** One GC pause: when it started and how long it lasted (ms, this process's performance.now()), its kind (minor, major, incremental, weakcb). */
export interface GcPause {
  readonly at: number;
  readonly ms: number;
  readonly kind: string;
}

/** What one window recorded. */
export interface StageSamples {
  readonly startedAt: number;
  readonly endedAt: number;
  readonly ingress: IngressStages[];
  readonly publisher: PublisherStages[];
  readonly sender: SenderStages[];
  readonly gc: GcPause[];
  /**
   * Per request that carried the bench's due-time header: ms from its due time (the load
   * generator's clock, epoch) to the moment node's HTTP server emitted it (this process): the
   * load generator's lateness, the loopback, and this process's event loop before the parse.
   * Two processes' clocks: read it relative to its minimum.
   */
  readonly arrivalLag: number[];
  /** Event-loop delay at 1 ms resolution over the window (node's histogram; includes the 1 ms), ms. */
  readonly loopDelayMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

const GC_KINDS: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb', 16: 'major' };

/** Subscribes now; `take()` returns what was seen since the last take (or since start) and starts anew. */
export class StageRecorder {
  #startedAt = performance.now();
  #ingress: IngressStages[] = [];
  #publisher: PublisherStages[] = [];
  #sender: SenderStages[] = [];
  #gc: GcPause[] = [];
  #arrivalLag: number[] = [];
  readonly #loop = monitorEventLoopDelay({ resolution: 1 });
  readonly #obs: PerformanceObserver;
  readonly #onIngress = (m: unknown): void => void this.#ingress.push(m as IngressStages);
  readonly #onPublisher = (m: unknown): void => void this.#publisher.push(m as PublisherStages);
  readonly #onSender = (m: unknown): void => void this.#sender.push(m as SenderStages);
  readonly #onHttp = (m: unknown): void => {
    const due = (m as { request: IncomingMessage }).request.headers[BENCH_DUE_HEADER];
    if (typeof due === 'string') this.#arrivalLag.push(performance.timeOrigin + performance.now() - Number(due));
  };

  constructor() {
    subscribe('ce-gateway:ingress', this.#onIngress);
    subscribe('ce-gateway:publisher', this.#onPublisher);
    subscribe('ce-gateway:sender', this.#onSender);
    subscribe('http.server.request.start', this.#onHttp);
    this.#obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) this.#gc.push({ at: e.startTime, ms: e.duration, kind: GC_KINDS[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? 'other' });
    });
    this.#obs.observe({ entryTypes: ['gc'] });
    this.#loop.enable();
  }

  take(): StageSamples {
    const now = performance.now();
    const ms = (ns: number): number => Number((ns / 1e6).toFixed(3));
    const out: StageSamples = {
      startedAt: this.#startedAt,
      endedAt: now,
      ingress: this.#ingress,
      publisher: this.#publisher,
      sender: this.#sender,
      gc: this.#gc.filter((g) => g.at >= this.#startedAt),
      arrivalLag: this.#arrivalLag,
      loopDelayMs: { p50: ms(this.#loop.percentile(50)), p99: ms(this.#loop.percentile(99)), max: ms(this.#loop.max) },
    };
    this.#startedAt = now;
    this.#ingress = [];
    this.#publisher = [];
    this.#sender = [];
    this.#gc = [];
    this.#arrivalLag = [];
    this.#loop.reset();
    return out;
  }

  stop(): void {
    unsubscribe('ce-gateway:ingress', this.#onIngress);
    unsubscribe('ce-gateway:publisher', this.#onPublisher);
    unsubscribe('ce-gateway:sender', this.#onSender);
    unsubscribe('http.server.request.start', this.#onHttp);
    this.#obs.disconnect();
    this.#loop.disable();
  }
}

/**
 * With STAGE_PROBE_HEAP=1, V8's sampling heap profiler runs over each window and keeps the samples
 * of objects that GC already collected (what a scavenge has to sweep: every allocation, not only
 * what survives); each window's profile goes to `<out>.heapprofile` (Chrome DevTools › Memory).
 */
function heapSampler(): { readonly restart: (file: string | undefined) => void } {
  const session = new Session();
  session.connect();
  const start = (): void =>
    session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as object, (err) => {
      if (err) console.error(`stage recorder: heap sampling did not start: ${err.message}`);
    });
  start();
  return {
    restart: (file) =>
      session.post('HeapProfiler.stopSampling', (err, res) => {
        if (err) console.error(`stage recorder: heap sampling did not stop: ${err.message}`);
        else if (file !== undefined) writeFileSync(file, JSON.stringify(res.profile));
        start();
      }),
  };
}

// Loaded into a gateway child with STAGE_PROBE_OUT set: windows on SIGUSR2.
const out = process.env.STAGE_PROBE_OUT;
if (out !== undefined && out !== '') {
  const recorder = new StageRecorder();
  const heap = process.env.STAGE_PROBE_HEAP === '1' ? heapSampler() : undefined;
  process.on('SIGUSR2', () => {
    heap?.restart(`${out}.heapprofile`);
    writeFileSync(out, JSON.stringify(recorder.take()));
  });
}
