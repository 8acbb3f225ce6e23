/**
 * `ce-gateway schemas check --git` as a process on temporary one-kind repositories: which earlier
 * versions the check compares with (the latest version that differs, also when the change is
 * already committed up to the base), the kind followed through catalog.yaml when its schema file
 * moves, unparseable earlier versions, unusual file names, and very deep schemas.
 * No stack needed (unit project; each case spawns the CLI, hence the longer timeout).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { git, schemasCli } from '../../helpers/schemas-cli.js';

const EVENT_ID = '5b0c2f4e-7d1a-4e3b-9c8d-2a1b3c4d5e6f';
const temps: string[] = [];
vi.setConfig({ testTimeout: 60_000 });

const cli = schemasCli;

afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

/** A record `Thing` (namespace test.git) with a string key `k` and `fields`. */
const thing = (fields: object[], extra: Record<string, unknown> = {}): string =>
  `${JSON.stringify({ type: 'record', name: 'Thing', namespace: 'test.git', fields: [{ name: 'k', type: 'string' }, ...fields], ...extra }, null, 2)}\n`;

const V1 = thing([{ name: 'amount', type: 'long' }]);
/** Removes `amount` (no default): breaks FORWARD and FULL. */
const NO_AMOUNT = thing([]);
/** Adds `extra` without a default: breaks BACKWARD and FULL. */
const ADDED = thing([{ name: 'amount', type: 'long' }, { name: 'extra', type: 'string' }]);

interface Repo {
  readonly root: string;
  /** Writes a file under schemas/. */
  write(file: string, text: string): void;
  /** Writes catalog.yaml with the kind's schema at `schema` and `level`. */
  catalog(schema: string, level: string): void;
  commit(message: string): void;
}

/** A new repository with a one-kind catalog in schemas/ (nothing committed yet). */
function repo(): Repo {
  const root = mkdtempSync(join(tmpdir(), 'schemas-check-git-'));
  temps.push(root);
  git(root, 'init', '-q', '-b', 'main');
  const write = (file: string, text: string): void => {
    const path = join(root, 'schemas', file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  return {
    root,
    write,
    catalog: (schema, level) =>
      write(
        'catalog.yaml',
        [
          'version: 1',
          'defaults:',
          `  compatibility: ${level}`,
          'kinds:',
          `  - eventId: ${EVENT_ID}`,
          '    name: Thing',
          '    description: test kind',
          '    topic: test.git.thing',
          `    schema: ${schema}`,
          '    key: [k]',
          '    publish: true',
          '    owner: test',
          '',
        ].join('\n'),
      ),
    commit: (message) => {
      git(root, 'add', '--', 'schemas');
      git(root, 'commit', '-q', '-m', message);
    },
  };
}

describe('schemas check --git: the versions compared with', () => {
  it.each([
    ['BACKWARD', ADDED, '/fields/extra: field "extra" added without a default'],
    ['FORWARD', NO_AMOUNT, '/fields/amount: field "amount" removed (or renamed)'],
    ['FULL', NO_AMOUNT, '/fields/amount: field "amount" removed (or renamed)'],
    ['FULL', ADDED, '/fields/extra: field "extra" added without a default'],
  ])('%s: a committed break fails against the previous version (base HEAD already holds it)', async (level, broken, message) => {
    const r = repo();
    r.catalog('t/thing.avsc', level);
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    r.write('t/thing.avsc', broken);
    r.commit('break');
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`INCOMPATIBLE {2}Thing \\(t/thing\\.avsc, subject test\\.git\\.thing-value, ${level}\\): 1 problem\\(s\\) against commit [0-9a-f]{7}`));
    expect(run.stdout).toContain(message);
  });

  it('a whitespace-only recommit of the break is the same version: the latest that differs is still v1', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FORWARD');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    r.write('t/thing.avsc', NO_AMOUNT);
    r.commit('break');
    r.write('t/thing.avsc', JSON.stringify(JSON.parse(NO_AMOUNT)));
    r.commit('reformat');
    const v1 = git(r.root, 'rev-parse', '--short=7', 'HEAD~2').trim();
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas', '--json']);
    expect(run.code).toBe(1);
    const kind = JSON.parse(run.stdout).kinds[0];
    expect(kind).toMatchObject({ status: 'incompatible', changed: false, compared: [{ label: `commit ${v1}` }] });
  });

  it('transitive levels: identical versions are compared once; an unchanged single version is compatible', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FULL_TRANSITIVE');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    const unchanged = await cli(r.root, ['check', '--git', '--catalog', 'schemas', '--json']);
    expect(unchanged.code).toBe(0);
    expect(JSON.parse(unchanged.stdout).kinds[0]).toMatchObject({ status: 'compatible', changed: false, compared: [{ version: 1 }] });
    r.write('t/thing.avsc', JSON.stringify(JSON.parse(V1)));
    r.commit('reformat');
    r.write('t/thing.avsc', NO_AMOUNT);
    r.commit('break');
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas', '--json']);
    expect(run.code).toBe(1);
    const kind = JSON.parse(run.stdout).kinds[0];
    expect(kind.compared).toHaveLength(1);
    expect(kind.findings.map((f: { direction: string; path: string }) => [f.direction, f.path])).toEqual([['FORWARD', '/fields/amount']]);
  });

  it('--base origin/main-like: the working tree against the target branch, not against its own commits', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FULL');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    git(r.root, 'branch', 'target');
    r.write('t/thing.avsc', NO_AMOUNT);
    r.commit('break');
    r.write('t/thing.avsc', thing([], { doc: 'doc-only change after the break' }));
    r.commit('doc');
    // Against HEAD the latest version that differs is the break itself; against the target branch, v1.
    expect((await cli(r.root, ['check', '--git', '--catalog', 'schemas'])).code).toBe(0);
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas', '--base', 'target']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('/fields/amount: field "amount" removed (or renamed)');
  });
});

