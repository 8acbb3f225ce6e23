/** The GatewayError a call throws (or a promise rejects with); fails the test when there is none or another error. */
import { GatewayError } from '../../src/core/errors.js';

export function caught(fn: () => unknown, label?: string): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error(label === undefined ? 'expected a GatewayError' : `expected a GatewayError: ${label}`);
}

export async function caughtAsync(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError rejection');
}
