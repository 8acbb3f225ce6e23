/**
 * Emits the generated `kinds.ts`: the declaration merging that registers the catalog's kinds with
 * the typed API of ce-gateway (`EventKinds`, see src/catalog/kinds.ts), so that `publish`,
 * `onLocal`, `subscribe` and the outbox take each kind's generated payload type and refuse kinds
 * the catalog does not have, at compile time.
 * Spec: bus spec X1 (publishers and subscribers use the types generated from the model).
 */
import type { Catalog } from '../../catalog/index.js';
import { GENERATED_HEADER } from './typescript.js';

/**
 * Where the generated folder is used, which decides what `kinds.ts` augments:
 * - `package`: ce-gateway's own `src/catalog/generated/` — augments the declaring module
 *   (`../kinds.js`); the folder's index does not load `kinds.ts`, so the published package never
 *   registers this catalog's kinds in its users' programs.
 * - `consumer`: a project that installed the package and generates from its own catalog —
 *   augments the package (`ce-gateway`); the folder's index loads `kinds.ts` (type-only, in a form
 *   declaration emit keeps: see {@link indexModule}).
 */
export type GenerateTarget = 'package' | 'consumer';

/** The package name a consumer's generated code augments. */
export const PACKAGE_MODULE = 'ce-gateway';

function quoted(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The text of the generated `kinds.ts` for `catalog`. Pure: kinds in catalog order. */
export function kindsModule(catalog: Catalog, target: GenerateTarget): string {
  const augmented = target === 'package' ? '../kinds.js' : PACKAGE_MODULE;
  const members = catalog.kinds
    .map((k) => `    readonly ${k.name}: { readonly eventId: ${quoted(k.eventId)}; readonly payload: PayloadByKind[${quoted(k.name)}]; readonly received: ReceivedByKind[${quoted(k.name)}] };\n`)
    .join('');
  return [
    `${GENERATED_HEADER}.\n// Source: the catalog (catalog.yaml and its Avro schemas). Regenerate: ce-gateway catalog generate\n`,
    // The augmented module must resolve where this file is compiled on its own (a shared package
    // of generated types): without an import of it, TypeScript cannot find it (TS2664).
    ...(target === 'consumer' ? [`import type {} from ${quoted(PACKAGE_MODULE)};`] : []),
    "import type { PayloadByKind, ReceivedByKind } from './events.js';\n",
    '/**',
    " * Registers the catalog's kinds with ce-gateway's typed API (`EventKinds`): publish, onLocal,",
    ' * subscribe and the outbox take these names and eventIds with their generated data types.',
    ' */',
    `declare module ${quoted(augmented)} {`,
    '  interface EventKinds {',
    `${members}  }`,
    '}',
    '',
  ].join('\n');
}

/**
 * The text of the generated folder's `index.ts`. For `consumer` it ends with
 * `export type * from './kinds.js'` (TypeScript ≥ 5.0; `kinds.ts` exports nothing, so nothing is
 * added to the folder's exports): unlike `import type {} from …`, which declaration emit drops, a
 * type-only re-export is kept in `index.d.ts`, so the `EventKinds` registration also reaches
 * programs that use the folder built into a package (`tsc --declaration`) through its `.d.ts`
 * files. A `/// <reference path>` is not kept either (TypeScript ≥ 5.5 drops user-written
 * reference directives from declaration output). It is erased from the emitted JavaScript.
 * Spec: bus spec X1 (publishers and subscribers use the types generated from the model).
 */
export function indexModule(target: GenerateTarget): string {
  const head = `${GENERATED_HEADER}.\n/** Generated catalog constants and payload types. */\nexport * from './events.js';\n`;
  return target === 'package'
    ? head
    : `${head}// Type-only (kept in declaration output): brings the kinds' registration (kinds.ts) into every program that uses this folder, from source or from its emitted .d.ts.\nexport type * from './kinds.js';\n`;
}
