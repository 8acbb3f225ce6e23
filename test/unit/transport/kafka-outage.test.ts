/**
 * Issue 15 "Logs": a broker outage is logged once when it starts and once when it ends; while it
 * lasts, kafkajs's per-retry error lines (with their stack traces) go to debug.
 */
import { logLevel } from 'kafkajs';
import { describe, expect, it, vi } from 'vitest';
import { kafkaLogCreator } from '../../../src/transport/kafka/logging.js';
import type { TransportLogger } from '../../../src/transport/kafka/logging.js';
import { BrokerOutage, OUTAGE_RECOVERY_MS, checkBrokerHealth, isConnectionTrouble } from '../../../src/transport/kafka/outage.js';
import { waitFor } from '../../helpers/wait.js';

function recorder(): { logger: TransportLogger; lines: [string, Record<string, unknown>, string][] } {
  const lines: [string, Record<string, unknown>, string][] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string): void => void lines.push([level, obj, msg]);
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

const refused = (broker = '127.0.0.1:1') => ({
  namespace: 'Connection', level: logLevel.ERROR, label: 'ERROR',
  log: { timestamp: 't', message: 'Connection error: connect ECONNREFUSED 127.0.0.1:1', broker, stack: 'Error: connect ECONNREFUSED 127.0.0.1:1\n    at TCPConnectWrap.afterConnect' },
});
const seed = { namespace: 'BrokerPool', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message: 'Failed to connect to seed broker, trying another broker from the list: Connection error: connect ECONNREFUSED 127.0.0.1:1', retryCount: 0 } };

