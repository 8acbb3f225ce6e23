/**
 * reloadOnChange with many HTTPS servers of one process on one certificate and key (a test process
 * starts a dozen gateways on one pair): each server's own `watchFile` added a 'change' listener to
 * Node's one StatWatcher per file, and the eleventh printed MaxListenersExceededWarning (the leak
 * partners-watch.test.ts fixed for PARTNERS_FILE). Now each file has one poll per path: every
 * open server still takes a new pair, closed ones stop, and the files are unwatched with the last.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { watchedPaths } from '../../../src/core/watch-file.js';
import { readTlsPair, reloadOnChange } from '../../../src/http/tls.js';
import type { LoadedTlsPair } from '../../../src/http/tls.js';
import { createLogger } from '../../../src/observability/index.js';
import { waitFor } from '../../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'ceg-tls-watch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function makePair(name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`], { stdio: 'ignore' });
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

/**
 * A server as a gateway starts one on the pair it read (not listening: the watch does not need it),
 * its log lines noted.
 */
function server(files: { certFile: string; keyFile: string }, pair: LoadedTlsPair): { s: Server; lines: string[] } {
  const lines: string[] = [];
  const out = new PassThrough();
  out.on('data', (c: Buffer) => lines.push(c.toString('utf8')));
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
      // The key first, then the certificate: the last change is a matching pair. Each file replaced
      // (written aside, renamed over: a new inode, as a rotation tool does), so the change is one
      // to a stat poll even when the new file has the old size within one tick of the file
      // system's clock.
      const replace = (file: string, text: string): void => {
        writeFileSync(`${file}.new`, text);
        renameSync(`${file}.new`, file);
      };
      const writePair = (pair: { key: string; cert: string }): void => {
        replace(keyFile, pair.key);
        replace(certFile, pair.cert);
      };
      // The first rotation lands after the servers read the pair and before they watch it: each
      // is told against what it read, so the new pair is installed (Node's watchFile took it as
      // its first stat and never told it). One write per file.
      const read = Array.from({ length: 12 }, () => readTlsPair({ certFile, keyFile }));
      writePair(second);
      const all = read.map((pair) => server({ certFile, keyFile }, pair));
      await waitFor('every server to reload', () => all.every((w) => reloads(w) >= 1));
      const [kept, ...closed] = all;
      await Promise.all(closed.map(({ s }) => new Promise((r) => s.close(r))));
      const before = closed.map(reloads);
      const keptBefore = reloads(kept!);
      writePair(third);
      await waitFor('the open server to reload again', () => reloads(kept!) > keptBefore);
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
