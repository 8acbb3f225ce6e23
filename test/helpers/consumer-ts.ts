/**
 * The TypeScript options a package user's project has (strict, NodeNext, ES2022, Node's types from
 * this repository's node_modules), for the tests that type-check code as a consumer would write it.
 */
import { join, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** Strict NodeNext options; `extra` adds or overrides (noEmit, baseUrl, paths, declaration…). */
export function consumerCompilerOptions(extra: ts.CompilerOptions = {}): ts.CompilerOptions {
  return {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    typeRoots: [join(ROOT, 'node_modules', '@types')],
    skipLibCheck: true,
    ...extra,
  };
}
