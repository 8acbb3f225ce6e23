/**
 * HTTP load on the gateway with autocannon (programmatic, loopback only): `POST /events` with a
 * fresh body per request (new event ids), a fixed number of connections, one request in flight
 * per connection. Latency is recorded per 2xx response at µs resolution.
 */
import autocannon from 'autocannon';
import type { BodyTemplate } from './events.js';
import { Latency } from './stats.js';

export interface HttpLoadOptions {
  readonly url: string;
  readonly contentType: string;
  readonly templates: readonly BodyTemplate[];
  readonly connections: number;
  readonly durationS: number;
}

export interface HttpLoadResult {
  readonly latency: Latency;
  readonly ok: number;
  readonly errors: number;
  readonly elapsedS: number;
  /** Status codes other than 2xx, by code. */
  readonly statuses: Readonly<Record<string, number>>;
}

export function runHttpLoad(o: HttpLoadOptions): Promise<HttpLoadResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(o.url)) throw new Error(`the bench only loads loopback addresses, got ${o.url}`);
  const latency = new Latency();
  const statuses: Record<string, number> = {};
  let ok = 0;
  let next = 0;
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: o.url,
        connections: o.connections,
        pipelining: 1,
        duration: o.durationS,
        timeout: 30,
        requests: [
          {
            method: 'POST',
            path: '/events',
            headers: { 'content-type': o.contentType },
            setupRequest: (req) => {
              const t = o.templates[next++ % o.templates.length]!;
              return { ...req, body: t.render() };
            },
          },
        ],
      },
      (err, result) => {
        if (err !== null && err !== undefined) {
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
        resolve({ latency, ok, errors: result.non2xx + result.errors + result.timeouts, elapsedS, statuses });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) {
        ok++;
        latency.recordMs(responseTime);
      } else {
        statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      }
    });
  });
}
