import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { defaultCatalogDir, loadCatalog, parseCatalog, publicCatalog } from '../../../src/catalog/index.js';
import type { CatalogProblem } from '../../../src/catalog/index.js';

const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'Thing',
  namespace: 'test.ns',
  fields: [
    { name: 'instrument', type: 'string' },
    { name: 'timeframe', type: 'string' },
    { name: 'count', type: 'int' },
    { name: 'opt', type: ['null', 'string'], default: null },
    { name: 'withDefault', type: 'string', default: 'x' },
  ],
});
const OTHER = JSON.stringify({ type: 'record', name: 'Other', namespace: 'test.ns', fields: [{ name: 'instrument', type: 'string' }, { name: 'timeframe', type: 'string' }] });

function files(extra: Record<string, string> = {}): (p: string) => string | undefined {
  const all: Record<string, string> = { 'a/thing.avsc': SCHEMA, 'a/other.avsc': OTHER, ...extra };
  return (p) => all[p];
}

interface KindYaml {
  [k: string]: unknown;
}

const kindA: KindYaml = {
  eventId: '78b8fd47-3ff3-4881-9419-7bfe84ce89cb',
  name: 'ThingHappened',
  description: 'A thing happened.',
  topic: 'test.thing-happened',
  schema: 'a/thing.avsc',
  key: ['instrument', 'timeframe'],
  class: 'notification',
  maxDataBytes: 1024,
  publish: true,
  owner: 'svc',
};

function yamlOf(kinds: KindYaml[], top: Record<string, unknown> = {}): string {
  // JSON is YAML 1.2.
  return JSON.stringify({ version: 1, kinds, ...top });
}

function problemsOf(fn: () => unknown): CatalogProblem[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const e = err as GatewayError;
    expect(e.code).toBe('CEG_CATALOG_INVALID');
    expect(e.retriable).toBe(false);
    return e.details['problems'] as CatalogProblem[];
  }
  throw new Error('expected CEG_CATALOG_INVALID');
}

