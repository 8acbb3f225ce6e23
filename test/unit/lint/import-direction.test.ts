/**
 * The import direction between the folders of src/: src/README.md states the layers, the eslint
 * configuration enforces them, and both cover exactly the folders that exist. The rule is shown
 * to bite by linting in-memory files that import every other folder: exactly the imports against
 * the direction are reported, and nothing escapes the check unresolved.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import type { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const src = join(root, 'src');

interface LintConfigModule {
  readonly layers: readonly (readonly string[])[];
  readonly importDirection: Linter.Config;
}

let config: LintConfigModule;
beforeAll(async () => {
  config = (await import(pathToFileURL(join(root, 'eslint.config.js')).href)) as LintConfigModule;
});

const folders = (): string[] =>
  readdirSync(src, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

/** The layers as src/README.md states them: the first line of the code block under "## Layers". */
function readmeLayers(): string[][] {
  const text = readFileSync(join(src, 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('## Layers'));
  const line = /```[a-z]*\n([^\n]+)\n/.exec(section)?.[1] ?? '';
  return line.split('→').map((layer) => layer.split(',').map((f) => f.trim()));
}

/** A source file of `folder` to import in a probe (its index.ts when it has one). */
function someFileOf(folder: string): string {
  const files = readdirSync(join(src, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .sort((a, b) => Number(b === 'index.ts') - Number(a === 'index.ts') || a.localeCompare(b));
  return files[0]!.replace(/\.ts$/, '.js');
}

/** Lints `code` as if it were `file` (relative to the repository) with the given configuration. */
async function lint(eslint: ESLint, file: string, code: string): Promise<Linter.LintMessage[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return result!.messages;
}

describe('import direction: one order, stated once', () => {
  it('src/README.md states the same layers as the eslint rule', () => {
    expect(readmeLayers()).toEqual(config.layers.map((l) => [...l]));
  });

  it('the layers name every folder of src/ exactly once, and no folder that does not exist', () => {
    const named = config.layers.flat();
    expect(new Set(named).size).toBe(named.length);
    expect([...named].sort()).toEqual(folders());
  });

  it('the layout sections of src/README.md and README.md list exactly the folders of src/', () => {
    const local = readFileSync(join(src, 'README.md'), 'utf8');
    const layout = local.slice(local.indexOf('## Layout'), local.indexOf('## Layers'));
    expect([...layout.matchAll(/^([a-z-]+)\/ /gm)].map((m) => m[1]).sort()).toEqual(folders());
    const top = readFileSync(join(root, 'README.md'), 'utf8');
    const topLayout = top.slice(top.indexOf('## Layout'));
    const block = /```\n([\s\S]*?)```/.exec(topLayout)?.[1] ?? '';
    expect([...block.matchAll(/^src\/([a-z-]+)\s/gm)].map((m) => m[1]).sort()).toEqual(folders());
  });
});

describe('import direction: the rule', () => {
  it('reports exactly the imports against the direction, for a file in every folder', async () => {
    const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: [config.importDirection] });
    const all = folders();
    const layerOf = new Map(config.layers.flatMap((l, i) => l.map((f) => [f, i] as const)));
    for (const folder of all) {
      const others = all.filter((f) => f !== folder);
      const code = others.map((f) => `import '../${f}/${someFileOf(f)}';`).join('\n') + '\n';
      const messages = await lint(eslint, `src/${folder}/layer-probe.ts`, code);
      // Every probe import resolved: none escaped the direction check.
      expect(messages.filter((m) => m.ruleId !== 'import-x/no-restricted-paths')).toEqual([]);
      const reported = messages.map((m) => others[m.line - 1]);
      const against = others.filter((f) => layerOf.get(f)! >= layerOf.get(folder)!);
      expect({ folder, reported }).toEqual({ folder, reported: against });
      for (const m of messages) expect(m.message).toContain(`src/${folder} may import only from`);
    }
  }, 60_000);

  it('lets src/index.ts (the public library surface) import every folder', async () => {
    const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: [config.importDirection] });
    const code = folders().map((f) => `import './${f}/${someFileOf(f)}';`).join('\n') + '\n';
    expect(await lint(eslint, 'src/index.ts', code)).toEqual([]);
  });

  it('an import against the direction fails `npm run lint` (the project configuration), type-only imports included', async () => {
    // The whole project configuration; only its type-aware parsing is off, since the TypeScript
    // project service knows files on disk only and this one is in memory.
    const eslint = new ESLint({ cwd: root, overrideConfig: [{ files: ['src/**/*.ts'], ...tseslint.configs.disableTypeChecked }] });
    const messages = await lint(eslint, 'src/core/layer-probe.ts', "import type { Bus } from '../bus/bus.js';\nexport type Probe = Bus;\n");
    expect(messages.map((m) => [m.ruleId, m.severity, m.line])).toEqual([['import-x/no-restricted-paths', 2, 1]]);
  }, 60_000);
});
