/**
 * `ce-gateway catalog generate` and `catalog export` as processes, from a project that is not
 * this package (a temporary folder): folders relative to the working directory, `--check` there,
 * never writing into node_modules; `--base-url` moving every address of the AsyncAPI document.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../helpers/spawn-node.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
/** tsx's loader by absolute URL: the CLI runs in temporary directories, where `--import tsx` would not resolve. */
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

const ORDER_PLACED = '4c3f5a2e-1b7d-4e8f-9a6b-2d1c0e9f8a7b';

/** A one-kind catalog (OrderPlaced) in `dir`, to tell it from the package's own. */
function smallCatalog(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'catalog.yaml'),
    JSON.stringify({
      version: 1,
      kinds: [{ eventId: ORDER_PLACED, name: 'OrderPlaced', description: 'An order was placed.', topic: 'shop.order-placed', schema: 'order-placed.avsc', key: ['orderId'], publish: true, owner: 'shop' }],
    }),
  );
  writeFileSync(join(dir, 'order-placed.avsc'), JSON.stringify({ type: 'record', name: 'OrderPlaced', namespace: 'shop', fields: [{ name: 'orderId', type: 'string' }] }));
}

function project(): string {
  const d = mkdtempSync(join(tmpdir(), 'ceg-cli-project-'));
  temps.push(d);
  return d;
}

