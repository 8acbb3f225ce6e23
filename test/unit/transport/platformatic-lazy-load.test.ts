/**
 * @platformatic/kafka is loaded by the first call of a transport on it, not by importing the app or
 * the transport module, nor by creating a transport (src/transport/platformatic/lazy-transport.ts).
 * Why it matters: the library's load took about 0.5 s of CPU, paid by every unit test file that
 * imports the app and by CLI runs on kafkajs, which never use it. The child
 * (test/fixtures/platformatic-lazy-load.ts) runs under module hooks that note each module asking
 * for the library; no broker is needed (127.0.0.1:1 refuses connections).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const dir = mkdtempSync(join(tmpdir(), 'ceg-lazy-load-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('@platformatic/kafka transport: the library loads at the first call', () => {
  // A child through tsx on a busy 2-core machine: a bound on the child, not an assertion on time.
  it('is not loaded by importing the app and the transport module, creating a transport or closing an unused one; the first call loads it, and errors stay as they were', { timeout: 120_000 }, async () => {
    const log = join(dir, 'library-loads.txt');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', TSX_LOADER, join(ROOT, 'test', 'fixtures', 'platformatic-lazy-load.ts')], {
      cwd: ROOT,
      env: { ...process.env, LIBRARY_LOAD_LOG: log },
      timeout: 110_000,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as {
      steps: Record<'imported' | 'created' | 'closedUnused' | 'firstCall', string[]>;
      healthBefore: unknown; countFailure: string; healthy: boolean; lastFailureRetriable: boolean | null;
      afterClose: string; usedAfterClose: string; healthyAfterClose: boolean;
    };
    expect(result.steps.imported).toEqual([]);
    expect(result.steps.created).toEqual([]);
    expect(result.steps.closedUnused).toEqual([]);
    // The first call loads the transport's module, which loads the library.
    expect(result.steps.firstCall).toContain('transport/platformatic/platformatic-transport.ts');
    expect(result.healthBefore).toBeNull();
    expect(result.countFailure).toBe('CEG_BROKER_UNAVAILABLE retriable=true');
    expect(result.healthy).toBe(false);
    expect(result.lastFailureRetriable).toBe(true);
    expect(result.afterClose).toMatch(/^CEG_CLOSED /);
    expect(result.usedAfterClose).toBe(result.afterClose);
    expect(result.healthyAfterClose).toBe(false);
  });
});