describe('broker outage in the log', () => {
  it('a rejoin of any group during an outage or its recovery (OUTAGE_RECOVERY_MS after its end) goes to debug; a later one to info', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const { logger, lines } = recorder();
      const outage = new BrokerOutage(logger, { logDelayMs: 0 });
      const log = kafkaLogCreator(logger, {}, outage)(logLevel.INFO);
      const rejoin = (groupId: string): void => log({ namespace: 'Runner', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message: 'The coordinator is not aware of this member, re-joining the group', groupId } });
      const infoRejoins = (): number => lines.filter(([level, , msg]) => level === 'info' && /re-joining/.test(msg)).length;
      expect(outage.recovering).toBe(false);
      outage.failed('health check: no answer within 5000 ms', Date.now());
      expect(outage.recovering).toBe(true);
      rejoin('g0');
      vi.setSystemTime(Date.now() + 25_000);
      outage.ok();
      for (const g of ['g1', 'g2', 'g3']) rejoin(g); // one per group after the outage: 300 subscriptions, 300 lines
      vi.setSystemTime(Date.now() + OUTAGE_RECOVERY_MS - 1);
      rejoin('g4');
      expect(outage.recovering).toBe(true);
      expect(infoRejoins()).toBe(0);
      expect(lines.filter(([level, , msg]) => level === 'debug' && /re-joining/.test(msg))).toHaveLength(5);
      vi.setSystemTime(Date.now() + 1);
      expect(outage.recovering).toBe(false);
      rejoin('g1'); // a rebalance of its own, not the outage's
      expect(infoRejoins()).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("an outage whose reason says TLS was never set up carries a hint naming KAFKA_SSL; another has none", () => {
    for (const [reason, hinted] of [['Connection error: Client network socket disconnected before secure TLS connection was established', true], ['Connection error: connect ECONNREFUSED 127.0.0.1:1', false]] as const) {
      const { logger, lines } = recorder();
      const outage = new BrokerOutage(logger, { logDelayMs: 0 });
      outage.failed(reason, Date.now());
      const warned = lines.filter(([level]) => level === 'warn');
      expect(warned).toHaveLength(1);
      if (hinted) expect(warned[0]![1].hint).toMatch(/is this a TLS listener\? Check KAFKA_SSL and the port/);
      else expect(warned[0]![1]).not.toHaveProperty('hint');
      outage.close();
    }
  });

  it('40 failed connection attempts of several clients give one warn line; the end gives one info line', () => {
    const { logger, lines } = recorder();
    const outage = new BrokerOutage(logger, { base: { transport: 'kafka' }, logDelayMs: 0 });
    const clients = [kafkaLogCreator(logger, { clientId: 'a' }, outage)(logLevel.WARN), kafkaLogCreator(logger, { clientId: 'b' }, outage)(logLevel.WARN)];
    for (let i = 0; i < 20; i++) for (const c of clients) c(i % 2 === 0 ? refused() : seed);
    expect(outage.down).toBe(true);
    outage.ok();
    outage.ok(); // no outage any more: nothing
    const visible = lines.filter(([level]) => level !== 'debug');
    expect(visible.map(([level, , msg]) => [level, msg])).toEqual([
      ['warn', 'kafka: broker unreachable; clients keep retrying (logged again when it answers)'],
      ['info', 'kafka: broker reachable again'],
    ]);
    expect(visible[1]![1].failuresSuppressed).toBe(39);
    expect(lines.filter(([level]) => level === 'debug')).toHaveLength(40);
  });

  it('a request that hung through an outage and fails after its end starts no second outage; a request sent after the end does', () => {
    const { logger, lines } = recorder();
    const outage = new BrokerOutage(logger, { logDelayMs: 0 });
    const sentBefore = Date.now() - 1;
    outage.failed('a produce request has had no answer', sentBefore);
    outage.ok();
    outage.failed('produce: Request timed out', sentBefore); // stale: sent before the answer that ended it
    outage.failed('kafka fetch failed: Connection closed'); // start unknown, right after the end: presumed stale
    expect(outage.down).toBe(false);
    outage.failed('produce: Connection closed', Date.now() + 1); // sent after the end: a new outage
    expect(outage.down).toBe(true);
    expect(lines.filter(([, , msg]) => /broker unreachable/.test(msg))).toHaveLength(2);
    expect(lines.filter(([, , msg]) => /reachable again/.test(msg))).toHaveLength(1);
  });

  it('a failure answered within logDelayMs writes no line above debug; one that lasts writes the warn line once, then the info line at its end', async () => {
    const { logger, lines } = recorder();
    const outage = new BrokerOutage(logger, { logDelayMs: 50 });
    outage.failed('produce: Connection closed', Date.now());
    expect(outage.down).toBe(true);
    outage.ok(); // its retry was answered: a blip
    await new Promise((r) => setTimeout(r, 100));
    expect(lines.filter(([level]) => level !== 'debug')).toEqual([]);
    expect(lines.map(([, , msg]) => msg)).toEqual(['kafka: a failed request was answered on its retry (no outage)']);
    outage.failed('produce: Connection closed', Date.now() + 1);
    await waitFor('the warn line', () => lines.some(([level]) => level === 'warn'), 2000, 5);
    outage.failed('produce: Connection closed', Date.now() + 1); // counted, no second line
    outage.ok();
    expect(lines.filter(([level]) => level !== 'debug').map(([level, , msg]) => [level, msg])).toEqual([
      ['warn', 'kafka: broker unreachable; clients keep retrying (logged again when it answers)'],
      ['info', 'kafka: broker reachable again'],
    ]);
  });

  it('an error that is not about reaching the broker is logged as before', () => {
    const { logger, lines } = recorder();
    const outage = new BrokerOutage(logger);
    kafkaLogCreator(logger, {}, outage)(logLevel.WARN)({ namespace: 'Consumer', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message: 'Crash: KafkaJSProtocolError: The group member\'s supported protocols are incompatible' } });
    expect(outage.down).toBe(false);
    expect(lines.map(([level]) => level)).toEqual(['error']);
  });

  it('recognises refused, reset and timed-out connections', () => {
    for (const m of ['connect ECONNREFUSED 10.0.0.1:9092', 'Connection timeout', 'Request Produce(key: 0, version: 7) timed out', 'Closed connection', 'KafkaJSNumberOfRetriesExceeded']) expect(isConnectionTrouble(m, {}), m).toBe(true);
    expect(isConnectionTrouble('Crash', { stack: 'Error: read ECONNRESET' })).toBe(true);
    expect(isConnectionTrouble('This server does not host this topic-partition', {})).toBe(false);
  });

  it('while down, a probe notices the end even when nothing else talks to the broker', async () => {
    const { logger, lines } = recorder();
    let up = false;
    let probes = 0;
    const outage = new BrokerOutage(logger, { logDelayMs: 0, probeIntervalMs: 10, probe: () => Promise.resolve((probes++, up)) });
    outage.failed('health check: no answer');
    await waitFor('a few probes', () => probes >= 3, 2000, 5);
    expect(outage.down).toBe(true);
    up = true;
    await waitFor('the end of the outage', () => !outage.down, 2000, 5);
    expect(lines.map(([level]) => level)).toEqual(['warn', 'info']);
    outage.close();
  });
});

