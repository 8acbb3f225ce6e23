/**
 * Apache Kafka in KRaft combined mode (one node, broker + controller), topic auto-creation off,
 * run from the jars Maven fetched, with the local JDK. Storage is formatted on first start.
 * Listeners: PLAINTEXT (the tests' and the gateway's default), CONTROLLER, SASL —
 * SASL_PLAINTEXT with SCRAM-SHA-512 only, whose user is written into the cluster metadata when the
 * storage is formatted (`StorageTool format --add-scram`), or on a start of storage formatted
 * without it (an older `.stack/`, a changed password file) with Kafka's ConfigCommand on the
 * running broker; a marker beside the data (cluster id, user, password hash) says it is done, so a
 * start of the same data runs no extra JVM (each costs seconds of CPU: test files start private
 * brokers, test/helpers/private-broker.ts) — and SSL: TLS with the stack CA's server
 * certificate as a PEM keystore (`ssl.keystore.type=PEM`, KIP-651), no client certificate asked —
 * and SASL_SSL: the SASL listener's SCRAM-SHA-512 user over the SSL listener's TLS.
 * A running broker whose properties differ from the ones written now (a stack made before a
 * listener was added) is restarted on the same data, so `stack:up` upgrades an old `.stack/`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import type { StackConfig } from './config.js';
import type { Tools } from './preflight.js';
import { awaitReady, execFileAsync, readPid, startDetached, stopProcess } from './process.js';
import { ensureStackTls } from './tls.js';

const { Kafka, logLevel } = kafkajs();

function files(cfg: StackConfig): { data: string; props: string; log4j: string; log: string; pid: string; scram: string } {
  const d = cfg.kafka.dir;
  return { data: join(d, 'data'), props: join(d, 'server.properties'), log4j: join(d, 'log4j2.properties'), log: join(d, 'kafka.log'), pid: join(d, 'pid'), scram: join(d, 'scram-user') };
}

export function kafkaPidFile(cfg: StackConfig): string {
  return files(cfg).pid;
}

/** Writes the broker's properties; true when they changed (or were new). */
function writeConfig(cfg: StackConfig, keystoreFile: string): boolean {
  const f = files(cfg);
  const { port, controllerPort, saslPort, sslPort, saslSslPort } = cfg.kafka;
  const before = existsSync(f.props) ? readFileSync(f.props, 'utf8') : '';
  writeFileSync(
    f.props,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort},SASL://127.0.0.1:${saslPort},SSL://127.0.0.1:${sslPort},SASL_SSL://127.0.0.1:${saslSslPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port},SASL://127.0.0.1:${saslPort},SSL://127.0.0.1:${sslPort},SASL_SSL://127.0.0.1:${saslSslPort}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL',
      'listener.name.sasl.sasl.enabled.mechanisms=SCRAM-SHA-512',
      'listener.name.sasl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
      // The key in the keystore file is unencrypted, so no ssl.key.password (KIP-651).
      'listener.name.ssl.ssl.keystore.type=PEM',
      `listener.name.ssl.ssl.keystore.location=${keystoreFile}`,
      'listener.name.ssl.ssl.client.auth=none',
      'listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512',
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'listener.name.sasl_ssl.ssl.keystore.type=PEM',
      `listener.name.sasl_ssl.ssl.keystore.location=${keystoreFile}`,
      'listener.name.sasl_ssl.ssl.client.auth=none',
      'inter.broker.listener.name=PLAINTEXT',
      `log.dirs=${f.data}`,
      'auto.create.topics.enable=false',
      'num.partitions=1',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=10',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      'log.flush.interval.messages=9223372036854775807',
      ...(cfg.kafka.extraProperties ?? []),
      '',
    ].join('\n'),
  );
  const changed = readFileSync(f.props, 'utf8') !== before;
  writeFileSync(
    f.log4j,
    [
      'status = warn',
      'appender.console.type = Console',
      'appender.console.name = STDOUT',
      'appender.console.layout.type = PatternLayout',
      'appender.console.layout.pattern = [%d] %p %m (%c)%n',
      'rootLogger.level = WARN',
      'rootLogger.appenderRef.stdout.ref = STDOUT',
      'logger.kafka.name = kafka.server.KafkaRaftServer',
      'logger.kafka.level = INFO',
      '',
    ].join('\n'),
  );
  return changed;
}

function jvmArgs(cfg: StackConfig, extra: readonly string[]): string[] {
  return [`-Xms256m`, `-Xmx${cfg.kafka.heapMb}m`, `-Dlog4j2.configurationFile=${files(cfg).log4j}`, '-cp', `${cfg.kafka.libsDir}/*`, ...extra];
}

