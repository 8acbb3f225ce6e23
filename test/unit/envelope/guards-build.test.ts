import { describe, expect, it } from 'vitest';
import {
  assertHeaderSafe,
  createEnvelope,
  freezeEnvelope,
  newEventId,
  withAttributes,
} from '../../../src/envelope/index.js';
import type { Envelope } from '../../../src/envelope/index.js';
import { caught } from '../../helpers/errors.js';

describe('assertHeaderSafe', () => {
  it('accepts ordinary and unicode values up to 8 KiB', () => {
    expect(() => assertHeaderSafe('abc € 😀')).not.toThrow();
    expect(() => assertHeaderSafe('a'.repeat(8192))).not.toThrow();
  });

  it.each(['a\rb', 'a\nb', 'a\0b', 'a'.repeat(8193), '€'.repeat(2731)])('refuses an unsafe value (%#)', (value) => {
    const err = caught(() => assertHeaderSafe(value, 'x-sig'));
    expect(err.code).toBe('CEG_INVALID_NAME');
    expect(err.details.header).toBe('x-sig');
  });
});

describe('newEventId / createEnvelope', () => {
  it('makes distinct UUIDs', () => {
    const a = newEventId();
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(newEventId()).not.toBe(a);
  });

  it('fills specversion, id and time (UTC, ms, Z) and freezes', () => {
    const env = createEnvelope(
      { type: 'com.caishen.bar.closed', source: 'urn:caishen:pdsp:host-1', correlationid: 'c-1', schemaversion: 2, subject: undefined },
      { kind: 'json', value: { bar: { close: 1.1 } } },
      Date.UTC(2024, 4, 1, 12),
    );
    expect(env.attributes).toEqual({
      specversion: '1.0',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      type: 'com.caishen.bar.closed',
      source: 'urn:caishen:pdsp:host-1',
      correlationid: 'c-1',
      schemaversion: 2,
      time: '2024-05-01T12:00:00.000Z',
    });
    expect('subject' in env.attributes).toBe(false);
    expect(Object.isFrozen(env)).toBe(true);
    expect(Object.isFrozen(env.attributes)).toBe(true);
    expect(Object.isFrozen(env.data)).toBe(true);
    const value = (env.data as unknown as { value: { bar: object } }).value;
    expect(Object.isFrozen(value.bar)).toBe(true);
  });

  it('keeps a given id and time verbatim', () => {
    const env = createEnvelope({ type: 't', source: 's', id: 'fixed', time: '2024-05-01T14:00:00+02:00' });
    expect(env.attributes.id).toBe('fixed');
    expect(env.attributes.time).toBe('2024-05-01T14:00:00+02:00');
  });

  it('refuses an invalid emission', () => {
    const err = caught(() => createEnvelope({ type: 't', source: 's', partitionkey: 'EUR/USD' }));
    expect(err.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect(err.details.attribute).toBe('partitionkey');
  });
});

describe('withAttributes / freezeEnvelope', () => {
  const start: Envelope = freezeEnvelope({
    attributes: { specversion: '1.0', id: 'e', source: 's', type: 't', subject: 'x' },
    data: { kind: 'binary', bytes: new Uint8Array([1, 2]) },
  });

  it('adds, replaces and removes attributes, sharing data', () => {
    const next = withAttributes(start, { eventname: 'Bar closed', schemaversion: 4, subject: undefined, id: 'e2' });
    expect(next.attributes).toEqual({ specversion: '1.0', id: 'e2', source: 's', type: 't', eventname: 'Bar closed', schemaversion: 4 });
    expect(next.data).toBe(start.data);
    expect(Object.isFrozen(next.attributes)).toBe(true);
    expect(start.attributes.subject).toBe('x');
  });

  it('refuses a patch that breaks the envelope', () => {
    const err = caught(() => withAttributes(start, { schemaversion: '4' }));
    expect(err.details.attribute).toBe('schemaversion');
    expect(caught(() => withAttributes(start, { type: undefined })).code).toBe('CEG_MISSING_ATTRIBUTE');
  });
});
