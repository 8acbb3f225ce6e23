import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { loadCatalog } from '../../../src/catalog/index.js';
import { loadConnectors, parseConnectorText } from '../../../src/connectors/index.js';
import type { ConnectorDefinition, ConnectorProblem } from '../../../src/connectors/index.js';
import { tempDir, writeScript } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.remove());

const examplesDir = resolve(import.meta.dirname, '../../../connectors/examples');

function problemsOf(fn: () => unknown): ConnectorProblem[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_INVALID_OPTIONS');
    expect((err as GatewayError).retriable).toBe(false);
    return (err as GatewayError).details.problems as ConnectorProblem[];
  }
  throw new Error('expected a GatewayError');
}

const hookYaml = (over = ''): string => `kind: shell-hook
subscription: ops.hook
kinds: [PriceLoadingCompleted]
sink:
  command: [./hook.sh, --verbose]
${over}`;

describe('loadConnectors', () => {
  it('loads a shell-hook and a file-drop connector with defaults filled and paths resolved against the file', () => {
    writeScript(tmp.dir, 'hook.sh', 'exit 0');
    writeFileSync(join(tmp.dir, 'a-hook.yaml'), hookYaml());
    writeFileSync(join(tmp.dir, 'b-drop.yml'), 'kind: file-drop\nsubscription: ops.drop\nkinds: [78b8fd47-3ff3-4881-9419-7bfe84ce89cb]\nstartFrom: earliest\nordering: none\nretry: { maxAttempts: 2, backoff: { initialMs: 10, maxMs: 20 } }\nsink: { directory: out/drops }\n');
    writeFileSync(join(tmp.dir, 'notes.txt'), 'not a connector');
    const defs = loadConnectors(tmp.dir, { environment: {} });
    expect(defs.map((d) => [d.name, d.kind, d.subscription, d.enabled, d.startFrom, d.ordering])).toEqual([
      ['a-hook', 'shell-hook', 'ops.hook', true, 'latest', 'key'],
      ['b-drop', 'file-drop', 'ops.drop', true, 'earliest', 'none'],
    ]);
    const [hook, drop] = defs as [Extract<ConnectorDefinition, { kind: 'shell-hook' }>, Extract<ConnectorDefinition, { kind: 'file-drop' }>];
    expect(hook.file).toBe(join(tmp.dir, 'a-hook.yaml'));
    expect(hook.sink.command).toEqual([join(tmp.dir, 'hook.sh'), '--verbose']);
    expect(hook.sink.cwd).toBe(tmp.dir);
    expect(hook.sink).toMatchObject({ timeoutMs: 30_000, killGraceMs: 5_000, maxOutputBytes: 4096, env: { path: '/usr/local/bin:/usr/bin:/bin', vars: {} } });
    expect([...hook.sink.exitCodes.codes]).toEqual([[0, 'handled'], [75, 'retry']]);
    expect(hook.retrySettings).toEqual({ maxAttempts: 5, initialMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2 });
    expect(hook.retry.maxAttempts).toBe(5);
    expect(drop.sink).toEqual({ directory: join(tmp.dir, 'out/drops'), subdirectoryPerEventName: false, createDirectories: true, fileMode: 0o644, syncDirectory: true });
    expect(drop.retrySettings).toEqual({ maxAttempts: 2, initialMs: 10, factor: 2, maxMs: 20, jitter: 0.2 });
    expect(drop.retry.delayMs(1)).toBeLessThanOrEqual(10);
  });

  it('reports every problem of every file with its file and path, and starts nothing', () => {
    writeFileSync(join(tmp.dir, 'bad1.yaml'), `kind: shell-hook
subscription: "bad name!"
kinds: []
startFrom: yesterday
retry: { maxAttempts: 0, backoff: { initialMs: 500, maxMs: 100 } }
sink:
  command: ["../escape.sh"]
  timeoutMs: -1
  exitCodes: { 300: handled, 1: maybe }
  passEnv: [DATABASE_URL]
  color: blue
`);
    writeFileSync(join(tmp.dir, 'bad2.yaml'), 'kind: webhook\nsubscription: ops.x\n');
    writeFileSync(join(tmp.dir, 'bad3.yaml'), 'kind: file-drop\nsubscription: ops.y\nkinds: [A]\nsink: { directory: "/var/spool/$HOME" }\n');
    writeFileSync(join(tmp.dir, 'bad4.yaml'), 'kind: [unclosed\n');
    writeFileSync(join(tmp.dir, 'bad5.yaml'), '');
    const problems = problemsOf(() => loadConnectors(tmp.dir));
    const f = (n: string): string => join(tmp.dir, n);
    expect(problems.map((p) => `${p.file.slice(tmp.dir.length + 1)} ${p.path}`).sort()).toEqual(
      [
        'bad1.yaml kinds',
        'bad1.yaml retry.backoff.maxMs',
        'bad1.yaml retry.maxAttempts',
        'bad1.yaml sink',
        'bad1.yaml sink.command[0]',
        'bad1.yaml sink.exitCodes.1',
        'bad1.yaml sink.exitCodes.300',
        'bad1.yaml sink.passEnv[0]',
        'bad1.yaml sink.timeoutMs',
        'bad1.yaml startFrom',
        'bad1.yaml subscription',
        'bad2.yaml kind',
        'bad3.yaml sink.directory',
        'bad4.yaml (root)',
        'bad5.yaml (root)',
      ].sort(),
    );
    const at = (file: string, path: string): string => problems.find((p) => p.file === f(file) && p.path === path)!.problem;
    expect(at('bad1.yaml', 'sink')).toMatch(/color/);
    expect(at('bad1.yaml', 'sink.command[0]')).toMatch(/'\.\.'/);
    expect(at('bad1.yaml', 'sink.passEnv[0]')).toMatch(/looks like a secret/);
    expect(at('bad1.yaml', 'subscription')).toMatch(/\[A-Za-z0-9._-\]/);
    expect(at('bad3.yaml', 'sink.directory')).toMatch(/segments/);
    expect(at('bad4.yaml', '(root)')).toMatch(/^YAML line/);
    expect(at('bad5.yaml', '(root)')).toBe('the file is empty');
  });

  it('checks on the file system that an enabled hook can run, and finds duplicate subscriptions', () => {
    writeFileSync(join(tmp.dir, 'hook.sh'), '#!/bin/sh\n'); // not executable
    writeFileSync(join(tmp.dir, 'a.yaml'), hookYaml('  workingDirectory: missing-dir\n'));
    writeFileSync(join(tmp.dir, 'b.yaml'), hookYaml().replace('./hook.sh', 'no-such-command-on-path'));
    writeFileSync(join(tmp.dir, 'c.yaml'), 'kind: file-drop\nsubscription: ops.drop\nkinds: [A]\nsink: { directory: nowhere, createDirectories: false }\n');
    const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {} }));
    expect(problems.map((p) => `${p.file.slice(tmp.dir.length + 1)} ${p.path}: ${p.problem.replaceAll(tmp.dir, '<tmp>')}`)).toEqual([
      'a.yaml sink.command[0]: <tmp>/hook.sh is not an executable file',
      'a.yaml sink.workingDirectory: <tmp>/missing-dir is not a directory',
      `b.yaml subscription: subscription ops.hook is already used by <tmp>/a.yaml`,
      "b.yaml sink.command[0]: no-such-command-on-path is not an executable on the hook's PATH (/usr/local/bin:/usr/bin:/bin)",
      'c.yaml sink.directory: <tmp>/nowhere is not a directory (and createDirectories is false)',
    ]);
  });

  it('reports a missing script together with the file\'s other problems (every problem at once)', () => {
    writeFileSync(join(tmp.dir, 'a.yaml'), hookYaml().replace('subscription: ops.hook', 'subscription: "bad name!"').replace('./hook.sh', './missing.sh'));
    writeFileSync(join(tmp.dir, 'b.yaml'), 'kind: file-drop\nsubscription: ops.drop\nkinds: []\nsink: { directory: nowhere, createDirectories: false }\n');
    const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {} }));
    expect(problems.map((p) => `${p.file.slice(tmp.dir.length + 1)} ${p.path}`)).toEqual(['a.yaml subscription', 'a.yaml sink.command[0]', 'b.yaml kinds', 'b.yaml sink.directory']);
    expect(problems[1]!.problem).toBe(`${join(tmp.dir, 'missing.sh')} is not an executable file`);
  });

  it('a file with an unknown field still has its unknown kinds and its duplicate subscription reported (every problem at once)', () => {
    writeScript(tmp.dir, 'hook.sh', 'exit 0');
    writeFileSync(join(tmp.dir, 'a.yaml'), hookYaml());
    writeFileSync(join(tmp.dir, 'b.yaml'), hookYaml('bogus: 1\n').replace('[PriceLoadingCompleted]', '[PriceLoadingCompleted, 42, PriceLoadingCompletd]').replace('./hook.sh', './missing.sh'));
    const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {}, catalog: loadCatalog() }));
    expect(problems.map((p) => `${p.file.slice(tmp.dir.length + 1)} ${p.path}`).sort()).toEqual(['b.yaml (root)', 'b.yaml kinds[1]', 'b.yaml kinds[2]', 'b.yaml sink.command[0]', 'b.yaml subscription'].sort());
    expect(problems.find((p) => p.path === 'subscription')?.problem).toBe(`subscription ops.hook is already used by ${join(tmp.dir, 'a.yaml')}`);
    expect(problems.find((p) => p.path === 'kinds[2]')?.problem).toMatch(/^unknown event kind "PriceLoadingCompletd"/);
  });

  it('with the catalog, names the file and the entry of each unknown kind, listing the known ones', () => {
    writeScript(tmp.dir, 'hook.sh', 'exit 0');
    writeFileSync(join(tmp.dir, 'a.yaml'), hookYaml().replace('kinds: [PriceLoadingCompleted]', 'kinds: [PriceLoadingCompleted, PriceLoadingCompletd]'));
    writeFileSync(join(tmp.dir, 'off.yaml'), hookYaml().replace('subscription: ops.hook', 'subscription: ops.off\nenabled: false').replace('[PriceLoadingCompleted]', '[Later]'));
    const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {}, catalog: loadCatalog() }));
    expect(problems).toEqual([
      {
        file: join(tmp.dir, 'a.yaml'),
        path: 'kinds[1]',
        problem: expect.stringMatching(/^unknown event kind "PriceLoadingCompletd"; the catalog has PriceLoadingCompleted, SeriesUpdateCompleted, /),
      },
    ]);
    expect(loadConnectors(tmp.dir, { environment: {} }).map((d) => d.name)).toEqual(['a', 'off']);
  });

  it('skips file-system checks for disabled connectors, and ignores sub-folders', () => {
    writeFileSync(join(tmp.dir, 'off.yaml'), hookYaml().replace('kind: shell-hook', 'kind: shell-hook\nenabled: false'));
    mkdirSync(join(tmp.dir, 'examples'));
    writeFileSync(join(tmp.dir, 'examples', 'broken.yaml'), 'kind: nonsense');
    const defs = loadConnectors(tmp.dir);
    expect(defs.map((d) => [d.name, d.enabled])).toEqual([['off', false]]);
  });

  it('refuses a directory that does not exist', () => {
    const problems = problemsOf(() => loadConnectors(join(tmp.dir, 'nope')));
    expect(problems).toEqual([{ file: join(tmp.dir, 'nope'), path: '(root)', problem: 'not a directory' }]);
  });

  it('loads the shipped examples, all disabled, and the top-level connectors folder starts nothing', () => {
    const defs = loadConnectors(examplesDir);
    expect(defs.map((d) => [d.name, d.kind, d.enabled, d.subscription])).toEqual([
      ['price-loaded-drop', 'file-drop', false, 'ops.price-loaded-drop'],
      ['price-loaded-hook', 'shell-hook', false, 'ops.price-loaded-hook'],
    ]);
    expect(loadConnectors(resolve(examplesDir, '..')).filter((d) => d.enabled)).toEqual([]);
    // Enabled, the example hook passes the file-system checks too (its script is executable).
    const hookFile = join(examplesDir, 'price-loaded-hook.yaml');
    const enabled = parseConnectorText(readFileSync(hookFile, 'utf8').replace('enabled: false', 'enabled: true'), hookFile, { environment: { TZ: 'UTC' } });
    expect(enabled.ok).toBe(true);
    if (enabled.ok && enabled.definition.kind === 'shell-hook') {
      expect(enabled.definition.sink.command).toEqual([join(examplesDir, 'scripts/on-price-loaded.sh')]);
      expect(enabled.definition.sink.env.vars).toEqual({ TZ: 'UTC', HOOK_LOG_DIR: '/tmp/ce-gateway-hooks', LANG: 'C.UTF-8' });
    }
  });
});

