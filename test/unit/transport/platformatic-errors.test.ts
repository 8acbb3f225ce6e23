/**
 * Issue 14: the @platformatic/kafka adapter's error mapping and retriable classification, on the
 * library's own error classes (ProtocolError, ResponseError, MultipleErrors, NetworkError,
 * TimeoutError, UserError), however deeply the library wraps them; and its outage logging rule.
 */
import { MultipleErrors, NetworkError, ProtocolError, ResponseError, TimeoutError, UserError } from '@platformatic/kafka';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import type { TransportLogger } from '../../../src/transport/kafka/logging.js';
import { BrokerOutage, quietDuringOutage } from '../../../src/transport/kafka/outage.js';
import { fromPlatformaticError, producerStateLost } from '../../../src/transport/platformatic/errors.js';

/** Kafka protocol error codes (the protocol's table) of the ids used below. */
const CODE = { OUT_OF_ORDER_SEQUENCE_NUMBER: 45, UNKNOWN_PRODUCER_ID: 59, MESSAGE_TOO_LARGE: 10, UNKNOWN_TOPIC_OR_PARTITION: 3, NOT_LEADER_OR_FOLLOWER: 6, REQUEST_TIMED_OUT: 7 } as const;

const refused = (): Error => new NetworkError('Connection to 127.0.0.1:1 failed.', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) });

/** What the library throws, paired with the mapping the adapter must give. */
const cases: readonly [string, () => Error, { code: string; retriable: boolean }][] = [
  ['connection refused', refused, { code: 'CEG_BROKER_UNAVAILABLE', retriable: true }],
  ['connection closed', () => new NetworkError('Connection closed'), { code: 'CEG_BROKER_UNAVAILABLE', retriable: true }],
  ['request timed out (client side)', () => new TimeoutError('Request timed out'), { code: 'CEG_DELIVERY_TIMEOUT', retriable: true }],
  ['REQUEST_TIMED_OUT (broker side)', () => new ProtocolError('REQUEST_TIMED_OUT'), { code: 'CEG_DELIVERY_TIMEOUT', retriable: true }],
  ['leader moved', () => new ProtocolError('NOT_LEADER_OR_FOLLOWER'), { code: 'CEG_BROKER_UNAVAILABLE', retriable: true }],
  ['unknown topic (broker)', () => new ProtocolError('UNKNOWN_TOPIC_OR_PARTITION'), { code: 'CEG_INVALID_NAME', retriable: false }],
  ['unknown topic (library metadata)', () => new UserError('Unknown topic orders-x.'), { code: 'CEG_INVALID_NAME', retriable: false }],
  ['record too large', () => new ProtocolError('MESSAGE_TOO_LARGE'), { code: 'CEG_PAYLOAD_TOO_LARGE', retriable: false }],
  ['not authorized (the library says canRetry false)', () => new ProtocolError('TOPIC_AUTHORIZATION_FAILED'), { code: 'CEG_BROKER_UNAVAILABLE', retriable: false }],
  ['an unknown error', () => new Error('something else'), { code: 'CEG_BROKER_UNAVAILABLE', retriable: false }],
];

/** The library's wrappers: a retried operation's MultipleErrors, and an error's `cause`. */
type Wrap = { kind: 'multiple'; siblings: number } | { kind: 'cause' };
const wrap = (inner: Error, w: Wrap): Error =>
  w.kind === 'multiple'
    ? new MultipleErrors('Produce failed 3 times.', [...Array.from({ length: w.siblings }, () => inner), inner])
    : new Error('wrapped', { cause: inner });
const wraps = fc.array(fc.oneof(fc.record({ kind: fc.constant('multiple' as const), siblings: fc.integer({ min: 0, max: 2 }) }), fc.record({ kind: fc.constant('cause' as const) })), { maxLength: 4 });

