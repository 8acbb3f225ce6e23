/** Checks the tools the local stack needs and says in one line what to install when one is missing. */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execFileAsync } from './process.js';

export interface Tools {
  readonly java: string;
  readonly mvn: string;
  /** Folder with initdb, pg_ctl, postgres. */
  readonly pgBin: string;
}

async function which(cmd: string): Promise<string | undefined> {
  try {
    const { stdout } = await execFileAsync('sh', ['-c', `command -v ${cmd}`]);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

async function javaMajor(java: string): Promise<number> {
  const { stderr } = await execFileAsync(java, ['-version']);
  const m = /version "(\d+)(?:\.(\d+))?/.exec(stderr);
  if (!m) return 0;
  const major = Number(m[1]);
  return major === 1 ? Number(m[2]) : major;
}

function findPgBin(): string | undefined {
  if (process.env.PG_BIN && existsSync(join(process.env.PG_BIN, 'initdb'))) return process.env.PG_BIN;
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(join(base, v, 'bin', 'initdb'))) return join(base, v, 'bin');
  }
  return undefined;
}

export async function preflight(): Promise<Tools> {
  const java = await which('java');
  if (!java) throw new Error('Java 17+ is missing: install it (Debian: apt-get install openjdk-17-jre-headless).');
  const major = await javaMajor(java);
  if (major < 17) throw new Error(`Java ${major} found, the stack needs Java 17+: install openjdk-17-jre-headless.`);
  const mvn = await which('mvn');
  if (!mvn) throw new Error('Maven is missing: install it (Debian: apt-get install maven); it fetches Kafka and the registry from Maven Central.');
  const pgBin = findPgBin() ?? (await which('initdb').then((p) => (p ? p.replace(/\/initdb$/, '') : undefined)));
  if (!pgBin) throw new Error('PostgreSQL server binaries are missing: install them (Debian: apt-get install postgresql), or set PG_BIN.');
  return { java, mvn, pgBin };
}
