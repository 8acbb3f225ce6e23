/**
 * `AbortSignal.any` is refused in src/ by the lint: on Node 20 it leaves an entry on each source
 * until that source aborts, so combining a long-lived signal (the gateway's closing signal, the
 * outbox relay's) with a short-lived one per request or cycle grew memory without bound (pull
 * long-polls; the relay's connection wait every cycle). The rule is shown to bite on in-memory
 * files, and `linkedSignal` — what src uses instead — passes it.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import type { Linter } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
let eslint: ESLint;
beforeAll(async () => {
  const config = (await import(pathToFileURL(join(root, 'eslint.config.js')).href)) as { noAbortSignalAny: Linter.Config };
  eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: [config.noAbortSignalAny] });
});

async function lint(file: string, code: string): Promise<Linter.LintMessage[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return result!.messages;
}

describe('no AbortSignal.any in src', () => {
  it('reports AbortSignal.any in a source file, naming linkedSignal', async () => {
    const messages = await lint('src/bus/probe.ts', 'export const s = AbortSignal.any([new AbortController().signal, AbortSignal.timeout(5)]);\n');
    expect(messages.map((m) => m.ruleId)).toEqual(['no-restricted-properties']);
    expect(messages[0]!.message).toContain('linkedSignal');
  });

  it('passes linkedSignal, and leaves tests alone', async () => {
    expect(await lint('src/bus/probe.ts', "import { linkedSignal } from '../core/abort-fanout.js';\nexport const s = linkedSignal([new AbortController().signal]);\n")).toEqual([]);
    const inTest = await lint('test/unit/probe.test.ts', 'export const s = AbortSignal.any([new AbortController().signal]);\n');
    expect(inTest.filter((m) => m.ruleId === 'no-restricted-properties')).toEqual([]);
  });
});
