/**
 * docs/deploy.md "Environment variables" is the list operators configure from: every variable it
 * names is one the gateway reads (CONFIG_KEYS) or one the table itself says is not a setting of
 * `serve`; every setting is in it; and "Secrets" names exactly the variables read as secrets, which
 * are the ones that may come from `<NAME>_FILE`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS, SECRET_KEYS } from '../../../src/config/config.js';

const doc = readFileSync(resolve(import.meta.dirname, '..', '..', '..', 'docs', 'deploy.md'), 'utf8');
const section = doc.slice(doc.indexOf('## Environment variables'));
const secrets = section.slice(section.indexOf('### Secrets'));
const table = section.slice(0, section.indexOf('### Secrets'));
/** Names in the first column of the table's rows. */
const named = table
  .split('\n')
  .filter((l) => l.startsWith('| `'))
  .flatMap((l) => [...l.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
/** Rows for variables that are not `serve`'s settings, each saying so in its text. */
const NOT_SETTINGS: Readonly<Record<string, RegExp>> = {
  CE_GATEWAY_BROKER_TIMEOUT_MS: /the CLI only/,
  DATABASE_URL: /not a setting of the gateway/,
};

describe('docs/deploy.md environment variables', () => {
  it('has the table', () => {
    expect(named.length).toBeGreaterThan(50);
  });

  it('names only variables the gateway reads, or says a row is not a setting', () => {
    const unknown = named.filter((n) => !CONFIG_KEYS.includes(n) && NOT_SETTINGS[n] === undefined);
    expect(unknown).toEqual([]);
    for (const [name, says] of Object.entries(NOT_SETTINGS)) {
      const row = table.split('\n').find((l) => l.startsWith(`| \`${name}\``));
      expect(row, name).toMatch(says);
    }
  });

  it('lists every setting (a secret\'s <NAME>_FILE is told in the secret\'s row and under "Secrets")', () => {
    const missing = CONFIG_KEYS.filter((k) => !named.includes(k) && !(k.endsWith('_FILE') && SECRET_KEYS.includes(k.slice(0, -'_FILE'.length))));
    expect(missing).toEqual([]);
  });

  it('"Secrets" names exactly the variables read as secrets (they, and only they, take <NAME>_FILE)', () => {
    const listed = [...secrets.slice(0, secrets.indexOf(')')).matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!);
    expect([...listed].sort()).toEqual([...SECRET_KEYS].sort());
  });
});
