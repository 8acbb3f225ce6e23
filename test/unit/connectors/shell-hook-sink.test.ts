import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Outcome } from '../../../src/bus/subscriber/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { toStructuredJson } from '../../../src/codec/http/index.js';
import { createShellHookSink } from '../../../src/connectors/index.js';
import type { ShellHookSettings } from '../../../src/connectors/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { HOOK_STOP_WITHIN_MS, runtimeSinkFactory } from '../../../src/connectors/subscriptions/runtime.js';
import type { RuntimeSubscription } from '../../../src/connectors/subscriptions/runtime.js';
import { parseAllowList } from '../../../src/connectors/sinks/webhook/index.js';
import { capturingLogger, delivery, priceEvent, shellHookOptions, tempDir, writeScript } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.remove());

function sink(body: string, over: Partial<ShellHookSettings> = {}) {
  writeScript(tmp.dir, 'hook.sh', body);
  return createShellHookSink(shellHookOptions({ command: ['./hook.sh'], env: { OUT: tmp.dir }, ...over }, { baseDir: tmp.dir, environment: {} }), silentLogger());
}

/** What the subscriber makes of the handler's result: handled, retry or dead letter, with the reason. */
async function outcomeOf(p: Outcome | void | Promise<Outcome | void>): Promise<{ outcome: string; message?: string }> {
  let out: Outcome | void;
  try {
    out = await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const g = err as GatewayError;
    return { outcome: g.retriable ? 'retry (thrown)' : 'deadLetter (thrown)', message: g.message };
  }
  if (out === undefined || out.kind === 'ack' || out.kind === 'duplicate') return { outcome: 'handled' };
  return { outcome: out.kind, message: out.reason };
}

describe('shell-hook sink', () => {
  it('gives the script the structured-mode event on stdin and the attributes in its environment', async () => {
    const h = sink('cat > "$OUT/stdin.json"; printf "%s %s %s" "$CE_ID" "$CE_CORRELATIONID" "$CEG_ATTEMPT" > "$OUT/env.txt"');
    const e = priceEvent();
    await expect(outcomeOf(h(e, { ...delivery, attempt: 2 }))).resolves.toEqual({ outcome: 'handled' });
    expect(JSON.parse(readFileSync(join(tmp.dir, 'stdin.json'), 'utf8'))).toEqual(toStructuredJson(e));
    expect(readFileSync(join(tmp.dir, 'env.txt'), 'utf8')).toBe('evt-1 corr-1 2');
  });

  it('runs in the connector folder by default', async () => {
    const h = sink('pwd > "$OUT/pwd.txt"');
    await h(priceEvent(), delivery);
    expect(readFileSync(join(tmp.dir, 'pwd.txt'), 'utf8').trim()).toBe(tmp.dir);
  });

  it('maps exit 0 → handled, 75 → retry, 1 and 65 → dead letter', async () => {
    const h = sink('read -r _; exit "$CE_SUBJECT"');
    const results = [];
    for (const code of ['0', '75', '1', '65']) results.push((await outcomeOf(h(priceEvent({ subject: code }), delivery))).outcome);
    expect(results).toEqual(['handled', 'retry', 'deadLetter', 'deadLetter']);
  });

  it('puts the exit status and the tail of stderr and stdout in the dead-letter reason', async () => {
    const h = sink('echo "processing $CE_ID"; echo "bar $CE_PARTITIONKEY is corrupt" >&2; exit 1');
    const r = await outcomeOf(h(priceEvent(), delivery));
    expect(r).toEqual({ outcome: 'deadLetter', message: 'hook hook.sh exited with code 1 → deadLetter; stderr: "bar EUR-USD_H4 is corrupt"; stdout: "processing evt-1"' });
  });

  it('follows a configured exit-code map', async () => {
    const h = sink('exit "$CE_SUBJECT"', { exitCodes: { 65: 'retry', 75: 'deadLetter', 3: 'handled' }, otherExitCodes: 'retry' });
    const results = [];
    for (const code of ['3', '65', '75', '9']) results.push((await outcomeOf(h(priceEvent({ subject: code }), delivery))).outcome);
    expect(results).toEqual(['handled', 'retry', 'deadLetter', 'retry']);
  });

  it('retries a hook that runs over its timeout, after killing it', async () => {
    const h = sink('echo waiting >&2; sleep 30', { timeoutMs: 200, killGraceMs: 500 });
    const started = Date.now();
    const r = await outcomeOf(h(priceEvent(), delivery));
    expect(Date.now() - started).toBeLessThan(8000); // not the hook's 30 s: slack for a loaded machine
    expect(r).toEqual({ outcome: 'retry', message: 'hook hook.sh timed out after 200 ms and was killed (SIGTERM) → retry; stderr: "waiting"; stdout: ""' });
  });

  it('retries a hook that is not executable', async () => {
    const h = createShellHookSink(shellHookOptions({ command: ['./nope.sh'] }, { baseDir: tmp.dir, environment: {} }), silentLogger());
    const r = await outcomeOf(h(priceEvent(), delivery));
    expect(r.outcome).toBe('retry');
    expect(r.message).toMatch(/^hook nope\.sh could not be started: .*ENOENT/);
  });
});