describe('schemas check --git: an earlier version that is not JSON', () => {
  it('plain level: the latest version is not JSON → compared with the newest one that parses, with a note', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FULL');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    r.write('t/thing.avsc', '{ "type": "record", "name": "Thing", <<<<<<< merge conflict\n');
    r.commit('broken file');
    const [broken, v1] = git(r.root, 'log', '--format=%h', '--abbrev=7').trim().split('\n');
    r.write('t/thing.avsc', NO_AMOUNT);
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`INCOMPATIBLE  Thing (t/thing.avsc, subject test.git.thing-value, FULL): 1 problem(s) against commit ${v1}`);
    expect(run.stdout).toContain(`note: commit ${broken} is not JSON and was not compared; compared with commit ${v1} instead, the newest earlier version that parses`);
  });
});

describe('schemas check --git: the kind followed through catalog.yaml', () => {
  it('a schema file moved (git mv) and broken, catalog.yaml updated, not committed → compared with the versions at the old path', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FULL_TRANSITIVE');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    // The tester's steps, not committed yet (a check before the commit): the new path has no history of its own.
    git(r.root, 'mv', 'schemas/t/thing.avsc', 'schemas/t/thing2.avsc');
    r.write('t/thing2.avsc', NO_AMOUNT);
    r.catalog('t/thing2.avsc', 'FULL_TRANSITIVE');
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('INCOMPATIBLE  Thing (t/thing2.avsc, subject test.git.thing-value, FULL_TRANSITIVE)');
    expect(run.stdout).toContain('/fields/amount: field "amount" removed (or renamed)');
  });

  it('moved to another directory with a new name in the same commit as the break, and a plain level', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FORWARD');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    git(r.root, 'rm', '-q', 'schemas/t/thing.avsc');
    // Rewritten on one line: too different for git's rename detection (git log --follow loses it).
    r.write('other/renamed.avsc', JSON.stringify(JSON.parse(NO_AMOUNT)));
    r.catalog('other/renamed.avsc', 'FORWARD');
    r.commit('move and break');
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas', '--json']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).kinds[0]).toMatchObject({ status: 'incompatible', schemaFile: 'other/renamed.avsc', findings: [{ direction: 'FORWARD', path: '/fields/amount' }] });
  });

  it('a path that another kind used earlier is not taken as this kind\'s history', async () => {
    const r = repo();
    r.write(
      'catalog.yaml',
      ['version: 1', 'kinds:', '  - eventId: 0a0b0c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d', '    name: Other', '    description: other kind', '    topic: test.git.other', '    schema: t/thing.avsc', '    key: [k]', '    publish: true', '    owner: test', ''].join('\n'),
    );
    r.write('t/thing.avsc', V1);
    r.commit('another kind at t/thing.avsc');
    r.catalog('t/thing.avsc', 'FULL_TRANSITIVE');
    r.write('t/thing.avsc', NO_AMOUNT);
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('new           Thing (t/thing.avsc');
  });

  it('a non-ASCII schema file name is read (git quotes it in --name-only output)', async () => {
    const r = repo();
    r.catalog('t/thïng ünï.avsc', 'FULL');
    r.write('t/thïng ünï.avsc', V1);
    r.commit('v1');
    r.write('t/thïng ünï.avsc', NO_AMOUNT);
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('/fields/amount: field "amount" removed (or renamed)');
  });
});

