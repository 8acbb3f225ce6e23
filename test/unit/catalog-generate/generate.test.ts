import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterEach, describe, expect, it } from 'vitest';
import { loadCatalog, parseCatalog } from '../../../src/catalog/index.js';
import type { Catalog } from '../../../src/catalog/index.js';
import {
  checkGeneratedFiles,
  constantName,
  defaultGeneratedDir,
  generateCatalogFiles,
  GENERATED_HEADER,
  isUpToDate,
  writeGeneratedFiles,
} from '../../../src/artifacts/generate/index.js';
import * as generated from '../../../src/catalog/generated/index.js';

const catalog = loadCatalog();

/** Type-checks one module text in memory (strict, as the project compiles); returns the diagnostics. */
function typeCheck(source: string): string[] {
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, lib: ['lib.es2022.d.ts'], noUncheckedIndexedAccess: true, types: [] };
  const host = ts.createCompilerHost(options);
  const file = '/virtual/events.ts';
  const original = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => (name === file ? ts.createSourceFile(name, source, version) : original(name, version, ...rest));
  host.fileExists = ((exists) => (name: string) => name === file || exists(name))(host.fileExists.bind(host));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const KIND = {
  eventId: '0f0e4b0e-56b7-4f57-9a3c-1f8e9d6c5b4a',
  name: 'ThingHappened',
  description: "A thing happened (it's tricky).",
  topic: 'test.things',
  schema: 'a/thing.avsc',
  key: ['id'],
  publish: false,
  owner: 'svc',
};

const THING = {
  type: 'record',
  name: 'ThingHappened',
  namespace: 'test.ns',
  doc: 'Tricky shapes: a general union, a recursive record, a nested record named like a kind, maps, fixed.',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'choice', type: ['null', 'string', 'long', { type: 'record', name: 'Other', fields: [{ name: 'x', type: 'int' }] }], default: null },
    { name: 'tree', type: { type: 'record', name: 'Node', fields: [{ name: 'children', type: { type: 'array', items: 'Node' } }, { name: 'label', type: ['string', 'null'], default: 'root' }] } },
    { name: 'tags', type: { type: 'map', values: { type: 'fixed', name: 'Hash', size: 4 } } },
    { name: 'when', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 'bad', type: { type: 'bytes', logicalType: 'decimal', precision: 0 }, doc: 'invalid decimal: falls back to bytes */ end' },
  ],
};

// A second kind whose nested record is named like the first kind's payload type and like a kind.
const OTHER_KIND = { ...KIND, eventId: '1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d', name: 'Other', schema: 'a/other.avsc', description: 'Other thing.' };
const OTHER = {
  type: 'record',
  name: 'OtherRecord',
  namespace: 'test.ns',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'same', type: { type: 'record', name: 'Other', namespace: 'test.ns', fields: [{ name: 'x', type: 'int' }] } },
    { name: 'clash', type: { type: 'record', name: 'ThingHappenedPayload', namespace: 'x.y', fields: [{ name: 'y', type: 'boolean' }] } },
  ],
};

function fixtureCatalog(): Catalog {
  const files: Record<string, string> = { 'a/thing.avsc': JSON.stringify(THING), 'a/other.avsc': JSON.stringify(OTHER) };
  return parseCatalog(JSON.stringify({ version: 1, kinds: [KIND, OTHER_KIND] }), (p) => files[p], '/fixture');
}

