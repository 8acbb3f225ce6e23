import { describe, expect, it } from 'vitest';
import { DEFAULT_IDEMPOTENCY_TABLE, assertTableName } from '../../../src/bus/idempotency/index.js';

describe('idempotency table name rule', () => {
  it('accepts lowercase identifiers up to 48 characters', () => {
    for (const ok of [DEFAULT_IDEMPOTENCY_TABLE, 'a', '_x', 'orders_idem_2', 'x'.repeat(48)]) expect(() => assertTableName(ok)).not.toThrow();
  });

  it('refuses anything that would need quoting rules, a schema, or is too long for its index name', () => {
    for (const bad of ['', 'Orders', '2x', 'a-b', 'public.t', 'a b', 'a"b', "a'b", 'x'.repeat(49), 'täble']) {
      expect(() => assertTableName(bad)).toThrow(expect.objectContaining({ code: 'CEG_INVALID_OPTIONS', retriable: false, details: { field: 'table' } }) as Error);
    }
  });
});
