/**
 * The stack's port settings (scripts/stack/config.ts): a misspelt `STACK_…_PORT` is refused
 * naming the known ones, rather than ignored (the stack then took another stack's default port and
 * failed with "Address already in use"); the names the stack writes to its env file (no `_PORT`
 * suffix) and the known ones pass.
 */
import { describe, expect, it } from 'vitest';
import { STACK_PORT_DEFAULTS, assertKnownPortSettings } from '../../../scripts/stack/config.js';

describe('stack port settings', () => {
  it('refuses an unknown STACK_…_PORT and names the known settings', () => {
    expect(() => assertKnownPortSettings({ STACK_CONTROLLER_PORT: '21093' })).toThrow(/unknown stack setting STACK_CONTROLLER_PORT: the port settings are STACK_KAFKA_PORT, STACK_KAFKA_CONTROLLER_PORT/);
  });

  it('takes every known port setting and the stack env file\'s own names', () => {
    const env = Object.fromEntries(Object.keys(STACK_PORT_DEFAULTS).map((k, i) => [k, String(21000 + i)]));
    expect(() => assertKnownPortSettings({ ...env, STACK_KAFKA_PID_FILE: '/x', STACK_KAFKA_SASL_BROKERS: '127.0.0.1:1', PORT: '8080' })).not.toThrow();
  });
});
