/**
 * The CLI's broker deadline (break report D4): `--broker-timeout`, CE_GATEWAY_BROKER_TIMEOUT_MS,
 * the clients' timeouts under it, and the wait for the broker's first answer.
 */
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { BROKER_TIMEOUT_VARIABLE, DEFAULT_BROKER_TIMEOUT_MS, awaitBroker, brokerTimeoutMs, brokerTimeoutOption, cliKafkaTimeouts, noAnswerMessage } from '../../../src/cli/broker-deadline.js';
import type { HealthFailure } from '../../../src/transport/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { MAX_TIMER_MS } from '../../../src/core/timer-limit.js';

describe('--broker-timeout', () => {
  it('takes whole milliseconds from 1 to the longest timer', () => {
    expect(brokerTimeoutOption('5000')).toBe(5000);
    expect(brokerTimeoutOption(' 1 ')).toBe(1);
    expect(brokerTimeoutOption(String(MAX_TIMER_MS))).toBe(MAX_TIMER_MS);
    for (const bad of ['0', '-5', '1e3', '10abc', '', '2.5', String(MAX_TIMER_MS + 1)]) expect(() => brokerTimeoutOption(bad), bad).toThrow(InvalidArgumentError);
  });
});

describe('brokerTimeoutMs', () => {
  it('is the option, else the variable, else 30000', () => {
    expect(DEFAULT_BROKER_TIMEOUT_MS).toBe(30_000);
    expect(brokerTimeoutMs(undefined, {})).toBe(30_000);
    expect(brokerTimeoutMs(undefined, { [BROKER_TIMEOUT_VARIABLE]: '' })).toBe(30_000);
    expect(brokerTimeoutMs(undefined, { [BROKER_TIMEOUT_VARIABLE]: '7000' })).toBe(7000);
    expect(brokerTimeoutMs(2000, { [BROKER_TIMEOUT_VARIABLE]: '7000' })).toBe(2000);
  });

  it('refuses a variable that is no whole number of ms, naming it', () => {
    for (const bad of ['0', 'soon', '30s', '-1']) {
      let caught: unknown;
      try {
        brokerTimeoutMs(undefined, { [BROKER_TIMEOUT_VARIABLE]: bad });
      } catch (err) {
        caught = err;
      }
      expect(caught, bad).toBeInstanceOf(GatewayError);
      expect((caught as GatewayError).code).toBe('CEG_INVALID_OPTIONS');
      expect((caught as GatewayError).message).toContain(BROKER_TIMEOUT_VARIABLE);
    }
  });
});

describe('cliKafkaTimeouts', () => {
  it('connects within min(3000, deadline) and holds requests to 5000–30000 ms', () => {
    expect(cliKafkaTimeouts(30_000)).toEqual({ connectionTimeoutMs: 3000, requestTimeoutMs: 30_000 });
    expect(cliKafkaTimeouts(10_000)).toEqual({ connectionTimeoutMs: 3000, requestTimeoutMs: 10_000 });
    expect(cliKafkaTimeouts(1000)).toEqual({ connectionTimeoutMs: 1000, requestTimeoutMs: 5000 });
    expect(cliKafkaTimeouts(600_000)).toEqual({ connectionTimeoutMs: 3000, requestTimeoutMs: 30_000 });
  });
});

