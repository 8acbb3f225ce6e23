/**
 * A package user with a catalog of their own: `catalog generate` output for a consumer project
 * registers *their* kinds with the package's typed API (declaration merging on `EventKinds`), and
 * the package's own kinds do not leak into their program. Compiled with the TypeScript compiler
 * against the real public surface (`ce-gateway` mapped to src/index.ts), as the user's tsc would.
 * The packed-tarball version of the same runs in scripts/check-package.sh.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { consumerCompilerOptions, diagnosticsUnder, sharedCompilerHost } from '../../helpers/consumer-ts.js';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCatalog } from '../../../src/catalog/index.js';
import { generateCatalogFiles, indexModule, kindsModule, writeGeneratedFiles } from '../../../src/artifacts/generate/index.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const ORDER_PLACED = '4c3f5a2e-1b7d-4e8f-9a6b-2d1c0e9f8a7b';

const catalog = parseCatalog(
  JSON.stringify({
    version: 1,
    kinds: [{ eventId: ORDER_PLACED, name: 'OrderPlaced', description: 'An order was placed.', topic: 'shop.order-placed', schema: 'order-placed.avsc', key: ['orderId'], publish: true, owner: 'shop' }],
  }),
  () =>
    JSON.stringify({
      type: 'record',
      name: 'OrderPlaced',
      namespace: 'shop',
      fields: [
        { name: 'orderId', type: 'string' },
        { name: 'amountCents', type: 'long' },
        { name: 'note', type: ['null', 'string'], default: null },
      ],
    }),
  '/fixture',
);

const work = mkdtempSync(join(tmpdir(), 'ceg-consumer-types-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Diagnostics of `usage` compiled with the generated folder, `ce-gateway` resolving to this package's source. */
function compile(name: string, usage: string): string[] {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeGeneratedFiles(join(dir, 'generated'), generateCatalogFiles(catalog, 'consumer'));
  writeFileSync(join(dir, 'usage.ts'), usage);
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const options = consumerCompilerOptions({
    noEmit: true,
    verbatimModuleSyntax: true,
    baseUrl: dir,
    paths: { 'ce-gateway': [join(ROOT, 'src', 'index.ts')] },
  });
  // The generated index is the only entry besides usage.ts: it must bring kinds.ts in itself.
  const program = ts.createProgram([join(dir, 'usage.ts')], options, sharedCompilerHost(options, work));
  return diagnosticsUnder(program, dir).map((d) => `${d.file === undefined ? '' : `${d.file.fileName.slice(dir.length + 1)}: `}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

/**
 * The generated folder built into a package of its own (`tsc --declaration`), then a program that
 * uses it only through the emitted `.d.ts` files (as another service importing a shared "events"
 * package does). Returns the emitted index.d.ts and the diagnostics of `usage` (the events
 * package's public name is `@shop/events`; `ce-gateway` resolves to this package's source). Every
 * `usages` entry is one file of the consuming program (`app/<name>.ts`).
 */
function compileAgainstDeclarations(name: string, usages: Readonly<Record<string, string>>): { indexDts: string; diagnostics: string[] } {
  const dir = join(work, name);
  const src = join(dir, 'events', 'src');
  const dist = join(dir, 'events', 'dist');
  const app = join(dir, 'app');
  writeGeneratedFiles(src, generateCatalogFiles(catalog, 'consumer'));
  writeFileSync(join(dir, 'events', 'package.json'), '{ "type": "module" }\n');
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'package.json'), '{ "type": "module" }\n');
  for (const [file, text] of Object.entries(usages)) writeFileSync(join(app, `${file}.ts`), text);
  const common = consumerCompilerOptions();
  const buildOptions: ts.CompilerOptions = {
    ...common,
    declaration: true,
    emitDeclarationOnly: true,
    rootDir: src,
    outDir: dist,
    baseUrl: dir,
    paths: { 'ce-gateway': [join(ROOT, 'src', 'index.ts')] },
  };
  const build = ts.createProgram([join(src, 'index.ts')], buildOptions, sharedCompilerHost(buildOptions, work));
  const emitted = new Map<string, string>();
  // Only the events package's own files are emitted: ce-gateway's source is in the program but
  // not built here (declaration emit of all of it cost seconds, only to be dropped).
  for (const file of build.getSourceFiles()) {
    if (!file.fileName.startsWith(src)) continue;
    build.emit(file, (out, text) => {
      if (out.startsWith(dist)) emitted.set(out.slice(dist.length + 1), text);
    });
  }
  expect([...emitted.keys()].sort()).toEqual(['events.d.ts', 'index.d.ts', 'kinds.d.ts']);
  mkdirSync(dist, { recursive: true });
  for (const [file, text] of emitted) writeFileSync(join(dist, file), text);
  // The generated sources are removed: the consumer sees the declarations only.
  rmSync(src, { recursive: true, force: true });
  const appOptions: ts.CompilerOptions = {
    ...common,
    noEmit: true,
    verbatimModuleSyntax: true,
    baseUrl: app,
    paths: { 'ce-gateway': [join(ROOT, 'src', 'index.ts')], '@shop/events': [join(dist, 'index.d.ts')] },
  };
  const program = ts.createProgram(Object.keys(usages).map((file) => join(app, `${file}.ts`)), appOptions, sharedCompilerHost(appOptions, work));
  const diagnostics = diagnosticsUnder(program, dir).map((d) => `${d.file === undefined ? '' : `${d.file.fileName.slice(dir.length + 1)}: `}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
  return { indexDts: emitted.get('index.d.ts') ?? '', diagnostics };
}

const HEADER = `import type { Bus, OutboxWriter, EventOf } from 'ce-gateway';
import type pg from 'pg';
import { ORDER_PLACED } from './generated/index.js';
import type { OrderPlacedPayload, OrderPlacedReceived } from './generated/index.js';
declare const bus: Bus;
declare const writer: OutboxWriter;
declare const client: pg.ClientBase;
declare const fromConfig: string;
const order: OrderPlacedPayload = { orderId: 'o-1', amountCents: 1250 };
`;

describe('catalog generate for a consumer project', () => {
  it('augments the package module and loads kinds.ts from the generated index', () => {
    expect(kindsModule(catalog, 'consumer')).toContain("declare module 'ce-gateway' {");
    expect(kindsModule(catalog, 'consumer')).toContain(`readonly OrderPlaced: { readonly eventId: '${ORDER_PLACED}'; readonly payload: PayloadByKind['OrderPlaced']; readonly received: ReceivedByKind['OrderPlaced'] };`);
    expect(indexModule('consumer')).toContain("export type * from './kinds.js';");
    // The package's own folder augments the declaring module, and its index never loads it (dist stays neutral).
    expect(kindsModule(catalog, 'package')).toContain("declare module '../kinds.js' {");
    expect(indexModule('package')).not.toContain('kinds.js');
  });

  it('the generated folder compiles on its own (a shared package of generated types, nothing else importing ce-gateway)', () => {
    const dir = join(work, 'alone');
    writeGeneratedFiles(join(dir, 'generated'), generateCatalogFiles(catalog, 'consumer'));
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const options = consumerCompilerOptions({ noEmit: true, verbatimModuleSyntax: true, baseUrl: dir, paths: { 'ce-gateway': [join(ROOT, 'src', 'index.ts')] } });
    const program = ts.createProgram([join(dir, 'generated', 'index.ts')], options, sharedCompilerHost(options, work));
    const diagnostics = diagnosticsUnder(program, dir).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
    // Parses src/, the libs and @types/node (seconds when the 2 cores are shared): the default 10 s is no bound for it.
  }, 120_000);

  it("types publish, onLocal, subscribe and the outbox with the user's kinds; ours and unknown ones do not compile", () => {
    const diagnostics = compile(
      'typed',
      `${HEADER}
bus.publish('OrderPlaced', order);
bus.publish(ORDER_PLACED.eventId, order);
bus.publish(fromConfig, { any: 'json' });
// @ts-expect-error amountCents is a long: a number (or decimal text), not a boolean
bus.publish('OrderPlaced', { orderId: 'o-2', amountCents: true });
// @ts-expect-error a kind of the package's own catalog: not one of this program's kinds
bus.publish('PriceLoadingCompleted', order);
// @ts-expect-error not a kind of this catalog
bus.publish('NoSuchKind', order);
bus.onLocal('OrderPlaced', (data) => {
  const same: OrderPlacedPayload = data;
  void same;
});
void bus.subscribe({
  subscription: 'billing',
  kinds: ['OrderPlaced'],
  handler: async (event) => {
    const received: OrderPlacedReceived | undefined = event.data?.value;
    const note: string | null | undefined = event.data?.value.note;
    const typed: EventOf<'OrderPlaced'> = event;
    void received;
    void note;
    void typed;
  },
});
// @ts-expect-error not a kind of this catalog
void bus.subscribe({ subscription: 'billing', kinds: ['NoSuchKind'], handler: async () => {} });
void writer.write(client, 'OrderPlaced', order);
// @ts-expect-error not a kind of this catalog
void writer.write(client, 'NoSuchKind', order);
`,
    );
    expect(diagnostics).toEqual([]);
  }, 120_000);

  it('the registration survives declaration emit: a program using the folder built with --declaration refuses unknown kinds and wrong payloads', () => {
    const usage = `import type { Bus } from 'ce-gateway';
import { ORDER_PLACED } from '@shop/events';
import type { OrderPlacedPayload } from '@shop/events';
declare const bus: Bus;
const order: OrderPlacedPayload = { orderId: 'o-1', amountCents: 1250 };
bus.publish('OrderPlaced', order);
bus.publish(ORDER_PLACED.eventId, order);
`;
    const built = compileAgainstDeclarations('declarations', {
      typed: `${usage}// @ts-expect-error not a kind of this catalog
bus.publish('NoSuchKind', order);
// @ts-expect-error amountCents is a long: a number (or decimal text), not a boolean
bus.publish('OrderPlaced', { orderId: 'o-2', amountCents: true });
`,
      // Without the expectations they are real compile errors.
      errors: `${usage}bus.publish('NoSuchKind', order);\nbus.publish('OrderPlaced', { orderId: 'o-2', amountCents: true });\n`,
    });
    // Each @ts-expect-error meets its error (an unused one is a diagnostic of typed.ts).
    expect(built.diagnostics.filter((d) => !d.startsWith('app/errors.ts: '))).toEqual([]);
    expect(built.diagnostics).toHaveLength(2);
    expect(built.diagnostics[0]).toContain('"NoSuchKind"');
    expect(built.diagnostics[1]).toContain("Type 'boolean' is not assignable to type 'AvroLong'");
    expect(built.indexDts).toContain("export type * from './kinds.js';");
  }, 120_000);

  it('the same checks fail without the expectations (they are real compile errors)', () => {
    const diagnostics = compile(
      'errors',
      `${HEADER}
bus.publish('NoSuchKind', order);
bus.publish('OrderPlaced', { orderId: 'o-2', amountCents: true });
void bus.subscribe({ subscription: 'billing', kinds: ['PriceLoadingCompleted'], handler: async () => {} });
void writer.write(client, 'OrderPlaced', { orderId: 1 });
`,
    );
    expect(diagnostics).toHaveLength(4);
    expect(diagnostics.every((d) => d.startsWith('usage.ts: '))).toBe(true);
    expect(diagnostics[0]).toContain('"NoSuchKind"');
    expect(diagnostics[2]).toContain('"PriceLoadingCompleted"');
  }, 120_000);
});
