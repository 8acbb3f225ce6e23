/**
 * The documents quote what `ce-gateway connectors check connectors` answers in this repository
 * (docs/connectors.md): the quote must be what the command prints, so a newcomer who runs it
 * recognises the answer. The real CLI runs on the repository's connectors/ folder.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';
import { runProcess } from '../../helpers/spawn-node.js';
import { noConnectorFilesWarning } from '../../../src/connectors/index.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

describe('docs: the answer of `connectors check connectors`', { timeout: 60_000 }, () => {
  it('docs/connectors.md quotes a line the command prints, and connectors/README.md names the command it prints', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
    for (const name of ['CATALOG_DIR', 'CONNECTORS_DIR', 'CE_GATEWAY_ENV_FILE']) delete env[name];
    const r = await runProcess(process.execPath, [...CLI_ENTRY, 'connectors', 'check', 'connectors'], { cwd: ROOT, env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const doc = readFileSync(join(ROOT, 'docs', 'connectors.md'), 'utf8').replace(/\s*\n\s*/g, ' ');
    const quoted = /answers `(connectors\/examples holds [^`]+)`/.exec(doc)?.[1];
    expect(quoted, 'docs/connectors.md quotes the answer').toBeDefined();
    expect(r.stderr).toContain(`ce-gateway connectors check: ${quoted!}\n`);
    const readme = readFileSync(join(ROOT, 'connectors', 'README.md'), 'utf8');
    expect(readme).toContain('npx ce-gateway connectors check connectors/examples');
    expect(r.stderr).toContain(': ce-gateway connectors check connectors/examples\n');
  });

  it('docs/connectors.md quotes the warning serve and config check give for CONNECTORS_DIR=connectors', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'connectors.md'), 'utf8').replace(/\s*\n\s*/g, ' ');
    const quoted = /a warning ``(CONNECTORS_DIR connectors has no connector files.*?) ``/.exec(doc)?.[1];
    expect(quoted, 'docs/connectors.md quotes the warning').toBeDefined();
    expect(quoted).toBe(noConnectorFilesWarning('connectors', [{ folder: 'connectors/examples', files: 2 }]));
  });
});
