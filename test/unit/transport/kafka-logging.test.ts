import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { REJOIN_EPISODE_MS, kafkaLogCreator, toKafkaLogLevel } from '../../../src/transport/kafka/logging.js';
import type { TransportLogger } from '../../../src/transport/kafka/logging.js';

function recorder(): { logger: TransportLogger; lines: [string, Record<string, unknown>, string][] } {
  const lines: [string, Record<string, unknown>, string][] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string): void => void lines.push([level, obj, msg]);
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

describe('kafkaLogCreator', () => {
  it('routes each kafkajs level to the logger with the entry fields and context', () => {
    const { logger, lines } = recorder();
    const log = kafkaLogCreator(logger, { clientId: 'c1' })(logLevel.WARN);
    const entry = (level: logLevel, message: string, extra: Record<string, unknown> = {}): void =>
      log({ namespace: 'Consumer', level, label: 'X', log: { timestamp: '2024-01-01T00:00:00Z', logger: 'kafkajs', message, ...extra } });
    entry(logLevel.ERROR, 'crashed', { groupId: 'g' });
    entry(logLevel.WARN, 'rebalancing');
    entry(logLevel.INFO, 'joined');
    entry(logLevel.DEBUG, 'fetch');
    expect(lines).toEqual([
      ['error', { clientId: 'c1', kafkajs: 'Consumer', groupId: 'g' }, 'crashed'],
      ['warn', { clientId: 'c1', kafkajs: 'Consumer' }, 'rebalancing'],
      ['info', { clientId: 'c1', kafkajs: 'Consumer' }, 'joined'],
      ['debug', { clientId: 'c1', kafkajs: 'Consumer' }, 'fetch'],
    ]);
  });

  it('demotes the warning about bounded idempotent-producer retries to debug', () => {
    const { logger, lines } = recorder();
    kafkaLogCreator(logger, {})(logLevel.WARN)({
      namespace: 'Producer', level: logLevel.WARN, label: 'WARN',
      log: { timestamp: 't', message: 'Limiting retries for the idempotent producer may invalidate EoS guarantees' },
    });
    expect(lines.map(([level]) => level)).toEqual(['debug']);
  });

  it('demotes a send kafkajs retries because leadership moved, not one it gave up on', () => {
    const { logger, lines } = recorder();
    const log = kafkaLogCreator(logger, {})(logLevel.WARN);
    const send = (message: string, extra: Record<string, unknown>): void =>
      log({ namespace: 'Producer', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message, ...extra } });
    // As kafkajs logged it right after a broker outage (broker-outage-logs.kafka.test.ts).
    send('Failed to send messages: This server is not the leader for that topic-partition', { retryCount: 0, retryTime: 302 });
    send('Failed to send messages: There is no leader for this topic-partition as we are in the middle of a leadership election', { retryCount: 1 });
    send('Failed to send messages: This server is not the leader for that topic-partition', {}); // no retry announced
    send('Failed to send messages: The request included message batch larger than the configured segment size', { retryCount: 0 });
    expect(lines.map(([level]) => level)).toEqual(['debug', 'debug', 'error', 'error']);
  });

  it('says a group rejoining once per episode at info: the repeats within REJOIN_EPISODE_MS go to debug, per group', () => {
    const { logger, lines } = recorder();
    let t = 1_000_000;
    const log = kafkaLogCreator(logger, {}, undefined, () => t)(logLevel.WARN);
    const rejoin = (message: string, groupId: string): void => log({ namespace: 'ConsumerGroup', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message, groupId } });
    // As kafkajs logged it after a 30 s outage (broker-outage-logs.kafka.test.ts, one CI run).
    rejoin('The coordinator is not aware of this member, re-joining the group', 'g1');
    t += 260;
    log({ namespace: 'ConsumerGroup', level: logLevel.WARN, label: 'WARN', log: { timestamp: 't', message: 'The group is rebalancing, re-joining', groupId: 'g1' } });
    t += 460;
    rejoin('The coordinator is not aware of this member, re-joining the group', 'g1');
    rejoin('The coordinator is not aware of this member, re-joining the group', 'g2');
    t += REJOIN_EPISODE_MS;
    rejoin('The coordinator is not aware of this member, re-joining the group', 'g1');
    expect(lines.map(([level, obj]) => `${level} ${String(obj.groupId)}`)).toEqual(['info g1', 'debug g1', 'debug g1', 'info g2', 'info g1']);
  });

  it('maps level names to kafkajs levels', () => {
    expect(['nothing', 'error', 'warn', 'info', 'debug'].map((l) => toKafkaLogLevel(l as 'warn'))).toEqual([0, 1, 2, 4, 5]);
  });
});
