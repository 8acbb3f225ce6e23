/**
 * warnWhenPartnersFileChanges with many gateways of one process on one PARTNERS_FILE (a test
 * process starts a dozen): each call added a 'change' listener to Node's one StatWatcher of the
 * file, and the eleventh printed MaxListenersExceededWarning. Now one poll per file serves them
 * all (core/watch-file.ts): every gateway still warns of a change, one closed gateway stops
 * warning, the others not.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { warnWhenPartnersFileChanges } from '../../../src/http/auth/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { readWatchedFile } from '../../../src/core/watch-file.js';
import { waitFor } from '../../helpers/wait.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * A watcher as a gateway starts it once it loaded the file (`loaded`: the stats of that read): its
 * own logger (lines noted) and its own closing signal.
 */
function watcher(file: string, loaded: Stats): { lines: string[]; close: () => void } {
  const lines: string[] = [];
  const out = new PassThrough();
  out.on('data', (c: Buffer) => lines.push(c.toString('utf8')));
  const closing = new AbortController();
  warnWhenPartnersFileChanges(file, loaded, createLogger({ level: 'info', destination: out }), closing.signal, 20);
  return { lines, close: () => closing.abort() };
}

const warned = (w: { lines: string[] }): number => w.lines.join('').split('PARTNERS_FILE changed on disk').length - 1;

describe('many gateways watching one PARTNERS_FILE', () => {
  it('share one stat listener (no MaxListenersExceededWarning); each warns of a change until it closes', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ceg-partners-watch-'));
    dirs.push(dir);
    const file = join(dir, 'partners.yaml');
    writeFileSync(file, 'partners: []\n');
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      // The first edit lands after the gateways read the file and before they watch it: each is
      // told against what it read, so the edit is warned of (Node's watchFile took it as its first
      // stat and never told it: CI, 2026-12-07). One write per edit; each changes the size, a
      // change to a stat poll even within one tick of the file system's clock.
      const loaded = readWatchedFile(file).stats;
      writeFileSync(file, 'partners: [] # an edit\n');
      const all = Array.from({ length: 12 }, () => watcher(file, loaded));
      await waitFor('every gateway to warn', () => all.every((w) => warned(w) >= 1));
      const [kept, ...closed] = all;
      const before = closed.map(warned);
      for (const w of closed) w.close();
      const keptBefore = warned(kept!);
      writeFileSync(file, 'partners: [] # another edit\n');
      await waitFor('the open gateway to warn again', () => warned(kept!) > keptBefore);
      await new Promise((r) => setTimeout(r, 200)); // ten of the watchers' 20 ms polls: a closed one that still listened would warn now
      expect(closed.map(warned)).toEqual(before);
      kept!.close();
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
