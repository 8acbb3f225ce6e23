/** Latency histograms (µs resolution), scenario results, machine info and the printed table. */
import { readdirSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import * as hdr from 'hdr-histogram-js';

/** A latency recorder in microseconds (1 µs … 120 s, 3 significant digits). */
export class Latency {
  readonly #h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });

  /** Records one duration given in ms (fractions kept down to 1 µs). */
  recordMs(ms: number): void {
    this.#h.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.#h.totalCount;
  }

  /** Percentile in ms. */
  percentileMs(p: number): number {
    return this.#h.getValueAtPercentile(p) / 1000;
  }

  get meanMs(): number {
    return this.#h.mean / 1000;
  }

  get maxMs(): number {
    return this.#h.maxValue / 1000;
  }
}

/** One measured scenario. Units: events/s, ms, percent of one core. */
export interface ScenarioResult {
  readonly name: string;
  readonly side: 'gateway' | 'raw';
  /** The Kafka client library of the raw producer or of the gateway (KAFKA_CLIENT). */
  readonly client: 'kafkajs' | 'platformatic';
  readonly mode: 'single' | 'batch';
  /** 'baseline': the gateway from BENCH_BASELINE_ROOT (A/B in one run); absent: this tree. */
  readonly build?: 'baseline';
  /** GATEWAY_WORKERS of the gateway (`gateway*-batch-workers`); absent: one process. */
  readonly workers?: number;
  readonly concurrency: number;
  readonly eventsPerRequest: number;
  readonly durationS: number;
  /** Requests (gateway) or sends (raw) answered successfully. */
  readonly requests: number;
  readonly events: number;
  readonly eventsPerS: number;
  readonly requestsPerS: number;
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly mean: number; readonly max: number };
  /** Non-2xx answers, socket errors and timeouts (gateway); failed sends (raw). */
  readonly errors: number;
  /** CPU used during the measured window, % of one core: the gateway child, this process (load generator / raw producer), the Kafka broker. */
  readonly cpu: { readonly gatewayPct: number | null; readonly benchPct: number; readonly brokerPct: number | null };
  /**
   * CPU µs per acknowledged event of the side under test: the gateway child (gateway rows) or this
   * process, which is the raw producer (raw rows). Unlike events/s it hardly moves when other
   * processes take the cores (issue 14: the A/B figure on a shared machine).
   */
  readonly cpuUsPerEvent: number | null;
  /** Records the topic's end offsets grew by during warm-up + measurement, vs events acknowledged then. */
  readonly recordsWritten: number;
  readonly eventsAcknowledged: number;
}

export function latencySummary(l: Latency): ScenarioResult['latencyMs'] {
  return { p50: l.percentileMs(50), p90: l.percentileMs(90), p99: l.percentileMs(99), mean: l.meanMs, max: l.maxMs };
}

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  readonly kafka: string;
}

/** Kafka's version from the stack's jar folder (kafka-clients-<version>.jar). */
export function kafkaVersion(libsDir: string | undefined): string {
  try {
    if (libsDir === undefined || libsDir === '') return 'unknown';
    const jar = readdirSync(libsDir).find((f) => /^kafka-clients-\d[\w.-]*\.jar$/.test(f));
    return jar === undefined ? 'unknown' : jar.slice('kafka-clients-'.length, -'.jar'.length);
  } catch {
    return 'unknown';
  }
}

export function machineInfo(libsDir: string | undefined): MachineInfo {
  const c = cpus();
  return {
    cpuModel: c[0]?.model.trim() ?? 'unknown',
    cores: c.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    kafka: kafkaVersion(libsDir),
  };
}

const f0 = (n: number): string => Math.round(n).toLocaleString('en-US');
const f2 = (n: number): string => n.toFixed(2);
const cpu = (p: number | null): string => (p === null ? '–' : `${f0(p)}%`);
const ratio = (a: number, b: number): string => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a');

/** The results as a Markdown table, then the gateway/raw ratios per mode. */
export function formatTable(results: readonly ScenarioResult[]): string {
  const lines = [
    '(CPU µs/event: the gateway child\'s CPU per acknowledged event on gateway rows, the raw producer\'s — this process — on raw rows.)',
    '',
    '| scenario | concurrency | events/request | events/s | requests/s | p50 ms | p90 ms | p99 ms | errors | gateway CPU | bench CPU | broker CPU | CPU µs/event |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.concurrency} | ${r.eventsPerRequest} | ${f0(r.eventsPerS)} | ${f0(r.requestsPerS)} | ${f2(r.latencyMs.p50)} | ${f2(r.latencyMs.p90)} | ${f2(r.latencyMs.p99)} | ${r.errors} | ${cpu(r.cpu.gatewayPct)} | ${cpu(r.cpu.benchPct)} | ${cpu(r.cpu.brokerPct)} | ${r.cpuUsPerEvent === null ? '–' : f2(r.cpuUsPerEvent)} |`,
    ),
    '',
    '| client, mode | throughput gateway/raw | p50 gateway/raw | p99 gateway/raw |',
    '|---|---:|---:|---:|',
  ];
  // Each gateway row against the raw producer of its client (a baseline row too, marked as such).
  for (const g of results.filter((r) => r.side === 'gateway')) {
    const w = results.find((r) => r.side === 'raw' && r.client === g.client && r.mode === g.mode);
    if (w) lines.push(`| ${g.client}, ${g.mode}${g.workers === undefined ? '' : `, ${g.workers} workers`}${g.build === 'baseline' ? ' [baseline]' : ''} | ${ratio(g.eventsPerS, w.eventsPerS)} | ${ratio(g.latencyMs.p50, w.latencyMs.p50)} | ${ratio(g.latencyMs.p99, w.latencyMs.p99)} |`);
  }
  return lines.join('\n');
}