describe('fromPlatformaticError', () => {
  it.each(cases)('%s → the same code and retriable flag however deeply it is wrapped', (_name, make, expected) => {
    fc.assert(
      fc.property(wraps, (ws) => {
        const err = ws.reduce(wrap, make());
        const mapped = fromPlatformaticError(err, { operation: 'produce', topic: 't' });
        expect({ code: mapped.code, retriable: mapped.retriable }).toEqual(expected);
        expect(mapped.details).toMatchObject({ operation: 'produce', topic: 't' });
        expect(mapped.cause).toBe(err);
      }),
      { numRuns: 30 },
    );
  });

  it('a broker answer with per-partition errors (ResponseError) maps by its worst partition: too large is not retried', () => {
    const err = new ResponseError(0, 9, { '/responses/0/partitions/0': [CODE.NOT_LEADER_OR_FOLLOWER, null], '/responses/0/partitions/1': [CODE.MESSAGE_TOO_LARGE, null] }, {});
    expect(fromPlatformaticError(err, {})).toMatchObject({ code: 'CEG_PAYLOAD_TOO_LARGE', retriable: false });
  });

  it('a GatewayError passes through unchanged', () => {
    const g = new GatewayError('CEG_CLOSED', 'closed', { retriable: false });
    expect(fromPlatformaticError(g, {})).toBe(g);
  });
});

describe('producerStateLost', () => {
  it.each(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID'] as const)('%s in a Produce answer, however wrapped, means a new producer id is needed', (id) => {
    fc.assert(
      fc.property(wraps, (ws) => {
        const answer = new ResponseError(0, 9, { '/responses/0/partitions/1': [CODE[id], null] }, {});
        expect(producerStateLost(ws.reduce(wrap, answer))).toBe(true);
      }),
      { numRuns: 30 },
    );
  });

  it('connection and timeout failures do not', () => {
    expect(producerStateLost(new MultipleErrors('Produce failed 3 times.', [refused(), new TimeoutError('Request timed out')]))).toBe(false);
    expect(producerStateLost(new ProtocolError('REQUEST_TIMED_OUT'))).toBe(false);
  });
});

describe('quietDuringOutage (the platformatic adapter logs through it)', () => {
  function recorder(): { logger: TransportLogger; lines: [string, string][] } {
    const lines: [string, string][] = [];
    const at = (level: string) => (_obj: Record<string, unknown>, msg: string): void => void lines.push([level, msg]);
    return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
  }

  it('a connection failure starts the outage with one warn line; warn and error lines meanwhile go to debug; the end is one info line', () => {
    const { logger, lines } = recorder();
    const outage = new BrokerOutage(logger, { logDelayMs: 0 });
    const log = quietDuringOutage(logger, outage);
    log.warn({ group: 'g', err: 'Connection to 127.0.0.1:1 failed.' }, 'kafka fetch failed');
    for (let i = 0; i < 10; i++) log.warn({ group: 'g', err: 'Produce failed 3 times.' }, 'kafka fetch failed');
    log.error({ group: 'g' }, 'kafka consumer could not rejoin its group');
    log.info({}, 'created topics');
    outage.ok();
    expect(lines.filter(([level]) => level !== 'debug')).toEqual([
      ['warn', 'kafka: broker unreachable; clients keep retrying (logged again when it answers)'],
      ['info', 'created topics'],
      ['info', 'kafka: broker reachable again'],
    ]);
    expect(lines.filter(([level]) => level === 'debug')).toHaveLength(12);
  });

  it('without an outage, a warn line that is not about the connection passes unchanged', () => {
    const { logger, lines } = recorder();
    const outage = new BrokerOutage(logger);
    quietDuringOutage(logger, outage).warn({ group: 'g', err: 'REBALANCE_IN_PROGRESS' }, 'offset commit failed (the records come again)');
    expect(lines).toEqual([['warn', 'offset commit failed (the records come again)']]);
    expect(outage.down).toBe(false);
  });
});
