/** The sinks' option resolvers, exported for programmatic use (docs/connectors.md "Library use"). */
import { describe, expect, it } from 'vitest';
import { resolveFileDropOptions, resolveShellHookOptions } from '../../../src/index.js';
import type { ShellHookSettings } from '../../../src/index.js';
import { caught } from '../../helpers/errors.js';

describe('resolveShellHookOptions / resolveFileDropOptions', () => {
  it('resolve settings shaped like a connector file\'s sink: section, paths against baseDir, defaults filled', () => {
    const hook = resolveShellHookOptions({ command: ['./on-event.sh', '--quiet'] }, { baseDir: '/srv/hooks', environment: {} });
    expect(hook.command).toEqual(['/srv/hooks/on-event.sh', '--quiet']);
    expect(hook.cwd).toBe('/srv/hooks');
    expect(hook.timeoutMs).toBe(30_000);
    expect(Object.isFrozen(hook)).toBe(true);
    const drop = resolveFileDropOptions({ directory: 'drops' }, { baseDir: '/var/spool' });
    expect(drop).toEqual({ directory: '/var/spool/drops', subdirectoryPerEventName: false, createDirectories: true, fileMode: 0o644, syncDirectory: true });
  });

  it('report every problem at once as CEG_INVALID_OPTIONS with paths', () => {
    const bad = { command: [], timeoutMs: 0, env: { PATH: '/x' } } as unknown as ShellHookSettings;
    const err = caught(() => resolveShellHookOptions(bad, { baseDir: '/srv' }));
    expect(err.code).toBe('CEG_INVALID_OPTIONS');
    expect(err.retriable).toBe(false);
    expect((err.details['problems'] as { path: string }[]).map((p) => p.path)).toEqual(['command', 'timeoutMs', 'env.PATH']);
    const drop = caught(() => resolveFileDropOptions({ directory: '../up' }, { baseDir: '/srv' }));
    expect(drop.code).toBe('CEG_INVALID_OPTIONS');
    expect(drop.message).toContain('directory');
  });
});