describe('loadConnectors: what a folder holds that would not load or would collide (break report, connectors)', () => {
  it('reports files named like connector files that do not load (a space, an upper-case extension, a leading _, a dangling link, a.yaml next to a.yml) instead of skipping them', () => {
    const drop = (sub: string): string => `kind: file-drop\nsubscription: ${sub}\nkinds: [PriceLoadingCompleted]\nsink: { directory: out }\n`;
    writeFileSync(join(tmp.dir, 'ok.yaml'), drop('ops.ok'));
    writeFileSync(join(tmp.dir, 'my hook.yaml'), drop('ops.a'));
    writeFileSync(join(tmp.dir, 'Hook.YAML'), drop('ops.b'));
    writeFileSync(join(tmp.dir, '_hook.yaml'), drop('ops.c'));
    writeFileSync(join(tmp.dir, 'twin.yaml'), drop('ops.d'));
    writeFileSync(join(tmp.dir, 'twin.yml'), drop('ops.e'));
    writeFileSync(join(tmp.dir, 'notes.txt'), 'not a connector');
    symlinkSync('/nonexistent/connector.yaml', join(tmp.dir, 'dangling.yaml'));
    const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {} }));
    const at = (name: string): string[] => problems.filter((p) => p.file === join(tmp.dir, name)).map((p) => p.problem);
    expect(at('my hook.yaml')).toEqual([expect.stringMatching(/^not loaded: a connector file is named/)]);
    expect(at('Hook.YAML')).toEqual([expect.stringMatching(/^not loaded/)]);
    expect(at('_hook.yaml')).toEqual([expect.stringMatching(/^not loaded/)]);
    expect(at('dangling.yaml')).toEqual(['a symbolic link to nothing']);
    expect(at('twin.yml')).toEqual([expect.stringMatching(/connector name twin is also the name of .*twin\.yaml/)]);
    expect(at('ok.yaml')).toEqual([]);
    expect(at('notes.txt')).toEqual([]);
  });

  it('reports a link loop and a FIFO named like connector files with the other files\' problems, and still skips folders', () => {
    // A link loop (ELOOP from stat) threw out of loadConnectors: `connectors check` exited 2 with
    // the bare error, the other files unchecked, and `serve` did not start; a FIFO was skipped
    // without a word (break report hE, 2026-12-07).
    const drop = (sub: string): string => `kind: file-drop\nsubscription: ${sub}\nkinds: [PriceLoadingCompleted]\nsink: { directory: out }\n`;
    writeFileSync(join(tmp.dir, 'ok.yaml'), drop('ops.ok'));
    symlinkSync('loop.yaml', join(tmp.dir, 'loop.yaml'));
    symlinkSync('/nonexistent/connector.yaml', join(tmp.dir, 'dangling.yaml'));
    execFileSync('mkfifo', [join(tmp.dir, 'pipe.yaml')]);
    mkdirSync(join(tmp.dir, 'folder.yaml'));
    symlinkSync(join(tmp.dir, 'folder.yaml'), join(tmp.dir, 'linked-folder.yaml'));
    const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {} }));
    expect(problems).toEqual([
      { file: join(tmp.dir, 'dangling.yaml'), path: '(file)', problem: 'a symbolic link to nothing' },
      { file: join(tmp.dir, 'loop.yaml'), path: '(file)', problem: 'cannot be read: ELOOP' },
      { file: join(tmp.dir, 'pipe.yaml'), path: '(file)', problem: 'not a regular file (a FIFO, socket or device): a connector file is a regular file' },
    ]);
  });

  it('refuses two subscriptions whose topics Kafka would spell alike (. against _), and a name spelled like an HTTP subscription\'s group', () => {
    const drop = (sub: string): string => `kind: file-drop\nsubscription: ${sub}\nkinds: [PriceLoadingCompleted]\nsink: { directory: out }\n`;
    writeFileSync(join(tmp.dir, 'a.yaml'), drop('brk.a.b'));
    writeFileSync(join(tmp.dir, 'b.yaml'), drop('brk.a_b'));
    writeFileSync(join(tmp.dir, 'c.yaml'), drop('ce-gateway_sub.anonymous.orders'));
    const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {} }));
    expect(problems).toEqual([
      { file: join(tmp.dir, 'b.yaml'), path: 'subscription', problem: expect.stringMatching(/brk\.a_b and brk\.a\.b .*differ only in '\.' against '_'/) },
      { file: join(tmp.dir, 'c.yaml'), path: 'subscription', problem: expect.stringMatching(/Kafka spells like ce-gateway\.sub\./) },
    ]);
  });

  it('checks that a drop folder to be created can be: its nearest existing parent must be a writable directory', () => {
    writeFileSync(join(tmp.dir, 'in-the-way'), 'a file, not a folder');
    writeFileSync(join(tmp.dir, 'a.yaml'), 'kind: file-drop\nsubscription: ops.a\nkinds: [PriceLoadingCompleted]\nsink: { directory: in-the-way/drops }\n');
    mkdirSync(join(tmp.dir, 'locked'));
    chmodSync(join(tmp.dir, 'locked'), 0o500);
    writeFileSync(join(tmp.dir, 'b.yaml'), 'kind: file-drop\nsubscription: ops.b\nkinds: [PriceLoadingCompleted]\nsink: { directory: locked/x/drops }\n');
    writeFileSync(join(tmp.dir, 'c.yaml'), 'kind: file-drop\nsubscription: ops.c\nkinds: [PriceLoadingCompleted]\nsink: { directory: fine/x/drops }\n');
    try {
      const problems = problemsOf(() => loadConnectors(tmp.dir, { environment: {} }));
      expect(problems.map((p) => [p.file.slice(tmp.dir.length + 1), p.path])).toEqual(
        // root ignores permission bits: the locked folder is writable for it, only the file in the way counts.
        process.getuid?.() === 0 ? [['a.yaml', 'sink.directory']] : [['a.yaml', 'sink.directory'], ['b.yaml', 'sink.directory']],
      );
      expect(problems[0]!.problem).toMatch(/in-the-way\/drops cannot be created: .*in-the-way is not a directory/);
      if (process.getuid?.() !== 0) expect(problems[1]!.problem).toMatch(/locked\/x\/drops cannot be created: .*locked is not writable by this process \(EACCES\)/);
    } finally {
      chmodSync(join(tmp.dir, 'locked'), 0o700);
    }
  });
});