const temps: string[] = [];
afterEach(() => {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('catalog generate: the committed module', () => {
  it('src/catalog/generated equals what the catalog generates now (staleness check)', () => {
    const files = generateCatalogFiles(catalog);
    expect(files.map((f) => f.path)).toEqual(['events.ts', 'kinds.ts', 'index.ts']);
    for (const f of files) expect(readFileSync(join(defaultGeneratedDir(), f.path), 'utf8')).toBe(f.content);
    expect(isUpToDate(checkGeneratedFiles(defaultGeneratedDir(), files))).toBe(true);
  });

  it('is deterministic and starts with the do-not-edit header', () => {
    const a = generateCatalogFiles(catalog);
    const b = generateCatalogFiles(loadCatalog());
    expect(b).toEqual(a);
    for (const f of a) expect(f.content.split('\n')[0]).toBe(`${GENERATED_HEADER}.`);
  });

  it('has one constant per kind with the catalog values', () => {
    expect(Object.keys(generated.EVENT_KINDS)).toEqual(catalog.kinds.map((k) => k.name));
    for (const k of catalog.kinds) {
      const c = generated.EVENT_KINDS[k.name as generated.KindName];
      expect(c).toEqual({
        eventId: k.eventId,
        name: k.name,
        description: k.description,
        topic: k.topic.name,
        subject: k.subject,
        recordName: k.recordName,
        schemaFile: k.schemaFile,
        keyFields: [...k.keyFields],
        eventClass: k.eventClass,
        maxDataBytes: k.maxDataBytes,
        publish: k.publish,
        owner: k.owner,
        compatibility: k.compatibility,
      });
      expect(generated.KIND_NAME_BY_EVENT_ID[k.eventId as generated.KindEventId]).toBe(k.name);
    }
  });

  it('names constants in SCREAMING_SNAKE_CASE', () => {
    expect(constantName('PriceLoadingCompleted')).toBe('PRICE_LOADING_COMPLETED');
    expect(constantName('WritingGuideContentChanged')).toBe('WRITING_GUIDE_CONTENT_CHANGED');
    expect(constantName('HTTPRequestSeen2')).toBe('HTTP_REQUEST_SEEN2');
    expect(generated.WRITING_GUIDE_CONTENT_CHANGED.eventId).toBe('5bcdbc9b-bb90-4b6c-a3a4-64c7a601fd57');
  });
});

describe('catalog generate: shapes', () => {
  const text = generateCatalogFiles(fixtureCatalog())[0]!.content;

  it('emits a module that type-checks under strict settings', () => {
    expect(typeCheck(text)).toEqual([]);
  });

  it('maps a general union to one-member wrappers named by full branch name, null when nullable', () => {
    expect(text).toContain("readonly choice?: { readonly string: string } | { readonly long: AvroLong } | { readonly 'test.ns.Other': TestNsOther } | null;");
    expect(text).toContain("readonly choice: { readonly string: string } | { readonly long: AvroLong } | { readonly 'test.ns.Other': TestNsOtherReceived } | null;");
  });

  it('declares a recursive record once and refers to itself', () => {
    expect(text).toContain('export type Node = {\n');
    expect(text).toContain('readonly children: readonly Node[];');
    expect(text).toContain('readonly children: readonly NodeReceived[];');
    expect(text).toContain('readonly label?: string | null;');
  });

  it('types maps, fixed, time and an invalid logical type as the codec maps them', () => {
    expect(text).toContain('export type Hash = Base64;');
    expect(text).toContain('readonly tags: { readonly [key: string]: Hash };');
    expect(text).toContain('readonly when: TimeOfDay;');
    expect(text).toContain('readonly bad: Base64;');
    expect(text).toContain('falls back to bytes *\\/ end');
  });

  it('reuses an identical named type across kinds and renames a clashing one deterministically', () => {
    // test.ns.Other is defined in both schema files: one declaration, named apart from the kind Other.
    expect(text.match(/export type TestNsOther = /g)).toHaveLength(1);
    expect(text).toContain('readonly same: TestNsOther;');
    expect(text).toContain('export type XYThingHappenedPayload = {');
    expect(text).toContain('readonly clash: XYThingHappenedPayload;');
    expect(text).toContain("description: 'A thing happened (it\\'s tricky).',");
    expect(text).toContain('publish: false,');
  });
});

describe('catalog generate: writing and checking', () => {
  function temp(): string {
    const d = mkdtempSync(join(tmpdir(), 'ceg-generate-'));
    temps.push(d);
    return d;
  }

  it('writes only changed files and the check then passes', () => {
    const dir = temp();
    const files = generateCatalogFiles(catalog);
    expect(checkGeneratedFiles(dir, files)).toEqual({ changed: [], missing: ['events.ts', 'kinds.ts', 'index.ts'], extra: [] });
    expect(writeGeneratedFiles(dir, files)).toEqual(['events.ts', 'kinds.ts', 'index.ts']);
    expect(writeGeneratedFiles(dir, files)).toEqual([]);
    expect(isUpToDate(checkGeneratedFiles(dir, files))).toBe(true);
  });

  it("refuses to replace a file it did not write (no header), writing nothing; its own files are replaced", () => {
    const dir = temp();
    const files = generateCatalogFiles(catalog);
    writeFileSync(join(dir, 'index.ts'), "export { main } from './main.js';\n");
    expect(() => writeGeneratedFiles(dir, files)).toThrow(
      expect.objectContaining({
        code: 'CEG_INVALID_OPTIONS',
        details: { field: 'out', file: join(dir, 'index.ts') },
        message: expect.stringContaining(`${join(dir, 'index.ts')} exists and was not written by ce-gateway catalog generate`) as unknown,
      }),
    );
    expect(() => writeGeneratedFiles(dir, files)).toThrow(/pick an empty folder for --out, or delete the file/);
    expect(readFileSync(join(dir, 'index.ts'), 'utf8')).toBe("export { main } from './main.js';\n");
    expect(existsSync(join(dir, 'events.ts'))).toBe(false);

    rmSync(join(dir, 'index.ts'));
    writeGeneratedFiles(dir, files);
    writeFileSync(join(dir, 'events.ts'), `${GENERATED_HEADER}.\nexport const stale = 1;\n`);
    expect(writeGeneratedFiles(dir, files)).toEqual(['events.ts']);
    expect(readFileSync(join(dir, 'events.ts'), 'utf8')).toBe(files[0]!.content);
  });

  it('reports an edited file, a missing file and a generated file no longer produced', () => {
    const dir = temp();
    const files = generateCatalogFiles(catalog);
    writeGeneratedFiles(dir, files);
    writeFileSync(join(dir, 'events.ts'), `${files[0]!.content}// hand edit\n`);
    rmSync(join(dir, 'index.ts'));
    writeFileSync(join(dir, 'old.ts'), `${GENERATED_HEADER}.\nexport {};\n`);
    writeFileSync(join(dir, 'notes.ts'), 'export {};\n');
    const check = checkGeneratedFiles(dir, files);
    expect(check).toEqual({ changed: ['events.ts'], missing: ['index.ts'], extra: ['old.ts'] });
    expect(isUpToDate(check)).toBe(false);
  });
});
