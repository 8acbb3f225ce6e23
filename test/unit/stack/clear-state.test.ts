/**
 * `npm run stack:reset`'s deletion (scripts/stack/index.ts `clearStackState`), on folders of its
 * own: it deletes the state folder and PostgreSQL's folder, keeps the download cache, and deletes
 * nothing when the state folder holds what the stack does not make (CE_GATEWAY_STACK_DIR can name
 * any folder).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StackConfig } from '../../../scripts/stack/config.js';
import { clearStackState } from '../../../scripts/stack/index.js';

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A stack-shaped tree under a new temporary folder: state (as `up` leaves it), PostgreSQL's folder, the cache. */
function fakeStack(): { cfg: StackConfig; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'ceg-reset-'));
  made.push(root);
  const stateDir = join(root, 'state');
  const pgData = join(root, 'pg', 'abc', 'pgdata');
  const cacheDir = join(root, 'cache');
  for (const d of [join(stateDir, 'kafka', 'data', 'trading.prices-0'), join(stateDir, 'registry'), join(stateDir, 'tls'), pgData, join(cacheDir, 'kafka-4.1.1', 'libs')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(stateDir, 'env'), 'KAFKA_BROKERS=127.0.0.1:19092\n');
  writeFileSync(join(pgData, 'PG_VERSION'), '16\n');
  writeFileSync(join(dirname(pgData), 'password'), 'x\n');
  writeFileSync(join(cacheDir, 'kafka-4.1.1', 'libs', 'kafka.jar'), 'jar');
  return { root, cfg: { stateDir, cacheDir, postgres: { dataDir: pgData } } as unknown as StackConfig };
}

describe('stack:reset deletes the stack state, and only it', () => {
  it('deletes the state folder and PostgreSQL’s folder; the download cache stays', () => {
    const { cfg } = fakeStack();
    const deleted = clearStackState(cfg);
    expect(deleted).toEqual([cfg.stateDir, dirname(cfg.postgres.dataDir)]);
    expect(existsSync(cfg.stateDir)).toBe(false);
    expect(existsSync(dirname(cfg.postgres.dataDir))).toBe(false);
    expect(existsSync(join(cfg.cacheDir, 'kafka-4.1.1', 'libs', 'kafka.jar'))).toBe(true);
    // A second reset of an already clean stack is fine.
    expect(() => clearStackState(cfg)).not.toThrow();
  });

  it('refuses, deleting nothing, when the state folder holds anything the stack did not make', () => {
    const { cfg } = fakeStack();
    writeFileSync(join(cfg.stateDir, 'notes.txt'), 'mine');
    expect(() => clearStackState(cfg)).toThrow(/notes\.txt, which the stack did not make/);
    expect(existsSync(join(cfg.stateDir, 'kafka', 'data', 'trading.prices-0'))).toBe(true);
    expect(existsSync(cfg.postgres.dataDir)).toBe(true);
  });
});