describe('shell-hook sink stopping', () => {
  it('lets a hook that ends within the grace finish (handled), then refuses new events with CEG_CLOSED', async () => {
    const h = sink('sleep 0.3; exit 0', { killGraceMs: 1000 });
    const run = outcomeOf(h(priceEvent(), delivery));
    await new Promise((r) => setTimeout(r, 50));
    expect(h.running).toBe(1);
    const started = Date.now();
    // withinMs far above the hook's 0.3 s: a stop() that waited for the bound takes ≥ 30 s (timers
    // never fire early); one that waited for the hook only is done in well under 20 s on any machine.
    await h.stop({ withinMs: 30_000 });
    expect(Date.now() - started).toBeLessThan(20_000); // not withinMs: it did not wait for the bound
    await expect(run).resolves.toEqual({ outcome: 'handled' });
    const err: unknown = await Promise.resolve(h(priceEvent(), delivery)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_CLOSED');
    expect((err as GatewayError).retriable).toBe(true);
  }, 60_000);

  it('ends a hook that outlasts the grace and throws CEG_CLOSED for it (never handled)', async () => {
    const h = sink("trap 'exit 0' TERM; sleep 30 & wait", { killGraceMs: 1000 });
    const run = Promise.resolve(h(priceEvent(), delivery)).then(
      () => 'resolved',
      (e: unknown) => (e as GatewayError).code,
    );
    await new Promise((r) => setTimeout(r, 100));
    await h.stop({ withinMs: 800 });
    await expect(run).resolves.toBe('CEG_CLOSED');
    expect(h.running).toBe(0);
  });

  it('a subscription file\'s shell hook is ended when its member\'s sink closes (shutdown, PATCH, delete), not left running', async () => {
    writeScript(tmp.dir, 'hook.sh', "trap 'exit 0' TERM; sleep 30 & wait");
    const hooks = shellHookOptions({ command: ['./hook.sh'], killGraceMs: 500 }, { baseDir: tmp.dir, environment: {} });
    const d: RuntimeSubscription = {
      group: 'ce-gateway.sub.connectors.hook',
      name: 'hook',
      owner: 'connectors',
      kinds: ['PriceLoadingCompleted'],
      filters: [],
      ordering: 'key',
      retry: { maxAttempts: 3, backoff: { initialMs: 10, factor: 1, maxMs: 1000, jitter: 0 } },
      startFrom: 'latest',
      state: 'active',
      concurrency: 1,
      origin: 'file',
      delivery: { mode: 'shell-hook', sink: hooks },
    };
    const member = runtimeSinkFactory({ log: silentLogger(), allow: parseAllowList(undefined), origin: 'gateway.test' })(d, { markGone: () => undefined, share: () => 1 });
    const run = Promise.resolve(member.handler(priceEvent(), delivery)).then(
      () => 'resolved',
      (e: unknown) => (e as GatewayError).code,
    );
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await member.close();
    // Within HOOK_STOP_WITHIN_MS (the hook ignores nothing: SIGTERM ends it once the grace passed).
    expect(Date.now() - started).toBeLessThan(HOOK_STOP_WITHIN_MS + 1000);
    await expect(run).resolves.toBe('CEG_CLOSED');
  });

  it('names the subscription once in its lines when the logger already binds it', async () => {
    const { lines, log } = capturingLogger('ops.hook');
    writeScript(tmp.dir, 'hook.sh', 'exit 1');
    const h = createShellHookSink(shellHookOptions({ command: ['./hook.sh'] }, { baseDir: tmp.dir, environment: {} }), log);
    await outcomeOf(h(priceEvent(), delivery));
    const line = lines.find((l) => l.includes('hook did not handle event'));
    expect(line).toBeDefined();
    expect(line!.split('"subscription":').length - 1).toBe(1);
  });
});

describe('shell-hook sink with a record decoded from Avro', () => {
  it('writes JSON data to stdin and says application/json in CE_DATACONTENTTYPE', async () => {
    const h = sink('cat > "$OUT/stdin.json"; printf "%s" "$CE_DATACONTENTTYPE" > "$OUT/ct.txt"');
    const e = priceEvent({ datacontenttype: 'application/avro' });
    await h(e, delivery);
    const stdin = JSON.parse(readFileSync(join(tmp.dir, 'stdin.json'), 'utf8')) as Record<string, unknown>;
    expect(stdin.datacontenttype).toBe('application/json');
    expect(stdin.data).toEqual((e.data as { value: unknown }).value);
    expect(readFileSync(join(tmp.dir, 'ct.txt'), 'utf8')).toBe('application/json');
  });
});
