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

/**
 * Parsed files shared by every program of this test worker, by path and parse settings. Why: each
 * consumer program holds all of src/, the libs and @types/node (some 700 files); parsing them again
 * for every program cost seconds per case on the 2-core CI. A parsed (and bound) file does not
 * depend on the program it is in, only on these settings, which is how tsserver shares files
 * between projects (its document registry) too. Files under the tests' temporary folders are read
 * afresh: a test may rewrite them.
 */
const parsed = new Map<string, ts.SourceFile>();

/**
 * A compiler host for `options` whose files outside `fresh` (the test's own folder) are parsed
 * once per worker. Pass it as `ts.createProgram`'s third argument.
 */
export function sharedCompilerHost(options: ts.CompilerOptions, fresh: string): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, settings, onError, shouldCreateNew) => {
    if (fileName.startsWith(fresh)) return read(fileName, settings, onError, shouldCreateNew);
    const s = typeof settings === 'object' ? settings : { languageVersion: settings };
    const key = `${s.languageVersion}|${s.impliedNodeFormat ?? ''}|${s.jsDocParsingMode ?? ''}|${fileName}`;
    const known = parsed.get(key);
    if (known !== undefined) return known;
    const file = read(fileName, settings, onError, shouldCreateNew);
    if (file !== undefined) parsed.set(key, file);
    return file;
  };
  return host;
}

/**
 * The pre-emit diagnostics (options, syntax, types) of the files of `program` under `dir`, sorted,
 * and those of no file. Only those files are type-checked: the checker resolves what they use from
 * elsewhere (this package's src/, the libs) on demand, where `ts.getPreEmitDiagnostics(program)`
 * checks all of src/ as well (12–27 s of a 2-core CI machine per program) only for the tests to
 * filter those diagnostics out. src/ itself is type-checked by `tsc` in CI.
 */
export function diagnosticsUnder(program: ts.Program, dir: string): readonly ts.Diagnostic[] {
  const all: ts.Diagnostic[] = [...program.getConfigFileParsingDiagnostics(), ...program.getOptionsDiagnostics()];
  for (const file of program.getSourceFiles()) {
    if (!file.fileName.startsWith(dir)) continue;
    all.push(...ts.getPreEmitDiagnostics(program, file));
  }
  all.push(...program.getGlobalDiagnostics());
  return ts.sortAndDeduplicateDiagnostics(all).filter((d) => d.file === undefined || d.file.fileName.startsWith(dir));
}