describe('the health check\'s failure (lastHealthFailure, break report D3)', () => {
  const o = (logger: TransportLogger) => ({ requestTimeoutMs: 5000, logger, base: {} });

  it('keeps why the latest check failed, not retriable for a refused login or an untrusted certificate; clears it on an answer', async () => {
    const { logger } = recorder();
    const outage = new BrokerOutage(logger, { logDelayMs: 0 });
    expect(outage.lastHealthFailure).toBeUndefined();
    const login = Object.assign(new Error('SASL SCRAM SHA512 authentication failed: invalid credentials'), { name: 'KafkaJSSASLAuthenticationError' });
    expect(await checkBrokerHealth(outage, () => Promise.reject(login), o(logger))).toBe(false);
    expect(outage.lastHealthFailure?.retriable).toBe(false);
    expect(outage.lastHealthFailure?.message).toBe('health check: SASL SCRAM SHA512 authentication failed: invalid credentials');
    const tls = Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    expect(await checkBrokerHealth(outage, () => Promise.reject(tls), { ...o(logger), describe: (e) => `described: ${(e as Error).message}` })).toBe(false);
    expect(outage.lastHealthFailure).toEqual({ message: 'described: self-signed certificate in certificate chain', retriable: false });
    const refusedConnect = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(await checkBrokerHealth(outage, () => Promise.reject(refusedConnect), o(logger))).toBe(false);
    expect(outage.lastHealthFailure).toEqual({ message: 'health check: connect ECONNREFUSED 127.0.0.1:1', retriable: true });
    expect(await checkBrokerHealth(outage, () => Promise.resolve(), o(logger))).toBe(true);
    expect(outage.lastHealthFailure).toBeUndefined();
  });

  it('a failure a client reports while it retries (kafkajs\'s log line) is the latest until the next check ends', () => {
    const { logger } = recorder();
    const outage = new BrokerOutage(logger, { logDelayMs: 0 });
    kafkaLogCreator(logger, {}, outage)(logLevel.WARN)(refused());
    expect(outage.lastHealthFailure?.retriable).toBe(true);
    expect(outage.lastHealthFailure?.message).toMatch(/^kafka: .*ECONNREFUSED/);
  });

  it("kafkajs's line for a connect whose certificate check failed (text only, no code) is not retriable and names the check", () => {
    const { logger } = recorder();
    const outage = new BrokerOutage(logger, { logDelayMs: 0 });
    const text = 'Failed to connect to seed broker, trying another broker from the list: Connection error: self-signed certificate in certificate chain';
    kafkaLogCreator(logger, {}, outage)(logLevel.ERROR)({ ...seed, log: { ...seed.log, message: text } });
    expect(outage.lastHealthFailure).toEqual({ message: 'kafka: TLS certificate not trusted (SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain): check KAFKA_SSL_CA_FILE and the broker address; retrying cannot help', retriable: false });
    // The next outage line replaces it (a CA fixed and the broker restarted is a new story).
    kafkaLogCreator(logger, {}, outage)(logLevel.ERROR)(seed);
    expect(outage.lastHealthFailure?.retriable).toBe(true);
  });
});
