/**
 * `ce-gateway schemas check` and `schemas register` as a process: --git on temporary git
 * repositories holding a copy of the project's catalog (a breaking commit → exit 1 naming the
 * field; an optional field with a default → exit 0; a shallow clone or no repository → exit 2), and
 * --registry against the dev stack's registry with a fixture catalog on a unique topic.
 */
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { git, schemasCli } from '../helpers/schemas-cli.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SIGNAL = 'trading/strategy-signal.avsc';
const temps: string[] = [];

const cli = schemasCli;

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** A new repository with the project's catalog committed once; returns its root. */
function catalogRepo(): string {
  const repo = tempDir('schemas-git-');
  cpSync(join(ROOT, 'schemas'), join(repo, 'schemas'), { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'catalog');
  return repo;
}

type Avsc = { name: string; fields: { name: string; type: unknown; default?: unknown }[] } & Record<string, unknown>;

function editSchema(repo: string, file: string, edit: (s: Avsc) => void, message: string): void {
  const path = join(repo, 'schemas', file);
  const s = JSON.parse(readFileSync(path, 'utf8')) as Avsc;
  edit(s);
  writeFileSync(path, `${JSON.stringify(s, null, 2)}\n`);
  git(repo, 'commit', '-q', '-am', message);
}

afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

describe('schemas check --git', () => {
  it('an unchanged catalog passes: exit 0, every kind compatible', async () => {
    const repo = catalogRepo();
    const r = await cli(repo, ['check', '--git', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ source: 'git', ok: true });
    expect(report.kinds).toHaveLength(6);
    expect(report.kinds.map((k: { status: string; level: string }) => [k.status, k.level])).toEqual(Array(6).fill(['compatible', 'FULL_TRANSITIVE']));
  });

  it('a commit removing a field without a default → exit 1 naming the field', async () => {
    const repo = catalogRepo();
    editSchema(repo, SIGNAL, (s) => void (s.fields = s.fields.filter((f) => f.name !== 'strategy')), 'drop strategy');
    const r = await cli(repo, ['check', '--git']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/INCOMPATIBLE {2}StrategySignal \(trading\/strategy-signal\.avsc, subject trading\.strategy-signal-value, FULL_TRANSITIVE\)/);
    expect(r.stdout).toMatch(/\[FORWARD vs commit [0-9a-f]{7}\] \/fields\/strategy: field "strategy" removed \(or renamed\) — readers of commit [0-9a-f]{7} require it/);
    expect(r.stdout).toMatch(/FAILED: 5 compatible, 0 new, 1 incompatible, 0 invalid/);
  });

  it('narrowing a type and renaming the record without an alias → exit 1, each explained', async () => {
    const repo = catalogRepo();
    editSchema(repo, 'trading/indicators-computed.avsc', (s) => {
      const f = s.fields.find((x) => x.name === 'durationMicros');
      if (f === undefined || f.type !== 'long') throw new Error('fixture: indicators-computed.avsc has no long durationMicros');
      f.type = 'int';
    }, 'narrow');
    editSchema(repo, SIGNAL, (s) => void (s.name = 'TradeSignal'), 'rename');
    const r = await cli(repo, ['check', '--git', '--json']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    const byName = new Map(report.kinds.map((k: { name: string }) => [k.name, k]));
    const narrowed = byName.get('IndicatorsComputed') as { status: string; findings: { message: string }[] };
    expect(narrowed.status).toBe('incompatible');
    expect(narrowed.findings.map((f) => f.message)).toEqual(expect.arrayContaining([expect.stringContaining('/fields/durationMicros: type changed from long to int — new readers (int) cannot read old data (commit ')]));
    const renamed = byName.get('StrategySignal') as { status: string; findings: { message: string }[] };
    expect(renamed.status).toBe('incompatible');
    expect(renamed.findings.map((f) => f.message)).toEqual(expect.arrayContaining([expect.stringContaining('/: record renamed from caishen.trading.StrategySignal to caishen.trading.TradeSignal — new readers expect TradeSignal')]));
  });

  it('adding an optional field with a default → exit 0 (also uncommitted, against the history)', async () => {
    const repo = catalogRepo();
    editSchema(repo, SIGNAL, (s) => void s.fields.push({ name: 'note', type: ['null', 'string'], default: null }), 'add note');
    const path = join(repo, 'schemas', 'writing-guide', 'content-changed.avsc');
    const s = JSON.parse(readFileSync(path, 'utf8')) as Avsc;
    s.fields.push({ name: 'reviewer', type: 'string', default: '' });
    writeFileSync(path, JSON.stringify(s));
    const r = await cli(repo, ['check', '--git']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // The committed change is the newest version in history: compared with the one before it, not with itself.
    expect(r.stdout).toMatch(new RegExp(`compatible {4}StrategySignal .*: unchanged, compatible with commit ${git(repo, 'rev-parse', '--short=7', 'HEAD~1').trim()}\n`));
    expect(r.stdout).toMatch(/compatible {4}WritingGuideContentChanged .*: changed, compatible with commit [0-9a-f]{7}/);
    expect(r.stdout).toMatch(/^OK: 6 compatible, 0 new, 0 incompatible, 0 invalid$/m);
  });

  it('--base compares with the history up to that revision only', async () => {
    const repo = catalogRepo();
    editSchema(repo, SIGNAL, (s) => void (s.fields = s.fields.filter((f) => f.name !== 'strategy')), 'drop strategy');
    // Put the field back in the working tree: against HEAD the file now re-adds a field without a default.
    const path = join(repo, 'schemas', SIGNAL);
    writeFileSync(path, readFileSync(join(ROOT, 'schemas', SIGNAL), 'utf8'));
    expect((await cli(repo, ['check', '--git', '--base', 'HEAD~1'])).code).toBe(0);
    const r = await cli(repo, ['check', '--git']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('/fields/strategy: field "strategy" added without a default');
  });

  it('--baseline: a breaking change accepted at a tag stops failing; a later break still fails, naming only itself', async () => {
    const repo = catalogRepo();
    editSchema(repo, SIGNAL, (s) => void (s.fields = s.fields.filter((f) => f.name !== 'strategy')), 'drop strategy (accepted: topic migrated)');
    expect((await cli(repo, ['check', '--git'])).code).toBe(1);
    git(repo, 'tag', 'schemas-accepted');
    const accepted = await cli(repo, ['check', '--git', '--baseline', 'schemas-accepted']);
    expect(accepted.stderr).toBe('');
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toMatch(/compatible {4}StrategySignal .*: unchanged, compatible with commit [0-9a-f]{7}/);

    editSchema(repo, SIGNAL, (s) => void (s.fields = s.fields.filter((f) => f.name !== 'side')), 'drop side');
    const later = await cli(repo, ['check', '--git', '--baseline', 'schemas-accepted']);
    expect(later.code).toBe(1);
    expect(later.stdout).toContain('/fields/side: field "side" removed');
    expect(later.stdout).not.toContain('/fields/strategy');
  });

  it('--baseline that is not an ancestor of --base, or with a registry instead of --git → exit 2', async () => {
    const repo = catalogRepo();
    git(repo, 'checkout', '-q', '-b', 'side');
    editSchema(repo, SIGNAL, (s) => void s.fields.push({ name: 'note', type: ['null', 'string'], default: null }), 'on a side branch');
    git(repo, 'checkout', '-q', 'main');
    const r = await cli(repo, ['check', '--git', '--baseline', 'side']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('baseline "side" is not an ancestor of "HEAD"');
    // Without --git but with a registry, the check would use the registry: --baseline is a usage error.
    expect((await cli(repo, ['check', '--baseline', 'HEAD', '--registry', 'http://127.0.0.1:1'])).code).toBe(2);
  });

  it('an invalid schema (union default not matching the first branch) → exit 1 with the field path', async () => {
    const repo = catalogRepo();
    editSchema(repo, SIGNAL, (s) => void s.fields.push({ name: 'score', type: ['null', 'double'], default: 0.5 }), 'bad default');
    const r = await cli(repo, ['check', '--git']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('trading/strategy-signal.avsc');
    expect(r.stdout).toMatch(/\/fields\/score: .*union default must match the FIRST branch \(null\)/);
  });

  it('a shallow clone → exit 2, not a pass', async () => {
    const repo = catalogRepo();
    editSchema(repo, SIGNAL, (s) => void s.fields.push({ name: 'note', type: ['null', 'string'], default: null }), 'second');
    const shallow = join(tempDir('schemas-shallow-'), 'clone');
    git(ROOT, 'clone', '-q', '--depth', '1', `file://${repo}`, shallow);
    const r = await cli(shallow, ['check', '--git']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/shallow, so earlier schema versions may be missing/);
  });

  it('no git repository → exit 2; --base without --git and --git with --registry → exit 2', async () => {
    const dir = tempDir('schemas-nogit-');
    cpSync(join(ROOT, 'schemas'), join(dir, 'schemas'), { recursive: true });
    const r = await cli(dir, ['check', '--git', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, error: { code: 'CEG_INVALID_OPTIONS', message: expect.stringContaining('no git history') } });
    expect((await cli(dir, ['check', '--base', 'HEAD'])).code).toBe(2);
    expect((await cli(dir, ['check', '--git', '--registry', 'http://127.0.0.1:1'])).code).toBe(2);
  });
});

describe('schemas register / check --registry on the dev stack', () => {
  const url = stackEnv().schemaRegistryUrl;

  function fixtureCatalog(): { dir: string; topic: string; write: (fields: object[]) => void } {
    const dir = tempDir('schemas-reg-');
    const topic = uniqueName('schemas-cli');
    writeFileSync(
      join(dir, 'catalog.yaml'),
      [
        'version: 1',
        'kinds:',
        `  - eventId: ${randomUUID()}`,
        '    name: CliProbe',
        '    description: schemas CLI test kind',
        `    topic: ${topic}`,
        '    schema: probe.avsc',
        '    key: [id]',
        '    publish: true',
        '    owner: test',
        '',
      ].join('\n'),
    );
    const write = (fields: object[]): void =>
      writeFileSync(join(dir, 'probe.avsc'), JSON.stringify({ type: 'record', name: 'CliProbe', namespace: 'test.cli', fields: [{ name: 'id', type: 'string' }, ...fields] }));
    return { dir, topic, write };
  }

  it('registers, reports what changed, and refuses a breaking change before the registry sees it', async () => {
    const { dir, topic, write } = fixtureCatalog();
    write([{ name: 'amount', type: 'long' }]);
    const first = await cli(dir, ['register', '--registry', url, '--catalog', dir]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`registered {4}CliProbe \\(subject ${topic}-value, FULL_TRANSITIVE\\): version 1, id \\d+`));

    const again = await cli(dir, ['register', '--registry', url, '--catalog', dir, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).kinds[0]).toMatchObject({ status: 'unchanged', version: 1 });

    write([{ name: 'amount', type: 'long' }, { name: 'note', type: ['null', 'string'], default: null }]);
    expect((await cli(dir, ['check', '--registry', url, '--catalog', dir])).code).toBe(0);
    const second = await cli(dir, ['register', '--registry', url, '--catalog', dir]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('version 2');
    expect(second.stdout).toContain('added /fields/note (union [null, string], default null)');

    write([{ name: 'note', type: ['null', 'string'], default: null }]);
    const check = await cli(dir, ['check', '--registry', url, '--catalog', dir]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('[FORWARD vs version 1] /fields/amount: field "amount" removed (or renamed) — readers of version 1 require it');
    const refused = await cli(dir, ['register', '--registry', url, '--catalog', dir, '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).kinds[0]).toMatchObject({ status: 'incompatible', reasons: expect.arrayContaining([expect.stringContaining('FORWARD against version 1: /fields/amount')]) });
  });

  it('a schema reverted to an older registered version: check and register exit 1, not-latest (the registry does not move latest)', async () => {
    const { dir, topic, write } = fixtureCatalog();
    write([]);
    expect((await cli(dir, ['register', '--registry', url, '--catalog', dir])).code).toBe(0);
    write([{ name: 'note', type: ['null', 'string'], default: null }]);
    expect((await cli(dir, ['register', '--registry', url, '--catalog', dir])).code).toBe(0);
    write([]);
    const check = await cli(dir, ['check', '--registry', url, '--catalog', dir]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(`NOT-LATEST    CliProbe (probe.avsc, subject ${topic}-value, FULL_TRANSITIVE): identical to version 1, but the subject's latest is version 2`);
    const r = await cli(dir, ['register', '--registry', url, '--catalog', dir, '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).kinds[0]).toMatchObject({ status: 'not-latest', version: 1, latestVersion: 2 });
  });

  it('one invalid schema file does not stop the other kinds from registering (exit 1, the valid kind registered)', async () => {
    const dir = tempDir('schemas-reg-');
    const topic = uniqueName('schemas-cli');
    const kind = (name: string, file: string): string[] => [`  - eventId: ${randomUUID()}`, `    name: ${name}`, '    description: schemas CLI test kind', `    topic: ${topic}.${name.toLowerCase()}`, `    schema: ${file}`, '    key: [id]', '    publish: true', '    owner: test'];
    writeFileSync(join(dir, 'catalog.yaml'), ['version: 1', 'kinds:', ...kind('Good', 'good.avsc'), ...kind('Bad', 'bad.avsc'), ''].join('\n'));
    writeFileSync(join(dir, 'good.avsc'), JSON.stringify({ type: 'record', name: 'Good', namespace: 'test.cli', fields: [{ name: 'id', type: 'string' }] }));
    // A union default must match the first branch: invalid.
    writeFileSync(join(dir, 'bad.avsc'), JSON.stringify({ type: 'record', name: 'Bad', namespace: 'test.cli', fields: [{ name: 'id', type: 'string' }, { name: 'a', type: ['string', 'null'], default: null }] }));
    const r = await cli(dir, ['register', '--registry', url, '--catalog', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^schemas register: registry /);
    expect(r.stdout).toMatch(new RegExp(`registered {4}Good \\(subject ${topic}\\.good-value, FULL_TRANSITIVE\\): version 1, id \\d+`));
    expect(r.stdout).toContain(`INVALID       Bad (subject ${topic}.bad-value, FULL_TRANSITIVE): not registered`);
    expect(r.stdout).toContain('FAILED: 1 registered, 0 unchanged, 1 not registered');
  });

  it('a subject that changed (namespace on a shared topic; a kind added to a topic): checked against the earlier subject, not passed as new', async () => {
    const dir = tempDir('schemas-reg-');
    const topic = uniqueName('schemas-cli');
    const kind = (name: string): string[] => [`  - eventId: ${randomUUID()}`, `    name: ${name}`, '    description: schemas CLI test kind', `    topic: ${topic}`, `    schema: ${name.toLowerCase()}.avsc`, '    key: [id]', '    publish: true', '    owner: test'];
    const write = (name: string, namespace: string, fields: object[] = []): void =>
      writeFileSync(join(dir, `${name.toLowerCase()}.avsc`), JSON.stringify({ type: 'record', name, namespace, fields: [{ name: 'id', type: 'string' }, ...fields] }));
    // Alone on its topic: <topic>-value.
    writeFileSync(join(dir, 'catalog.yaml'), ['version: 1', 'kinds:', ...kind('Alpha'), ''].join('\n'));
    write('Alpha', 'test.one', [{ name: 'amount', type: 'long' }]);
    expect((await cli(dir, ['register', '--registry', url, '--catalog', dir])).code).toBe(0);
    // A second kind on the topic: Alpha moves to <topic>-test.one.Alpha, and drops a field.
    writeFileSync(join(dir, 'catalog.yaml'), ['version: 1', 'kinds:', ...kind('Alpha'), ...kind('Beta'), ''].join('\n'));
    write('Alpha', 'test.one');
    write('Beta', 'test.one');
    const moved = await cli(dir, ['check', '--registry', url, '--catalog', dir]);
    expect(moved.code).toBe(1);
    expect(moved.stdout).toContain(`[FORWARD vs ${topic}-value version 1] /fields/amount: field "amount" removed`);
    expect(moved.stdout).toContain(`note: subject ${topic}-test.one.Alpha has no versions yet; compared with the versions of subject ${topic}-value`);
    const refused = await cli(dir, ['register', '--registry', url, '--catalog', dir, '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).kinds.map((k: { name: string; status: string }) => [k.name, k.status])).toEqual([['Alpha', 'incompatible'], ['Beta', 'registered']]);
    // Register Alpha compatibly under its new subject, then change its namespace: found by listing the subjects.
    write('Alpha', 'test.one', [{ name: 'amount', type: 'long' }]);
    expect((await cli(dir, ['register', '--registry', url, '--catalog', dir])).code).toBe(0);
    write('Alpha', 'test.two');
    const ns = await cli(dir, ['check', '--registry', url, '--catalog', dir]);
    expect(ns.code).toBe(1);
    // Both earlier subjects hold the same schema (one id): compared once, the whole history named in the note.
    expect(ns.stdout).toContain(`[FORWARD vs ${topic}-value version 1] /fields/amount`);
    expect(ns.stdout).toContain(`note: subject ${topic}-test.two.Alpha has no versions yet; compared with the versions of subject ${topic}-value and ${topic}-test.one.Alpha`);
  });

  it('a registry that does not answer → exit 2', async () => {
    const { dir, write } = fixtureCatalog();
    write([]);
    const r = await cli(dir, ['check', '--registry', 'http://127.0.0.1:9', '--catalog', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/schema registry/);
  });
});
