/** startConnectors on a real gateway over the in-memory transport (no broker). */
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { loadConnectors, startConnectors } from '../../../src/connectors/index.js';
import { createLogger, silentLogger } from '../../../src/observability/index.js';
import { priceLoaded } from '../../fixtures/events.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { waitFor } from '../../helpers/wait.js';
import { caughtAsync } from '../../helpers/errors.js';
import { PRICE_LOADING_COMPLETED as PRICE } from '../../../src/catalog/generated/index.js';
import { alive, tempDir, writeScript } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
let gw: TestGateway;
beforeEach(async () => {
  tmp = tempDir();
  gw = await startGateway({ stack: false });
});
afterEach(async () => {
  await gw.close();
  tmp.remove();
});

describe('startConnectors', () => {
  it('a connector file listing a kind twice still starts, subscribed to it once, though the gateway\'s subscribe refuses a repeat from the library', async () => {
    const err = await caughtAsync(gw.gateway.subscribe({ subscription: 'mem.twice', kinds: ['PriceLoadingCompleted', PRICE.eventId], handler: async () => {} }));
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.details['field']).toBe('kinds[1]');
    writeFileSync(join(tmp.dir, 'drop.yaml'), `kind: file-drop\nsubscription: mem.twice\nkinds: [PriceLoadingCompleted, ${PRICE.eventId}]\nsink: { directory: drops }\n`);
    const handle = await startConnectors(gw.gateway, loadConnectors(tmp.dir), silentLogger());
    try {
      expect(handle.running.map((r) => r.subscription.name)).toEqual(['mem.twice']);
      const receipt = gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded('TWICE/ONCE', 'H1'))!;
      await receipt.delivered;
      await waitFor('the event dropped', () => readdirSync(join(tmp.dir, 'drops')).length >= 1);
    } finally {
      await handle.stop();
    }
    expect(readdirSync(join(tmp.dir, 'drops'))).toHaveLength(1);
  });

  it('starts the enabled connectors only, each under its subscription, and stops them', async () => {
    writeScript(tmp.dir, 'hook.sh', 'printf "%s\\n" "$CE_ID" >> "$OUT/hook.log"');
    writeFileSync(join(tmp.dir, 'hook.yaml'), `kind: shell-hook\nsubscription: mem.hook\nkinds: [PriceLoadingCompleted]\nsink:\n  command: [./hook.sh]\n  env: { OUT: ${tmp.dir} }\n`);
    writeFileSync(join(tmp.dir, 'drop.yaml'), `kind: file-drop\nsubscription: mem.drop\nkinds: [PriceLoadingCompleted]\nsink: { directory: drops }\n`);
    writeFileSync(join(tmp.dir, 'off.yaml'), `kind: file-drop\nenabled: false\nsubscription: mem.off\nkinds: [PriceLoadingCompleted]\nsink: { directory: off }\n`);
    const handle = await startConnectors(gw.gateway, loadConnectors(tmp.dir), silentLogger());
    expect(handle.running.map((r) => [r.definition.name, r.subscription.name])).toEqual([
      ['drop', 'mem.drop'],
      ['hook', 'mem.hook'],
    ]);

    const receipts = [priceLoaded('AAA/BBB', 'H1'), priceLoaded('CCC/DDD', 'H4')].map((d) => gw.gateway.publisher().publish('PriceLoadingCompleted', d)!);
    await Promise.all(receipts.map((r) => r.delivered));
    const ids = receipts.map((r) => r.id);
    await waitFor('both events run through the hook', () => {
      try {
        return readFileSync(join(tmp.dir, 'hook.log'), 'utf8').trim().split('\n').length >= 2;
      } catch {
        return false;
      }
    });
    await waitFor('both events dropped', () => readdirSync(join(tmp.dir, 'drops')).length >= 2);
    await handle.stop();

    expect(readFileSync(join(tmp.dir, 'hook.log'), 'utf8').trim().split('\n').sort()).toEqual([...ids].sort());
    const files = readdirSync(join(tmp.dir, 'drops')).sort();
    expect(files).toHaveLength(2);
    const dropped = files.map((f) => JSON.parse(readFileSync(join(tmp.dir, 'drops', f), 'utf8')) as { id: string; data: unknown });
    expect(dropped.map((d) => d.id).sort()).toEqual([...ids].sort());
    expect(dropped.map((d) => d.data)).toContainEqual({ ...priceLoaded('AAA/BBB', 'H1'), feed: null }); // feed: optional field, default null
    expect(readdirSync(tmp.dir).includes('off')).toBe(false);
    expect(handle.running).toEqual([]);
    // Data decoded from Avro is written as JSON, and says so.
    expect(dropped.map((d) => (d as { datacontenttype?: string }).datacontenttype)).toEqual(['application/json', 'application/json']);
  });

  it('log lines of a connector name its subscription once (no duplicate JSON key)', async () => {
    writeScript(tmp.dir, 'hook.sh', 'echo done >&2; exit 0');
    writeFileSync(join(tmp.dir, 'hook.yaml'), `kind: shell-hook\nsubscription: mem.logged\nkinds: [PriceLoadingCompleted]\nsink:\n  command: [./hook.sh]\n`);
    writeFileSync(join(tmp.dir, 'drop.yaml'), `kind: file-drop\nsubscription: mem.logged-drop\nkinds: [PriceLoadingCompleted]\nsink: { directory: drops }\n`);
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
        done();
      },
    });
    const handle = await startConnectors(gw.gateway, loadConnectors(tmp.dir), createLogger({ level: 'debug', destination: sink }));
    await gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded('LOG/ONCE', 'H1'))!.delivered;
    await waitFor('a sink line of each connector', () => lines.filter((l) => l.includes('"id"')).length >= 2);
    await handle.stop();
    const named = lines.filter((l) => l.includes('"subscription"'));
    expect(named.length).toBeGreaterThanOrEqual(4); // started ×2, the hook's run, the drop
    for (const line of named) expect(line.split('"subscription":').length - 1, line).toBe(1);
    expect(named.map((l) => (JSON.parse(l) as { subscription: string }).subscription)).toEqual(expect.arrayContaining(['mem.logged', 'mem.logged-drop']));
  });

  it('stops those already started when one cannot start, and rethrows', async () => {
    writeFileSync(join(tmp.dir, 'a.yaml'), `kind: file-drop\nsubscription: mem.a\nkinds: [PriceLoadingCompleted]\nsink: { directory: a }\n`);
    writeFileSync(join(tmp.dir, 'b.yaml'), `kind: file-drop\nsubscription: mem.b\nkinds: [NoSuchKind]\nsink: { directory: b }\n`);
    const err: unknown = await startConnectors(gw.gateway, loadConnectors(tmp.dir), silentLogger()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_UNKNOWN_TYPE');
    // The error names the connector's file.
    expect((err as GatewayError).message).toContain(join(tmp.dir, 'b.yaml'));
    expect((err as GatewayError).details).toMatchObject({ file: join(tmp.dir, 'b.yaml'), connector: 'b', subscription: 'mem.b' });
    // mem.a was unsubscribed: an event published now is not dropped.
    const r = gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded('EEE/FFF', 'H1'))!;
    await r.delivered;
    await new Promise((res) => setTimeout(res, 200));
    expect(readdirSync(join(tmp.dir, 'a'))).toEqual([]);
  });

  it('stop({ withinMs }) ends a hook still running (SIGTERM to its group) in time, and its event is not committed: it comes again', async () => {
    // On SIGTERM the script exits 0: still not "handled", the stop ended it.
    writeScript(tmp.dir, 'hook.sh', 'printf "%s\\n" "$CE_ID" >> "$OUT/runs.log"; echo $$ > "$OUT/hook.pid"; trap \'exit 0\' TERM; sleep 30 & wait');
    const yaml = `kind: shell-hook\nsubscription: mem.stopping\nstartFrom: earliest\nkinds: [PriceLoadingCompleted]\nsink:\n  command: [./hook.sh]\n  timeoutMs: 60000\n  killGraceMs: 2000\n  env: { OUT: ${tmp.dir} }\n`;
    writeFileSync(join(tmp.dir, 'hook.yaml'), yaml);
    const handle = await startConnectors(gw.gateway, loadConnectors(tmp.dir), silentLogger());
    const receipt = gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded('STOP/ME', 'H1'))!;
    await receipt.delivered;
    await waitFor('the hook runs', () => {
      try {
        return readFileSync(join(tmp.dir, 'hook.pid'), 'utf8').endsWith('\n');
      } catch {
        return false;
      }
    });
    const pid = Number(readFileSync(join(tmp.dir, 'hook.pid'), 'utf8').trim());
    const started = Date.now();
    await handle.stop({ withinMs: 1200 });
    expect(Date.now() - started).toBeLessThan(6000); // the bound plus slack for a loaded machine
    expect(alive(pid)).toBe(false);

    // Restarted (same subscription): the event comes again, to a hook that handles it.
    writeScript(tmp.dir, 'hook.sh', 'printf "%s\\n" "$CE_ID" >> "$OUT/runs.log"');
    const again = await startConnectors(gw.gateway, loadConnectors(tmp.dir), silentLogger());
    await waitFor('the event delivered again', () => readFileSync(join(tmp.dir, 'runs.log'), 'utf8').trim().split('\n').length >= 2);
    await again.stop();
    expect(readFileSync(join(tmp.dir, 'runs.log'), 'utf8').trim().split('\n')).toEqual([receipt.id, receipt.id]);
  }, 15_000);

  it('creates a missing drop folder with mode 0755 exactly, whatever the umask', async () => {
    writeFileSync(join(tmp.dir, 'drop.yaml'), `kind: file-drop\nsubscription: mem.mode\nkinds: [PriceLoadingCompleted]\nsink: { directory: drops/deep }\n`);
    const before = process.umask(0o077);
    let handle;
    try {
      handle = await startConnectors(gw.gateway, loadConnectors(tmp.dir), silentLogger());
    } finally {
      process.umask(before);
    }
    await handle.stop();
    expect([statSync(join(tmp.dir, 'drops')).mode & 0o777, statSync(join(tmp.dir, 'drops', 'deep')).mode & 0o777]).toEqual([0o755, 0o755]);
  });
});

