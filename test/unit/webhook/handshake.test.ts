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