describe('awaitBroker', () => {
  it('resolves once the broker answers, after probes that said no', async () => {
    let asked = 0;
    expect(await awaitBroker({ isHealthy: () => Promise.resolve(++asked >= 3) }, ['127.0.0.1:9092'], 60_000)).toBe(true);
    expect(asked).toBe(3);
  });

  it('resolves false, without an error, when stopped before an answer (the command ended first)', async () => {
    const stop = new AbortController();
    const waiting = awaitBroker({ isHealthy: () => new Promise<boolean>(() => undefined) }, ['127.0.0.1:1234'], 60_000, { stop: stop.signal });
    stop.abort();
    expect(await waiting).toBe(false);
  });

  it('rejects naming the broker and the deadline when a probe never returns (a frozen broker)', async () => {
    const err: unknown = await awaitBroker({ isHealthy: () => new Promise<boolean>(() => undefined) }, ['127.0.0.1:1234'], 50).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_BROKER_UNAVAILABLE');
    expect((err as GatewayError).message).toBe(noAnswerMessage(['127.0.0.1:1234'], 50));
    expect((err as GatewayError).message).toMatch(/^kafka: no answer from 127\.0\.0\.1:1234 within 50 ms \(--broker-timeout or CE_GATEWAY_BROKER_TIMEOUT_MS\)/);
  });

  it('rejects when every probe says no until the deadline, naming what set it', async () => {
    const err: unknown = await awaitBroker({ isHealthy: () => Promise.resolve(false) }, ['a:1', 'b:2'], 50, { bound: '--timeout' }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^kafka: no answer from a:1,b:2 within 50 ms \(--timeout\)/);
  });

  // Break report D3: the probe's reason, which a deadline shorter than the client's own report hid.
  const SASL = 'health check: the broker refused the SASL login (SASL_AUTHENTICATION_FAILED): check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD(_FILE) and KAFKA_SASL_MECHANISM; retrying cannot help';

  it('ends at once, with the reason, when a probe failed for a reason retrying cannot mend (refused credentials)', async () => {
    let asked = 0;
    const transport = { isHealthy: () => Promise.resolve(++asked > 1000), lastHealthFailure: (): HealthFailure => ({ message: SASL, retriable: false }) };
    const err: unknown = await awaitBroker(transport, ['127.0.0.1:19094'], 60_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_BROKER_UNAVAILABLE');
    expect((err as GatewayError).retriable).toBe(false);
    expect((err as GatewayError).message).toBe(`kafka: 127.0.0.1:19094: ${SASL}`);
    expect(asked).toBe(1);
  });

  it('ends with the reason while a probe still lasts (the client retrying a refused login), not at the deadline', async () => {
    let failure: HealthFailure | undefined;
    const transport = {
      isHealthy: () => {
        setTimeout(() => (failure = { message: SASL, retriable: false }), 10);
        return new Promise<boolean>(() => undefined);
      },
      lastHealthFailure: () => failure,
    };
    const err: unknown = await awaitBroker(transport, ['127.0.0.1:19094'], 600_000).catch((e: unknown) => e);
    expect((err as GatewayError).message).toBe(`kafka: 127.0.0.1:19094: ${SASL}`);
  });

  it('keeps probing on a retriable failure, and the deadline\'s message carries the latest reason', async () => {
    let asked = 0;
    const transport = { isHealthy: () => Promise.resolve(false), lastHealthFailure: (): HealthFailure => ({ message: `health check: connect ECONNREFUSED 127.0.0.1:1 (${++asked})`, retriable: true }) };
    const err: unknown = await awaitBroker(transport, ['127.0.0.1:1'], 600).catch((e: unknown) => e);
    expect((err as GatewayError).retriable).toBe(true);
    const message = (err as GatewayError).message;
    expect(message.startsWith(`${noAnswerMessage(['127.0.0.1:1'], 600)}; last error: health check: connect ECONNREFUSED 127.0.0.1:1 (`)).toBe(true);
    expect(message).toContain(`(${asked})`);
  });

  it('the deadline\'s last error carries the listener hint for what the client lacks (a TLS listener closing on plain Kafka)', async () => {
    const transport = { isHealthy: () => Promise.resolve(false), lastHealthFailure: (): HealthFailure => ({ message: 'health check: Connection closed', retriable: true }) };
    const err: unknown = await awaitBroker(transport, ['127.0.0.1:19095'], 300, { security: { ssl: false, sasl: false } }).catch((e: unknown) => e);
    expect((err as Error).message).toBe(`${noAnswerMessage(['127.0.0.1:19095'], 300)}; last error: health check: Connection closed (the broker closed the connection: is this a TLS or SASL listener? It drops a client without KAFKA_SSL=true or KAFKA_SASL_MECHANISM. Check the port and KAFKA_SSL and KAFKA_SASL_MECHANISM)`);
  });

  it('the deadline\'s message says nothing more when no probe reported a reason', async () => {
    const err: unknown = await awaitBroker({ isHealthy: () => Promise.resolve(false), lastHealthFailure: () => undefined }, ['a:1'], 50).catch((e: unknown) => e);
    expect((err as Error).message).toBe(noAnswerMessage(['a:1'], 50));
  });
});
