/**
 * Fetches the broker and the registry from Maven Central with Maven (its local repository is the
 * download cache) into the stack's cache folder, once.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { APICURIO_VERSION } from './config.js';
import type { StackConfig } from './config.js';
import type { Tools } from './preflight.js';
import { execFileAsync } from './process.js';

const DONE = '.complete';

async function mvn(tools: Tools, args: readonly string[], cwd: string): Promise<void> {
  try {
    await execFileAsync(tools.mvn, ['-B', '-q', ...args], { cwd, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`Maven failed (${args.join(' ')}):\n${(e.stdout ?? '') + (e.stderr ?? '') || e.message}`);
  }
}

export async function fetchKafka(cfg: StackConfig, tools: Tools): Promise<void> {
  const marker = join(cfg.kafka.libsDir, DONE);
  if (existsSync(marker)) return;
  rmSync(cfg.kafka.libsDir, { recursive: true, force: true });
  mkdirSync(cfg.kafka.libsDir, { recursive: true });
  process.stderr.write(`Fetching Apache Kafka into ${cfg.kafka.libsDir} (Maven Central, once)…\n`);
  await mvn(tools, ['-f', join(cfg.repoDir, 'scripts/stack/maven/kafka-pom.xml'), 'dependency:copy-dependencies', `-DoutputDirectory=${cfg.kafka.libsDir}`], cfg.repoDir);
  if (!readdirSync(cfg.kafka.libsDir).some((f) => f.startsWith('kafka_2.13-'))) throw new Error('Maven copied no kafka_2.13 jar');
  writeFileSync(marker, '');
}

export async function fetchRegistry(cfg: StackConfig, tools: Tools): Promise<void> {
  const marker = join(cfg.registry.appDir, DONE);
  if (existsSync(marker)) return;
  rmSync(cfg.registry.appDir, { recursive: true, force: true });
  mkdirSync(cfg.registry.appDir, { recursive: true });
  process.stderr.write(`Fetching Apicurio Registry ${APICURIO_VERSION} into ${cfg.registry.appDir} (Maven Central, once)…\n`);
  await mvn(tools, ['dependency:copy', `-Dartifact=io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all`, `-DoutputDirectory=${cfg.registry.appDir}`], cfg.repoDir);
  const archive = readdirSync(cfg.registry.appDir).find((f) => f.endsWith('.tar.gz'));
  if (!archive) throw new Error('Maven copied no Apicurio archive');
  await execFileAsync('tar', ['xzf', archive], { cwd: cfg.registry.appDir });
  rmSync(join(cfg.registry.appDir, archive));
  writeFileSync(marker, '');
}

/** The runnable jar of the unpacked registry (its name differs between releases). */
export function registryJar(cfg: StackConfig): string {
  const files = readdirSync(cfg.registry.appDir);
  const jar = files.find((f) => f === 'quarkus-run.jar') ?? files.find((f) => f.endsWith('-runner.jar'));
  if (!jar) throw new Error(`no runnable jar in ${cfg.registry.appDir}`);
  return join(cfg.registry.appDir, jar);
}