describe('startConnectors when the shutdown begins while they start (signal)', () => {
  it('starts no further connector, leaves the one whose join was in flight at once, and names those not started at info, not "started"', async () => {
    for (const name of ['a', 'b', 'c']) writeFileSync(join(tmp.dir, `${name}.yaml`), `kind: file-drop\nsubscription: mem.cut.${name}\nkinds: [PriceLoadingCompleted]\nsink: { directory: drops-${name} }\n`);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const joined: string[] = [];
    const left: string[] = [];
    const host = {
      catalog: gw.gateway.catalog,
      subscribe: async (o: Parameters<typeof gw.gateway.subscribe>[0]) => {
        // b's join is held: the shutdown begins while it is in flight.
        if (o.subscription === 'mem.cut.b') await gate;
        const s = await gw.gateway.subscribe(o);
        joined.push(o.subscription);
        const unsubscribe = s.unsubscribe.bind(s);
        return { ...s, unsubscribe: async () => {
          left.push(o.subscription);
          await unsubscribe();
        } };
      },
    };
    const lines: { level: number; msg: string; connectors?: string[]; connector?: string }[] = [];
    const out = new Writable({ write: (c: Buffer, _e, done) => {
      for (const l of c.toString('utf8').split('\n')) if (l.length > 0) lines.push(JSON.parse(l) as (typeof lines)[number]);
      done();
    } });
    const cut = new AbortController();
    const starting = startConnectors(host, loadConnectors(tmp.dir), createLogger({ level: 'debug', destination: out }), { signal: cut.signal });
    await waitFor('a started and b\'s join in flight', () => joined.includes('mem.cut.a'));
    cut.abort();
    release();
    const handle = await starting;
    try {
      expect(handle.running.map((r) => r.subscription.name)).toEqual(['mem.cut.a']);
      // b joined (its subscribe could not be taken back) and left at once; c never subscribed.
      expect(joined).toEqual(['mem.cut.a', 'mem.cut.b']);
      expect(left).toEqual(['mem.cut.b']);
      expect(lines.filter((l) => l.msg === 'connector started').map((l) => l.connector)).toEqual(['a']);
      expect(lines.filter((l) => l.msg === 'connectors not started: shutting down').map((l) => [l.level, l.connectors])).toEqual([[30, ['b', 'c']]]);
      expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    } finally {
      await handle.stop();
    }
    expect(left).toEqual(['mem.cut.b', 'mem.cut.a']);
  });
});
