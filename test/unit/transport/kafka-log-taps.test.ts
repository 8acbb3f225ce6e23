/**
 * kafkajs says that a running member's fetch offset is out of range only in its log, then resets it
 * to its `fromBeginning` default (the end for a 'latest' subscription). The consumer's log creator
 * hands that line to the consumption (logging.ts KafkaLogTaps), which moves the partition to its
 * log start with the gateway's own warning (consumption.ts #outOfRange; the integration case is in
 * test/integration/offset-out-of-range.kafka.test.ts). The kafkajs client is created at ERROR at
 * least so the line is seen whatever the configured level: entries above that level are dropped here.
 */
import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KAFKAJS_OFFSET_OUT_OF_RANGE, kafkaLogCreator } from '../../../src/transport/kafka/logging.js';
import type { KafkaLogTaps, OutOfRangeTap, TransportLogger } from '../../../src/transport/kafka/logging.js';

function recorder(): { logger: TransportLogger; lines: [string, string][] } {
  const lines: [string, string][] = [];
  const at = (level: string) => (_obj: Record<string, unknown>, msg: string): void => void lines.push([level, msg]);
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

const outOfRange = { namespace: 'ConsumerGroup', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message: KAFKAJS_OFFSET_OUT_OF_RANGE, topic: 'orders', partition: 2, groupId: 'g1', memberId: 'm' } };

describe('kafkajs log taps', () => {
  it("kafkajs's out-of-range line reaches the tap (group, topic, partition) at any configured level, and the log at debug at most", () => {
    for (const level of [logLevel.NOTHING, logLevel.ERROR, logLevel.DEBUG]) {
      const { logger, lines } = recorder();
      const seen: OutOfRangeTap[] = [];
      const taps: KafkaLogTaps = { level, offsetOutOfRange: (tp) => void seen.push(tp) };
      kafkaLogCreator(logger, {}, undefined, Date.now, taps)(Math.max(level, logLevel.ERROR))(outOfRange);
      expect(seen).toEqual([{ groupId: 'g1', topic: 'orders', partition: 2 }]);
      // An ERROR line: dropped only when nothing is to be logged.
      expect(lines).toEqual(level === logLevel.NOTHING ? [] : [['debug', KAFKAJS_OFFSET_OUT_OF_RANGE]]);
    }
  });

  it('other lines keep their level, and are dropped above the configured level (the client logs at ERROR at least)', () => {
    const { logger, lines } = recorder();
    const taps: KafkaLogTaps = { level: logLevel.NOTHING, offsetOutOfRange: () => undefined };
    const log = kafkaLogCreator(logger, {}, undefined, Date.now, taps)(logLevel.ERROR);
    log({ namespace: 'Consumer', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message: 'Crash: something' } });
    expect(lines).toEqual([]);
    const { logger: l2, lines: lines2 } = recorder();
    kafkaLogCreator(l2, {}, undefined, Date.now, { level: logLevel.WARN })(logLevel.WARN)({ namespace: 'Consumer', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message: 'Crash: something' } });
    expect(lines2).toEqual([['error', 'Crash: something']]);
  });

  it('without a tap for it, the line is logged as kafkajs said it', () => {
    const { logger, lines } = recorder();
    kafkaLogCreator(logger, {}, undefined, Date.now, { level: logLevel.WARN })(logLevel.WARN)(outOfRange);
    expect(lines).toEqual([['error', KAFKAJS_OFFSET_OUT_OF_RANGE]]);
  });
});