describe('parseCatalog: a valid catalog', () => {
  it('builds frozen kinds with defaults, topic spec and topic-name subject', () => {
    const c = parseCatalog(yamlOf([{ ...kindA, class: undefined, maxDataBytes: undefined }]), files(), '/cat');
    expect(c.kinds).toHaveLength(1);
    const k = c.byEventId(kindA.eventId as string);
    expect(k).toBe(c.byName('ThingHappened'));
    expect(k).toMatchObject({
      name: 'ThingHappened',
      subject: 'test.thing-happened-value',
      subjectStrategy: 'topic-name',
      recordName: 'test.ns.Thing',
      keyFields: ['instrument', 'timeframe'],
      eventClass: 'notification',
      maxDataBytes: 1024,
      publish: true,
      owner: 'svc',
      compatibility: 'FULL_TRANSITIVE',
      topic: { name: 'test.thing-happened', partitions: 6, retentionMs: 604800000, cleanupPolicy: 'delete' },
    });
    expect(k?.schema).toBe(SCHEMA);
    expect(Object.isFrozen(k)).toBe(true);
    expect(Object.isFrozen(c.kinds)).toBe(true);
    expect(c.topics.map((t) => t.name)).toEqual(['test.thing-happened']);
    expect(c.byEventId('00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });

  it('reads internal (issue 11), default false; the public view leaves internal kinds and their topics out', () => {
    expect(parseCatalog(yamlOf([kindA]), files(), '/cat').kinds[0]?.internal).toBe(false);
    const c = parseCatalog(yamlOf([{ ...kindA, internal: true }]), files(), '/cat');
    expect(c.kinds[0]?.internal).toBe(true);
    const v = publicCatalog(c);
    expect(v.kinds).toEqual([]);
    expect(v.topics).toEqual([]);
    expect(v.byEventId(kindA.eventId as string)).toBeUndefined();
    expect(publicCatalog(parseCatalog(yamlOf([kindA]), files(), '/cat')).kinds).toHaveLength(1);
  });

  it('uses the topics section and defaults, and topic-record-name subjects on a shared topic', () => {
    const yaml = yamlOf(
      [
        { ...kindA, topic: 'shared.t' },
        { ...kindA, eventId: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208', name: 'OtherHappened', topic: 'shared.t', schema: 'a/other.avsc', compatibility: 'BACKWARD' },
      ],
      {
        defaults: { compatibility: 'FULL' },
        topics: { 'shared.t': { partitions: 3, retentionMs: -1, cleanupPolicy: 'compact,delete', maxMessageBytes: 2_000_000 } },
      },
    );
    const c = parseCatalog(yaml, files(), '/cat');
    expect(c.kinds.map((k) => [k.subject, k.subjectStrategy, k.compatibility])).toEqual([
      ['shared.t-test.ns.Thing', 'topic-record-name', 'FULL'],
      ['shared.t-test.ns.Other', 'topic-record-name', 'BACKWARD'],
    ]);
    expect(c.topics).toEqual([{ name: 'shared.t', partitions: 3, retentionMs: -1, cleanupPolicy: 'compact,delete', maxMessageBytes: 2_000_000 }]);
    expect(c.kinds[0]?.topic).toBe(c.kinds[1]?.topic);
  });
});

describe('parseCatalog: every problem is named with its path', () => {
  it('reports YAML shape problems (zod) with paths', () => {
    const problems = problemsOf(() => parseCatalog(yamlOf([{ ...kindA, publish: 'yes', extra: 1 }], { version: 2 }), files(), '/cat'));
    const paths = problems.map((p) => p.path);
    expect(paths).toContain('version');
    expect(paths).toContain('kinds[0].publish');
    expect(paths).toContain('kinds[0]');
  });

  it('refuses a field named __proto__ anywhere in a schema (a JavaScript object cannot hold it as data: no event of the kind could be published), naming the field', () => {
    // JSON text: a "__proto__" member written in a JS object literal would set the prototype, not a member.
    const proto = '{"type":"record","name":"Thing","namespace":"test.ns","fields":[{"name":"instrument","type":"string"},{"name":"timeframe","type":"string"},{"name":"__proto__","type":"string"},{"name":"inner","type":["null",{"type":"record","name":"In","fields":[{"name":"constructor","type":"string"},{"name":"__proto__","type":"int"}]}],"default":null}]}';
    const problems = problemsOf(() => parseCatalog(yamlOf([kindA]), files({ 'a/thing.avsc': proto }), '/cat'));
    expect(problems).toEqual([
      { path: 'a/thing.avsc#/fields/2', problem: expect.stringMatching(/^field name "__proto__" cannot be used/) },
      { path: 'a/thing.avsc#/fields/3/type/1/fields/1', problem: expect.stringMatching(/^field name "__proto__" cannot be used/) },
    ]);
  });

  it('reports unparseable YAML', () => {
    const problems = problemsOf(() => parseCatalog('kinds: [unclosed', files(), '/cat'));
    expect(problems[0]?.path).toBe('catalog.yaml');
    expect(problems[0]?.problem).toMatch(/not YAML/);
  });

  it('says a catalog.yaml nested too deeply for the parser is, instead of the engine\'s stack overflow', () => {
    const problems = problemsOf(() => parseCatalog(`kinds: []\nx: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`, files(), '/cat'));
    expect(problems).toEqual([{ path: 'catalog.yaml', problem: expect.stringMatching(/^not YAML: nested too deeply/) as unknown }]);
  });

  it('reports invalid and duplicate eventIds and names, all at once', () => {
    const problems = problemsOf(() =>
      parseCatalog(
        yamlOf([
          { ...kindA, eventId: 'not-a-uuid', name: 'lowercase' },
          { ...kindA, eventId: '78B8FD47-3FF3-4881-9419-7BFE84CE89CB', topic: 'test.b' },
          { ...kindA, topic: 'test.c', name: 'ThingHappened' },
          { ...kindA, topic: 'test.d', name: 'Zed' },
        ]),
        files(),
        '/cat',
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        { path: 'kinds[0].eventId', problem: '"not-a-uuid" is not a lowercase RFC 9562 UUID' },
        { path: 'kinds[0].name', problem: '"lowercase" must be PascalCase letters and digits' },
        { path: 'kinds[1].eventId', problem: '"78B8FD47-3FF3-4881-9419-7BFE84CE89CB" is not a lowercase RFC 9562 UUID' },
        { path: 'kinds[3].eventId', problem: 'duplicate eventId, also kinds[2]' },
        { path: 'kinds[2].name', problem: 'duplicate name, also kinds[1]' },
      ]),
    );
  });

  it('rejects illegal Kafka topic names', () => {
    const bad = ['has space', '__internal', 'x'.repeat(250), '..', 'a/b'];
    for (const topic of bad) {
      const problems = problemsOf(() => parseCatalog(yamlOf([{ ...kindA, topic }]), files(), '/cat'));
      expect(problems.some((p) => p.path === 'kinds[0].topic')).toBe(true);
    }
    const ok = parseCatalog(yamlOf([{ ...kindA, topic: 'A.b_c-9' }]), files(), '/cat');
    expect(ok.kinds[0]?.topic.name).toBe('A.b_c-9');
  });

  it('rejects topics that collide on "." vs "_", unused declared topics and bad topic names in the topics section', () => {
    const problems = problemsOf(() =>
      parseCatalog(
        yamlOf([kindA, { ...kindA, eventId: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208', name: 'B', topic: 'test_thing-happened' }], {
          topics: { unused: { partitions: 1, retentionMs: 1, cleanupPolicy: 'delete' }, __bad: { partitions: 1, retentionMs: 1, cleanupPolicy: 'delete' } },
        }),
        files(),
        '/cat',
      ),
    );
    expect(problems.map((p) => p.path)).toEqual(expect.arrayContaining(['topics', 'topics.unused', 'topics.__bad']));
    expect(problems.find((p) => p.path === 'topics')?.problem).toMatch(/collide/);
  });

  it('checks key fields: present, string, required', () => {
    const problems = problemsOf(() =>
      parseCatalog(
        yamlOf([
          { ...kindA, key: ['nope'] },
          { ...kindA, eventId: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208', name: 'B', topic: 't.b', key: ['count'] },
          { ...kindA, eventId: 'f2e400e1-d640-4b6f-9121-35eaf50d8094', name: 'C', topic: 't.c', key: ['opt'] },
          { ...kindA, eventId: '13faf290-81b9-48d9-b49f-c534545eae14', name: 'D', topic: 't.d', key: ['withDefault', 'withDefault'] },
        ]),
        files(),
        '/cat',
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        { path: 'a/thing.avsc#/fields', problem: 'partition-key field "nope" is not a field of the record' },
        { path: 'a/thing.avsc#/fields/count', problem: 'partition-key field "count" must have type "string" (not a union)' },
        { path: 'a/thing.avsc#/fields/opt', problem: 'partition-key field "opt" must have type "string" (not a union)' },
        { path: 'a/thing.avsc#/fields/withDefault', problem: 'partition-key field "withDefault" must be required (no default)' },
        { path: 'kinds[3].key', problem: 'key field "withDefault" listed twice' },
      ]),
    );
  });

  it('checks schema files: path, existence, JSON, Avro validity, record at top', () => {
    const extra = {
      'bad/json.avsc': '{ nope',
      'bad/avro.avsc': JSON.stringify({ type: 'record', name: 'X', fields: [{ name: 'a', type: 'nosuchtype' }] }),
      'bad/enum.avsc': JSON.stringify({ type: 'enum', name: 'E', symbols: ['A'] }),
    };
    const k = (i: number, schema: string): KindYaml => ({ ...kindA, eventId: `78b8fd47-3ff3-4881-9419-7bfe84ce89c${i}`, name: `K${i}`, topic: `t.k${i}`, schema });
    const problems = problemsOf(() =>
      parseCatalog(
        yamlOf([k(0, '../escape.avsc'), k(1, 'a/missing.avsc'), k(2, 'bad/json.avsc'), k(3, 'bad/avro.avsc'), k(4, 'bad/enum.avsc'), k(5, 'a/thing.json')]),
        files(extra),
        '/cat',
      ),
    );
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p.problem]));
    expect(byPath['kinds[0].schema']).toMatch(/inside the catalog directory/);
    expect(byPath['kinds[1].schema']).toBe('schema file "a/missing.avsc" not found');
    expect(byPath['bad/json.avsc']).toMatch(/^not JSON/);
    expect(byPath['bad/avro.avsc']).toMatch(/^not a valid Avro schema/);
    expect(byPath['bad/enum.avsc']).toBe('the top-level schema must be an Avro record');
    expect(byPath['kinds[5].schema']).toBe('schema file must end in .avsc');
  });

  it('enforces M6 size bounds: documents state one, notifications stay small, below the topic limit', () => {
    const problems = problemsOf(() =>
      parseCatalog(
        yamlOf(
          [
            { ...kindA, class: 'document', maxDataBytes: undefined },
            { ...kindA, eventId: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208', name: 'B', topic: 't.b', maxDataBytes: 100_000 },
            { ...kindA, eventId: 'f2e400e1-d640-4b6f-9121-35eaf50d8094', name: 'C', topic: 't.c', class: 'document', maxDataBytes: 5000 },
          ],
          { topics: { 't.c': { partitions: 1, retentionMs: 1, cleanupPolicy: 'delete', maxMessageBytes: 4096 } } },
        ),
        files(),
        '/cat',
      ),
    );
    expect(problems.map((p) => p.path)).toEqual(['kinds[0].maxDataBytes', 'kinds[1].maxDataBytes', 'kinds[2].maxDataBytes']);
  });

  it('rejects a record reused by two kinds on one shared topic (their subjects would clash)', () => {
    const problems = problemsOf(() =>
      parseCatalog(yamlOf([kindA, { ...kindA, eventId: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208', name: 'B' }]), files(), '/cat'),
    );
    expect(problems).toEqual([{ path: 'kinds[1].schema', problem: expect.stringMatching(/record test\.ns\.Thing is also used by kinds\[0\]/) as string }]);
  });

  it('lists every problem in the message', () => {
    try {
      parseCatalog(yamlOf([{ ...kindA, eventId: 'x', owner: 'Bad Owner' }]), files(), '/cat');
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toContain('kinds[0].eventId');
      expect((err as Error).message).toContain('kinds[0].owner');
      expect((err as Error).message).toContain('2 problem(s)');
    }
  });
});

describe('loadCatalog', () => {
  it('finds the package schemas/ two levels above the module', () => {
    expect(defaultCatalogDir()).toMatch(/\/schemas$/);
  });

  it('loads the shipped model: the trading chain and the writing guide', () => {
    const c = loadCatalog();
    expect(c.kinds.map((k) => k.name)).toEqual([
      'PriceLoadingCompleted',
      'SeriesUpdateCompleted',
      'IndicatorsComputed',
      'ChartDataReady',
      'StrategySignal',
      'WritingGuideContentChanged',
    ]);
    const price = c.byEventId('78b8fd47-3ff3-4881-9419-7bfe84ce89cb');
    expect(price?.name).toBe('PriceLoadingCompleted');
    expect(price?.subject).toBe('trading.price-loading-completed-value');
    expect(price?.keyFields).toEqual(['instrument', 'timeframe']);
    const chart = c.byName('ChartDataReady');
    expect([chart?.eventClass, chart?.maxDataBytes]).toEqual(['document', 262144]);
    expect(c.byName('WritingGuideContentChanged')?.keyFields).toEqual(['documentId']);
    expect(new Set(c.topics.map((t) => t.name)).size).toBe(6);
    for (const k of c.kinds) expect(k.compatibility).toBe('FULL_TRANSITIVE');
  });

  it('reports a directory without catalog.yaml', () => {
    const problems = problemsOf(() => loadCatalog('/nonexistent-dir-ceg'));
    expect(problems).toEqual([{ path: 'catalog.yaml', problem: 'file not found' }]);
  });
});
