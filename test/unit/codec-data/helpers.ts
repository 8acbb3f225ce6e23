import { expect } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';

/** Runs fn, expects CEG_INVALID_DATA, returns its violations. */
export function violationsOf(fn: () => unknown): { field: string; reason: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const e = err as GatewayError;
    expect(e.code).toBe('CEG_INVALID_DATA');
    expect(e.retriable).toBe(false);
    return e.details['violations'] as { field: string; reason: string }[];
  }
  throw new Error('expected CEG_INVALID_DATA');
}

export function record(fields: object[], name = 'T'): string {
  return JSON.stringify({ type: 'record', name, namespace: 'test', fields });
}
