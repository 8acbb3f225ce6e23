/**
 * reloadOnChange with many HTTPS servers of one process on one certificate and key (a test process
 * starts a dozen gateways on one pair): each server's own `watchFile` added a 'change' listener to
 * Node's one StatWatcher per file, and the eleventh printed MaxListenersExceededWarning (the leak
 * partners-watch.test.ts fixed for PARTNERS_FILE). Now the files are watched once per path: every
 * open server still takes a new pair, closed ones stop, and the files are unwatched with the last.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { watchedPaths } from '../../../src/core/watch-file.js';
import { readTlsPair, reloadOnChange } from '../../../src/http/tls.js';
import { createLogger } from '../../../src/observability/index.js';
import { editUntil } from '../../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'ceg-tls-watch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function makePair(name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`], { stdio: 'ignore' });
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

/** A server as a gateway starts one (not listening: the watch does not need it), its log lines noted. */
function server(files: { certFile: string; keyFile: string }): { s: Server; lines: string[] } {
  const lines: string[] = [];
  const out = new PassThrough();
  out.on('data', (c: Buffer) => lines.push(c.toString('utf8')));
  const pair = readTlsPair(files);
  const s = createServer({ cert: pair.cert, key: pair.key });
  reloadOnChange(s, files, pair.stats, createLogger({ level: 'info', destination: out }), 20);
  return { s, lines };
}
const reloads = (w: { lines: string[] }): number => w.lines.join('').split('certificate and key reloaded').length - 1;

describe('many HTTPS servers on one certificate', () => {
  it('share one stat listener per file (no MaxListenersExceededWarning); each reloads until it closes; the files are unwatched with the last', { timeout: 60_000 }, async () => {
    const certFile = join(dir, 'tls.crt');
    const keyFile = join(dir, 'tls.key');
    const [first, second, third] = [makePair('first'), makePair('second'), makePair('third')];
    writeFileSync(certFile, first.cert);
    writeFileSync(keyFile, first.key);
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const all = Array.from({ length: 12 }, () => server({ certFile, keyFile }));
      // The key first, then the certificate: the last change is a matching pair. Written again until
      // seen (editUntil: an edit before a watcher's first stat is no change to it).
      const writePair = (pair: { key: string; cert: string }) => (): void => {
        writeFileSync(keyFile, pair.key);
        writeFileSync(certFile, pair.cert);
      };
      await editUntil('every server to reload', writePair(second), () => all.every((w) => reloads(w) >= 1));
      const [kept, ...closed] = all;
      await Promise.all(closed.map(({ s }) => new Promise((r) => s.close(r))));
      const before = closed.map(reloads);
      const keptBefore = reloads(kept!);
      await editUntil('the open server to reload again', writePair(third), () => reloads(kept!) > keptBefore);
      await new Promise((r) => setTimeout(r, 200)); // ten of the watchers' 20 ms polls: a closed server still listening would reload now
      expect(closed.map(reloads)).toEqual(before);
      await new Promise((r) => kept!.s.close(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
      expect(watchedPaths().filter((p) => p === certFile || p === keyFile)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
