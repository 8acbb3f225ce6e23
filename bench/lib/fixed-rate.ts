/**
 * Open-loop load at a fixed offered rate (issue 14: single-event latency at 1,000 events/s, and
 * the gateway's RSS while it sustains 5,000 events/s). Request i is due at start + i / rate and is
 * sent then whether or not earlier ones were answered; its latency runs from when it was DUE, so
 * a stall delays and counts every request behind it (no coordinated omission).
 */
import { Pool } from 'undici';
import type { BodyTemplate } from './events.js';
import { Latency } from './stats.js';

export interface FixedRateResult {
  readonly offeredPerS: number;
  readonly sent: number;
  readonly ok: number;
  readonly errors: number;
  readonly elapsedS: number;
  /** From each request's due time to its answer, ms. */
  readonly latency: Latency;
}

/**
 * Calls `send` `ratePerS` times a second for `durationS` (warm-up: call it first with other
 * options); waits for every call before it resolves. `send` resolves true on success, false on
 * a failure it counted (it never rejects; a rejection counts as an error too).
 * `send` gets the request's due time as epoch ms (performance.timeOrigin + its due time; for a
 * probe in another process). `onTick`: called about every 500 ms while sending (sampling, say).
 */
export async function runFixedRate(o: { ratePerS: number; durationS: number; send: (dueAtMs: number) => Promise<boolean>; onTick?: () => void }): Promise<FixedRateResult> {
  const latency = new Latency();
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  let ok = 0;
  let errors = 0;
  const total = Math.round(o.ratePerS * o.durationS);
  const t0 = performance.now();
  let lastTick = t0;
  while (sent < total) {
    const now = performance.now();
    // Every request that is due by now goes out (the timer may wake late on a loaded machine).
    while (sent < total && t0 + (sent * 1000) / o.ratePerS <= now) {
      const due = t0 + (sent * 1000) / o.ratePerS;
      sent++;
      const p = o.send(performance.timeOrigin + due).then(
        (good) => {
          if (good) {
            ok++;
            latency.recordMs(performance.now() - due);
          } else errors++;
        },
        () => void errors++,
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    if (o.onTick !== undefined && now - lastTick >= 500) {
      lastTick = now;
      o.onTick();
    }
    const next = t0 + (sent * 1000) / o.ratePerS;
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(next - performance.now(), 50))));
  }
  await Promise.all([...inFlight]);
  return { offeredPerS: o.ratePerS, sent, ok, errors, elapsedS: (performance.now() - t0) / 1000, latency };
}

/** The header carrying a request's due time, epoch ms, for bench/lib/stage-recorder.ts. */
export const BENCH_DUE_HEADER = 'x-bench-due-at';

/**
 * A `send` for {@link runFixedRate}: `POST /events` on the gateway with the next template (fresh
 * event ids), over an undici pool on loopback; true when the answer is 202.
 */
export function gatewayPoster(url: string, contentType: string, templates: readonly BodyTemplate[], o: { sendDueHeader?: boolean } = {}): { send: (dueAtMs?: number) => Promise<boolean>; close: () => Promise<void> } {
  // Enough connections for every request in flight at 5,000/s with a few ms each; more only queue.
  const pool = new Pool(url, { connections: 128, pipelining: 1 });
  let next = 0;
  return {
    send: async (dueAtMs) => {
      const body = templates[next++ % templates.length]!.render();
      try {
        // BENCH_DUE_HEADER: the stage recorder in the gateway child reads it (time before the request reached the handler).
        const headers = o.sendDueHeader === true && dueAtMs !== undefined ? { 'content-type': contentType, [BENCH_DUE_HEADER]: dueAtMs.toFixed(3) } : { 'content-type': contentType };
        const res = await pool.request({ path: '/events', method: 'POST', headers, body });
        await res.body.dump();
        return res.statusCode === 202;
      } catch {
        return false;
      }
    },
    close: () => pool.close(),
  };
}