async function cli(cwd: string, args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', ...env };
  for (const name of ['CATALOG_DIR', 'DATASCHEMA_BASE_URL', 'PUBLIC_BASE_URL', 'CE_GATEWAY_ENV_FILE', 'KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL']) if (!(name in env)) delete base[name];
  const r = await runProcess(process.execPath, [...CLI_ENTRY, ...args], { cwd, env: base, timeoutMs: 60_000 });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

describe('catalog generate in a project that uses the package', { timeout: 60_000 }, () => {
  it('reads ./schemas, writes ./src/catalog/generated registering the kinds with the package, and --check works there', async () => {
    const dir = project();
    cpSync(join(ROOT, 'schemas'), join(dir, 'schemas'), { recursive: true });
    const written = await cli(dir, ['catalog', 'generate']);
    expect(written.stderr).toBe('');
    expect(written.code).toBe(0);
    const out = join(dir, 'src', 'catalog', 'generated');
    expect(written.stdout.trim().split('\n')).toEqual(['events.ts', 'kinds.ts', 'index.ts'].map((f) => `wrote ${join(out, f)}`));
    expect(readFileSync(join(out, 'kinds.ts'), 'utf8')).toContain("declare module 'ce-gateway' {");
    expect(readFileSync(join(out, 'index.ts'), 'utf8')).toContain("export type * from './kinds.js';");

    expect(await cli(dir, ['catalog', 'generate', '--check'])).toMatchObject({ code: 0, stdout: `generated files in ${out} are up to date\n` });
    writeFileSync(join(out, 'events.ts'), `${readFileSync(join(out, 'events.ts'), 'utf8')}// edited\n`);
    const stale = await cli(dir, ['catalog', 'generate', '--check']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('stale: events.ts');
  });

  it('takes --catalog and --out relative to the working directory; reading the installed package is fine, writing into node_modules is refused', async () => {
    const dir = project();
    cpSync(join(ROOT, 'schemas'), join(dir, 'node_modules', 'ce-gateway', 'schemas'), { recursive: true });
    const ok = await cli(dir, ['catalog', 'generate', '--catalog', 'node_modules/ce-gateway/schemas', '--out', 'src/events']);
    expect(ok.code).toBe(0);
    expect(existsSync(join(dir, 'src', 'events', 'kinds.ts'))).toBe(true);
    expect((await cli(dir, ['catalog', 'generate', '--catalog', 'node_modules/ce-gateway/schemas', '--out', 'src/events', '--check'])).code).toBe(0);

    const refused = await cli(dir, ['catalog', 'generate', '--catalog', 'node_modules/ce-gateway/schemas', '--out', 'node_modules/ce-gateway/src/catalog/generated']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is inside node_modules');
    expect(existsSync(join(dir, 'node_modules', 'ce-gateway', 'src'))).toBe(false);
    // The same folder through a symbolic link (break report D12): refused by where it leads.
    symlinkSync(join(dir, 'node_modules', 'ce-gateway'), join(dir, 'linked'));
    const linked = await cli(dir, ['catalog', 'generate', '--catalog', 'node_modules/ce-gateway/schemas', '--out', 'linked/src/catalog/generated']);
    expect(linked.code).toBe(2);
    expect(linked.stderr).toContain(`(through a symbolic link: ${realpathSync(join(dir, 'node_modules', 'ce-gateway'))}${sep}src${sep}catalog${sep}generated) is inside node_modules`);
    expect(existsSync(join(dir, 'node_modules', 'ce-gateway', 'src'))).toBe(false);

    const none = await cli(dir, ['catalog', 'generate', '--catalog', 'nothing-here']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`no catalog.yaml in ${join(dir, 'nothing-here')}: pass --catalog DIR`);
  });

  it('picks the catalog as schemas check does: --catalog, else CATALOG_DIR, else ./schemas when it holds one, else the package\'s own', async () => {
    const dir = project();
    // No ./schemas and no CATALOG_DIR: the package's own catalog.
    const own = await cli(dir, ['catalog', 'generate', '--out', 'own']);
    // Said on stderr: a project rarely means the package's example catalog.
    expect(own.stderr).toMatch(/^catalog: .*\(the package's own example catalog: no --catalog, no CATALOG_DIR and no \.\/schemas\/catalog\.yaml\)\n$/);
    expect(own.code).toBe(0);
    expect(readFileSync(join(dir, 'own', 'events.ts'), 'utf8')).toContain('PRICE_LOADING_COMPLETED');
    // CATALOG_DIR wins over ./schemas.
    cpSync(join(ROOT, 'schemas'), join(dir, 'schemas'), { recursive: true });
    smallCatalog(join(dir, 'shop'));
    const env = await cli(dir, ['catalog', 'generate', '--out', 'env'], { CATALOG_DIR: 'shop' });
    expect(env.stderr).toBe('');
    expect(env.code).toBe(0);
    const events = readFileSync(join(dir, 'env', 'events.ts'), 'utf8');
    expect(events).toContain(`'${ORDER_PLACED}'`);
    expect(events).not.toContain('PRICE_LOADING_COMPLETED');
    // A CATALOG_DIR without a catalog is named as such.
    const empty = await cli(dir, ['catalog', 'generate', '--out', 'empty'], { CATALOG_DIR: 'nothing-here' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain(`no catalog.yaml in ${join(dir, 'nothing-here')} (CATALOG_DIR): pass --catalog DIR`);
    // The rule is in the help of both commands.
    for (const command of ['generate', 'export']) {
      const help = await cli(dir, ['catalog', command, '--help']);
      expect(help.stdout.replace(/\s+/g, ' ')).toContain("default: CATALOG_DIR, else ./schemas when it holds a catalog.yaml, else the package's own schemas/");
    }
  });

  it('refuses (exit 2) to overwrite a file of the project that it did not generate, naming it; writes nothing', async () => {
    const dir = project();
    cpSync(join(ROOT, 'schemas'), join(dir, 'schemas'), { recursive: true });
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'index.ts'), "export { main } from './main.js';\n");
    const r = await cli(dir, ['catalog', 'generate', '--out', 'src']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(dir, 'src', 'index.ts')} exists and was not written by ce-gateway catalog generate`);
    expect(r.stderr).toContain('pick an empty folder for --out, or delete the file');
    expect(readFileSync(join(dir, 'src', 'index.ts'), 'utf8')).toBe("export { main } from './main.js';\n");
    expect(existsSync(join(dir, 'src', 'events.ts'))).toBe(false);
  });

  it("in this repository's root the defaults are the package's own folders, and they are up to date", async () => {
    const r = await cli(ROOT, ['catalog', 'generate', '--check']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`generated files in ${join(ROOT, 'src', 'catalog', 'generated')} are up to date\n`);
  });
});

describe('catalog export: which catalog', { timeout: 60_000 }, () => {
  it('reads ./schemas when it holds a catalog (as catalog generate and schemas check do); CATALOG_DIR wins over it', async () => {
    const dir = project();
    smallCatalog(join(dir, 'schemas'));
    const local = await cli(dir, ['catalog', 'export', '--out', 'local']);
    expect(local.stderr).toBe('');
    expect(local.code).toBe(0);
    expect(existsSync(join(dir, 'local', 'schemas', 'json', `${ORDER_PLACED}.json`))).toBe(true);
    expect(readFileSync(join(dir, 'local', 'asyncapi.json'), 'utf8')).not.toContain('PriceLoadingCompleted');

    const env = await cli(dir, ['catalog', 'export', '--out', 'env'], { CATALOG_DIR: join(ROOT, 'schemas') });
    expect(env.code).toBe(0);
    expect(readFileSync(join(dir, 'env', 'asyncapi.json'), 'utf8')).toContain('PriceLoadingCompleted');
    expect(existsSync(join(dir, 'env', 'schemas', 'json', `${ORDER_PLACED}.json`))).toBe(false);
  });
});

describe('catalog export --base-url', { timeout: 60_000 }, () => {
  it('moves the JSON Schema links and the dataschema address; DATASCHEMA_BASE_URL still wins', async () => {
    const dir = project();
    mkdirSync(join(dir, 'a'));
    expect((await cli(dir, ['catalog', 'export', '--out', 'a', '--base-url', 'https://events.example.com/'])).code).toBe(0);
    const doc = readFileSync(join(dir, 'a', 'asyncapi.json'), 'utf8');
    expect(doc).not.toContain('127.0.0.1:8080');
    expect(doc).toContain('URL of the exact writer schema: https://events.example.com/schemas/ids/<registry schema id>.');
    expect(doc).toContain('https://events.example.com/schemas/json/');

    expect((await cli(dir, ['catalog', 'export', '--out', 'b', '--base-url', 'https://events.example.com'], { DATASCHEMA_BASE_URL: 'https://schemas.example.com/ids/' })).code).toBe(0);
    const explicit = readFileSync(join(dir, 'b', 'asyncapi.json'), 'utf8');
    expect(explicit).toContain('URL of the exact writer schema: https://schemas.example.com/ids/<registry schema id>.');
    expect(explicit).toContain('https://events.example.com/schemas/json/');
  });
});

describe('catalog export: no credentials in the published document', { timeout: 60_000 }, () => {
  it('writes SCHEMA_REGISTRY_URL without its user:password@ (a query is refused by the configuration: paths are appended to the URL)', async () => {
    const dir = project();
    const r = await cli(dir, ['catalog', 'export', '--out', 'd'], { SCHEMA_REGISTRY_URL: 'http://admin:s3cretpw@reg.example:8081/apis/ccompat/v7', KAFKA_BROKERS: 'k1:9092' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const doc = readFileSync(join(dir, 'd', 'asyncapi.json'), 'utf8');
    expect(doc).not.toContain('s3cretpw');
    expect(doc).not.toContain('admin');
    expect(doc).toContain('"schemaRegistryUrl": "http://reg.example:8081/apis/ccompat/v7"');
  });

  it('refuses a --base-url holding credentials (exit 2), without echoing them', async () => {
    const dir = project();
    const r = await cli(dir, ['catalog', 'export', '--out', 'd', '--base-url', 'https://u:s3cretpw@events.example.com']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--base-url must not hold credentials');
    expect(r.stderr).not.toContain('s3cretpw');
    expect(existsSync(join(dir, 'd'))).toBe(false);
  });
});
