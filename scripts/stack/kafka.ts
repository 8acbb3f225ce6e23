/**
 * Apache Kafka in KRaft combined mode (one node, broker + controller), topic auto-creation off,
 * run from the jars Maven fetched, with the local JDK. Storage is formatted on first start.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from '../../src/transport/kafka/kafkajs.js';
import type { StackConfig } from './config.js';
import type { Tools } from './preflight.js';
import { awaitReady, execFileAsync, readPid, startDetached, stopProcess } from './process.js';

function files(cfg: StackConfig): { data: string; props: string; log4j: string; log: string; pid: string } {
  const d = cfg.kafka.dir;
  return { data: join(d, 'data'), props: join(d, 'server.properties'), log4j: join(d, 'log4j2.properties'), log: join(d, 'kafka.log'), pid: join(d, 'pid') };
}

export function kafkaPidFile(cfg: StackConfig): string {
  return files(cfg).pid;
}

function writeConfig(cfg: StackConfig): void {
  const f = files(cfg);
  const { port, controllerPort } = cfg.kafka;
  writeFileSync(
    f.props,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
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
      '',
    ].join('\n'),
  );
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
  writeConfig(cfg);
  let pid = readPid(f.pid);
  if (pid === undefined) {
    if (!existsSync(join(f.data, 'meta.properties'))) {
      const { stdout } = await execFileAsync(tools.java, jvmArgs(cfg, ['kafka.tools.StorageTool', 'random-uuid']));
      const clusterId = stdout.trim().split('\n').pop() ?? '';
      await execFileAsync(tools.java, jvmArgs(cfg, ['kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', f.props]));
    }
    pid = startDetached(tools.java, [...jvmArgs(cfg, ['kafka.Kafka', f.props])], { cwd: cfg.kafka.dir, logFile: f.log, pidFile: f.pid });
  }
  await awaitReady('Kafka', () => kafkaReady(cfg), { timeoutMs: 90_000, pid, logFile: f.log });
}

export async function stopKafka(cfg: StackConfig): Promise<void> {
  await stopProcess(files(cfg).pid, 60_000);
}
