import { afterEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { buildHookEnv, parseConnectorText } from '../../../src/connectors/index.js';
import { createEnvelope } from '../../helpers/envelope.js';
import { PRICE_LOADING_COMPLETED } from '../../fixtures/events.js';
import { delivery, priceEvent, shellHookOptions } from './helpers.js';

const settings = { path: '/usr/bin:/bin', vars: { LANG: 'C.UTF-8' } };

describe('hook environment', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  });

  it('holds PATH, the configured variables, the delivery and every attribute as CE_<NAME>, nothing else', () => {
    process.env.KAFKA_SASL_PASSWORD = 'hunter2';
    process.env.DATABASE_URL = 'postgres://u:p@h/db';
    const env = buildHookEnv(priceEvent({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', region: 'eu1' }), delivery, settings);
    expect(env).toEqual({
      LANG: 'C.UTF-8',
      PATH: '/usr/bin:/bin',
      CEG_SUBSCRIPTION: 'ops.hook',
      CEG_TOPIC: 'trading.price-loading-completed',
      CEG_PARTITION: '2',
      CEG_OFFSET: '41',
      CEG_ATTEMPT: '1',
      CE_SPECVERSION: '1.0',
      CE_ID: 'evt-1',
      CE_SOURCE: 'urn:pdsp:host-1',
      CE_TYPE: PRICE_LOADING_COMPLETED,
      CE_TIME: '2022-03-15T12:00:02.000Z',
      CE_SUBJECT: 'EUR/USD',
      CE_DATACONTENTTYPE: 'application/json',
      CE_CORRELATIONID: 'corr-1',
      CE_CAUSATIONID: 'cause-1',
      CE_EVENTNAME: 'PriceLoadingCompleted',
      CE_PARTITIONKEY: 'EUR-USD_H4',
      CE_SCHEMAVERSION: '1',
      CE_TRACEPARENT: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      CE_REGION: 'eu1',
    });
    expect(Object.values(env).join('\n')).not.toMatch(/hunter2|postgres:/);
  });

  it('sets CE_CORRELATIONID to the id of an event that starts a chain', () => {
    const e = createEnvelope({ id: 'root-1', source: 'urn:x', type: PRICE_LOADING_COMPLETED });
    const env = buildHookEnv(e, { ...delivery, attempt: 3 }, settings);
    expect(env.CE_CORRELATIONID).toBe('root-1');
    expect(env.CE_CAUSATIONID).toBeUndefined();
    expect(env.CEG_ATTEMPT).toBe('3');
  });

  it('dead-letters an event whose attribute holds NUL (the variable could not be passed)', () => {
    // createEnvelope refuses NUL, so build the frozen envelope by hand as a decoder bug might.
    const e = { attributes: Object.freeze({ ...priceEvent().attributes, subject: 'a\0b' }) };
    let err: unknown;
    try {
      buildHookEnv(e, delivery, settings);
    } catch (x) {
      err = x;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_SINK_FAILED');
    expect((err as GatewayError).retriable).toBe(false);
    expect((err as GatewayError).details).toEqual({ attribute: 'subject' });
  });

  it('never turns a malformed attribute name into a variable', () => {
    const e = { attributes: Object.freeze({ ...priceEvent().attributes, 'x=1;PATH': 'evil', LD_PRELOAD: '/tmp/x.so' }) };
    const env = buildHookEnv(e, delivery, settings);
    expect(Object.keys(env).filter((k) => /PRELOAD|=|;/.test(k))).toEqual([]);
    expect(env.PATH).toBe('/usr/bin:/bin');
  });

  it('passes named variables from the gateway environment, but refuses secret-like names and reserved ones', () => {
    const environment = { HOME: '/home/ops', TZ: 'UTC', KAFKA_SASL_PASSWORD: 'hunter2' };
    const o = shellHookOptions({ command: ['/bin/true'], passEnv: ['HOME', 'TZ', 'MISSING'], env: { MODE: 'prod', TZ: 'Europe/Berlin', RETRIES: 3, DRY: false } }, { baseDir: '/srv', environment });
    expect(o.env.vars).toEqual({ HOME: '/home/ops', TZ: 'Europe/Berlin', MODE: 'prod', RETRIES: '3', DRY: 'false' });
    expect(o.env.path).toBe('/usr/local/bin:/usr/bin:/bin');

    // The loader's own validation of a connector file, as `serve` runs it.
    const file = JSON.stringify({
      kind: 'shell-hook',
      subscription: 'ops.hook',
      kinds: ['PriceLoadingCompleted'],
      sink: { command: ['/bin/true'], passEnv: ['KAFKA_SASL_PASSWORD', 'DATABASE_URL', 'GITHUB_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'SCHEMA_REGISTRY_PASSWORD_FILE'], env: { CE_ID: 'x', PATH: '/x', 'BAD-NAME': 'v', NUL: 'a\0b' } },
    });
    const parsed = parseConnectorText(file, '/srv/hook.yaml', { environment });
    expect(parsed.ok).toBe(false);
    const problems = parsed.ok ? [] : parsed.problems;
    expect(problems.map((p) => p.path).sort()).toEqual(['sink.env.BAD-NAME', 'sink.env.CE_ID', 'sink.env.NUL', 'sink.env.PATH', 'sink.passEnv[0]', 'sink.passEnv[1]', 'sink.passEnv[2]', 'sink.passEnv[3]', 'sink.passEnv[4]']);
    expect(problems.find((p) => p.path === 'sink.passEnv[0]')!.problem).toMatch(/looks like a secret/);
  });
});
