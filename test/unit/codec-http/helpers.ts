import type { GatewayError } from '../../../src/core/errors.js';
import type { Violation } from '../../../src/envelope/index.js';
export { caught } from '../../helpers/errors.js';

/** Runs fn, expects a GatewayError, returns it. */

export function violations(err: GatewayError): Violation[] {
  return err.details.violations as Violation[];
}

export const ceHeaders = {
  'ce-specversion': '1.0',
  'ce-id': 'evt-1',
  'ce-source': 'urn:caishen:pdsp:host-1',
  'ce-type': 'com.caishen.bar.closed',
} as const;

export const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v), 'utf8');