export async function kafkaReady(cfg: StackConfig): Promise<boolean> {
  const kafka = new Kafka({ clientId: 'ce-gateway-stack', brokers: [`127.0.0.1:${cfg.kafka.port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 1000 });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 && cluster.controller !== null;
  } finally {
    await admin.disconnect();
  }
}

export async function startKafka(cfg: StackConfig, tools: Tools): Promise<void> {
  const f = files(cfg);
  mkdirSync(cfg.kafka.dir, { recursive: true });
  const tls = await ensureStackTls(cfg.tlsDir);
  const changed = writeConfig(cfg, tls.keystoreFile);
  let pid = readPid(f.pid);
  // A broker started with other properties (an older stack) would lack the new listeners.
  if (pid !== undefined && changed) {
    await stopKafka(cfg);
    pid = undefined;
  }
  if (pid === undefined) {
    if (!existsSync(join(f.data, 'meta.properties'))) {
      const clusterId = newClusterId();
      const scram = scramCredential(cfg);
      try {
        await execFileAsync(tools.java, jvmArgs(cfg, ['kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', f.props, '--add-scram', scram.argument]));
      } catch (err) {
        throw new Error(`formatting the Kafka storage failed: ${(err instanceof Error ? err.message : String(err)).split(scram.password).join('[redacted]').slice(-500)}`);
      }
      writeFileSync(f.scram, scramMarker(clusterId, cfg.kafka.saslUser, scram.password));
    }
    pid = startDetached(tools.java, [...jvmArgs(cfg, ['kafka.Kafka', f.props])], { cwd: cfg.kafka.dir, logFile: f.log, pidFile: f.pid });
  }
  await awaitReady('Kafka', () => kafkaReady(cfg), { timeoutMs: 90_000, pid, logFile: f.log });
  await ensureScramUser(cfg, tools);
}

/**
 * A new KRaft cluster id, as `StorageTool random-uuid` prints it (Kafka's `Uuid.randomUuid()`: 16
 * random bytes in URL-safe base64 without padding, never starting with '-', never the reserved
 * all-zero id or the metadata topic's id 0…01), without starting a JVM for it.
 */
function newClusterId(): string {
  for (;;) {
    const bytes = randomBytes(16);
    const reserved = bytes.subarray(0, 15).every((b) => b === 0) && bytes[15]! <= 1;
    const id = bytes.toString('base64url');
    if (!reserved && !id.startsWith('-')) return id;
  }
}

/** The SASL user's password (generated into `saslPasswordFile` on first use) and its `--add-scram` argument. */
function scramCredential(cfg: StackConfig): { password: string; argument: string } {
  const { saslPasswordFile, saslUser } = cfg.kafka;
  if (!existsSync(saslPasswordFile)) writeFileSync(saslPasswordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(saslPasswordFile, 'utf8').trim();
  return { password, argument: `SCRAM-SHA-512=[name=${saslUser},iterations=8192,password=${password}]` };
}

/** What the marker file holds once the cluster `clusterId` has the user with this password (a hash, never the password). */
function scramMarker(clusterId: string, user: string, password: string): string {
  return `${clusterId} ${user} ${createHash('sha256').update(password).digest('hex')}\n`;
}

/** The cluster id of the formatted storage (`cluster.id` in meta.properties); undefined when it cannot be read. */
function storedClusterId(cfg: StackConfig): string | undefined {
  try {
    return /^cluster\.id=(.+)$/m.exec(readFileSync(join(files(cfg).data, 'meta.properties'), 'utf8'))?.[1]?.trim();
  } catch {
    return undefined;
  }
}

/**
 * Creates the SASL listener's SCRAM-SHA-512 user with Kafka's ConfigCommand (`kafka-configs
 * --alter --entity-type users`), reusing the password kept in `saslPasswordFile` (generated on
 * first start). ConfigCommand takes SCRAM credentials only on its command line (`--add-config`;
 * its `--add-config-file` refuses them), so the password is visible to local processes while the
 * command runs — acceptable for a loopback test stack; a failure is reported without it.
 */
async function ensureScramUser(cfg: StackConfig, tools: Tools): Promise<void> {
  const { saslUser, port } = cfg.kafka;
  const { password } = scramCredential(cfg);
  const clusterId = storedClusterId(cfg);
  const marker = files(cfg).scram;
  // Done already for this storage (formatted with it, or set by an earlier start) and this password.
  if (clusterId !== undefined && existsSync(marker) && readFileSync(marker, 'utf8') === scramMarker(clusterId, saslUser, password)) return;
  try {
    await execFileAsync(tools.java, jvmArgs(cfg, ['kafka.admin.ConfigCommand', '--bootstrap-server', `127.0.0.1:${port}`, '--alter', '--entity-type', 'users', '--entity-name', saslUser, '--add-config', `SCRAM-SHA-512=[iterations=8192,password=${password}]`]));
  } catch (err) {
    const text = (err instanceof Error ? err.message : String(err)).split(password).join('[redacted]');
    throw new Error(`creating the SCRAM user ${saslUser} failed: ${text.slice(-500)}`);
  }
  if (clusterId !== undefined) writeFileSync(marker, scramMarker(clusterId, saslUser, password));
}

export async function stopKafka(cfg: StackConfig): Promise<void> {
  await stopProcess(files(cfg).pid, 60_000);
}