describe('a hook\'s arguments and environment values are the text written in the file (break report, connectors 8, 11)', () => {
  it('keeps unquoted numbers and booleans as written (YAML would read 1.10 as 1.1, 007 as 7, 0x1F as 31, a 20-digit number rounded)', () => {
    writeScript(tmp.dir, 'args.sh', 'exit 0');
    writeFileSync(
      join(tmp.dir, 'a.yaml'),
      'kind: shell-hook\nsubscription: ops.args\nkinds: [PriceLoadingCompleted]\nsink:\n  command: [./args.sh, 1.10, 007, 0x1F, 1e3, 12345678901234567890, true, "1.10"]\n  env: { V: 1.10, ZIP: 01234, BIG: 12345678901234567890, OCT: 0o17, YES: True }\n  timeoutMs: 1000\n',
    );
    const [hook] = loadConnectors(tmp.dir, { environment: {} }) as [Extract<ConnectorDefinition, { kind: 'shell-hook' }>];
    expect(hook.sink.command.slice(1)).toEqual(['1.10', '007', '0x1F', '1e3', '12345678901234567890', 'true', '1.10']);
    expect(hook.sink.env.vars).toEqual({ V: '1.10', ZIP: '01234', BIG: '12345678901234567890', OCT: '0o17', YES: 'True' });
    // Other settings keep YAML's types: timeoutMs is the number 1000.
    expect(hook.sink.timeoutMs).toBe(1000);
  });

  it('says why a key or a value is refused: the rule of a variable name or an exit code, a null value', () => {
    const r = parseConnectorText('kind: shell-hook\nsubscription: ops.a\nkinds: [PriceLoadingCompleted]\nsink:\n  command: [./x.sh, null]\n  env: { ce_id: a, A-B: b, N: ~ }\n  exitCodes: { "256": retry }\n', join(tmp.dir, 'a.yaml'), { environment: {} });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(Object.fromEntries(r.problems.map((p) => [p.path, p.problem]))).toEqual({
      'sink.command[1]': expect.stringMatching(/^a command argument: a string .*null is not a value/),
      'sink.env.ce_id': 'key "ce_id": names starting with CE_ or CEG_ are reserved for the event and the delivery',
      'sink.env.A-B': expect.stringMatching(/^key "A-B": environment variable names are/),
      'sink.env.N': expect.stringMatching(/^a variable value: a string/),
      'sink.exitCodes.256': 'key "256": exit codes are integers 0–255',
    });
  });
});