describe('schemas check without --git and without a registry (git history is the default)', () => {
  it('--base and --baseline are accepted; with --registry they are a usage error (exit 2)', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FULL');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    git(r.root, 'branch', 'main2');
    r.write('t/thing.avsc', NO_AMOUNT);
    r.commit('break');
    const run = await cli(r.root, ['check', '--catalog', 'schemas', '--base', 'main2']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('against the git history of');
    expect(run.stdout).toContain('up to main2');
    expect((await cli(r.root, ['check', '--catalog', 'schemas', '--base', 'HEAD', '--baseline', 'HEAD'])).code).toBe(0);
    const withRegistry = await cli(r.root, ['check', '--catalog', 'schemas', '--base', 'main2', '--registry', 'http://127.0.0.1:1']);
    expect(withRegistry.code).toBe(2);
    expect(withRegistry.stderr).toContain('--base needs git history: pass --git');
  });
});

describe('schemas check: very deep schemas', () => {
  /** Thing with a field `d` holding `n` records nested in one another. */
  const deep = (n: number): string => {
    let t = '"string"';
    for (let i = 0; i < n; i++) t = `{"type":"record","name":"R${i}","fields":[{"name":"f","type":${t}}]}`;
    return `{"type":"record","name":"Thing","namespace":"test.git","fields":[{"name":"k","type":"string"},{"name":"d","type":${t}}]}`;
  };

  it('records nested 3000 deep: exit 1, the file named as invalid (not a stack overflow, exit 2)', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FULL');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    r.write('t/thing.avsc', deep(3000));
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('INVALID       t/thing.avsc: the catalog cannot load it');
    expect(run.stdout).toMatch(/ {4}\/: JSON nested \d+ levels deep, more than the 1000 this check allows/);
  });

  it('an earlier version nested too deep is not compared (a note); the one before it is', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FORWARD');
    r.write('t/thing.avsc', V1);
    r.commit('v1');
    r.write('t/thing.avsc', deep(3000));
    r.commit('too deep');
    r.write('t/thing.avsc', NO_AMOUNT);
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('/fields/amount: field "amount" removed');
    expect(run.stdout).toMatch(/note: commit [0-9a-f]{7} was not compared: JSON nested \d+ levels deep, .*; compared with commit [0-9a-f]{7} instead/);
  });

  it('332 nested records (999 JSON levels, within the limit) are still checked', async () => {
    const r = repo();
    r.catalog('t/thing.avsc', 'FULL_TRANSITIVE');
    r.write('t/thing.avsc', deep(332));
    r.commit('deep but allowed');
    const run = await cli(r.root, ['check', '--git', '--catalog', 'schemas']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});
