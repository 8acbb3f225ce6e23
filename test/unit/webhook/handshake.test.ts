/**
 * The CloudEvents webhook validation handshake's answer (`readHandshake` in
 * src/connectors/sinks/webhook/handshake.ts; CloudEvents HTTP Webhook spec §4.2): origin and the
 * granted rate in requests per minute, `*` or absent for no limit.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readHandshake } from '../../../src/connectors/sinks/webhook/handshake.js';

const ORIGIN = 'ce-gateway.example';
const answer = (rate: string | undefined) => readHandshake(200, (n) => (n === 'webhook-allowed-origin' ? ORIGIN : n === 'webhook-allowed-rate' ? rate : undefined), ORIGIN);

describe('readHandshake: WebHook-Allowed-Rate', () => {
  it('grants any positive integer, however many digits: up to nine as that rate, more as no limit', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{1,30}$/).filter((d) => /[1-9]/.test(d)), (digits) => {
        const a = answer(digits);
        expect(a.ok, digits).toBe(true);
        if (digits.replace(/^0+/, '').length <= 9) expect(a).toMatchObject({ allowedPerSecond: Number(digits) / 60 });
        else expect(a).not.toHaveProperty('allowedPerSecond');
      }),
    );
    expect(answer('99999999999')).toEqual({ ok: true, status: 200 });
    expect(answer('0000000000060')).toMatchObject({ ok: true, allowedPerSecond: 1 });
  });

  it('refuses zero and anything that is not digits or *', () => {
    for (const bad of ['0', '0000000000000', '-5', '1.5', 'fast', '1e3', '']) expect(answer(bad).ok, bad).toBe(false);
    expect(answer('*')).toEqual({ ok: true, status: 200 });
    expect(answer(undefined)).toEqual({ ok: true, status: 200 });
  });
});

describe('readHandshake: a refusal says what would pass', () => {
  // The reason is what GET …/status (lastError) and the dead letter show a partner, who has no
  // gateway log: a plain POST endpoint answers OPTIONS 404/405, and "OPTIONS answered 405" alone
  // did not say that the sink must answer the handshake or the subscription opt out of it.
  const REMEDY = `: answer OPTIONS with a 2xx and WebHook-Allowed-Origin: ${ORIGIN} (or *), or create the subscription with delivery.handshake false`;
  it.each<[string, number, string | undefined, string]>([
    ['a status outside 2xx', 405, ORIGIN, 'validation handshake refused: OPTIONS answered 405'],
    ['no WebHook-Allowed-Origin', 200, undefined, 'validation handshake: no WebHook-Allowed-Origin in the answer'],
    ['another origin', 204, 'elsewhere.example', `validation handshake: WebHook-Allowed-Origin is elsewhere.example, not ${ORIGIN}`],
  ])('%s', (_what, status, allowed, why) => {
    expect(readHandshake(status, (n) => (n === 'webhook-allowed-origin' ? allowed : undefined), ORIGIN)).toEqual({ ok: false, status, reason: `${why}${REMEDY}` });
  });
});
