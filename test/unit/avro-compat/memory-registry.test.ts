import { describe, expect, it } from 'vitest';
import { createMemoryRegistry } from '../../../src/registry/index.js';

const rec = (fields: object[]): string => JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'id', type: 'string' }, ...fields] });
const dec = (scale: number): string => rec([{ name: 'p', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale } }]);

describe('in-memory registry on the spec checker', () => {
  it('answers testCompatibility at the subject level, registering nothing', async () => {
    const r = createMemoryRegistry();
    await r.setCompatibility('s', 'FULL_TRANSITIVE');
    await r.register('s', rec([{ name: 'a', type: 'int' }]));
    const widened = await r.testCompatibility!('s', rec([{ name: 'a', type: 'long' }]));
    expect(widened.compatible).toBe(false);
    expect(widened.messages).toEqual([expect.stringContaining('/fields/a: type changed from int to long — readers of version 1 (int)')]);
    expect(await r.testCompatibility!('s', rec([{ name: 'a', type: 'int' }, { name: 'b', type: ['null', 'long'], default: null }]), 'latest')).toEqual({ compatible: true, messages: [] });
    expect(await r.versions('s')).toEqual([1]);
    await expect(r.testCompatibility!('s', rec([]), 7)).rejects.toMatchObject({ code: 'CEG_SCHEMA_NOT_FOUND' });
  });

  it('behaves like a real registry where only the spec refuses (decimal scale), and names the field of a refusal', async () => {
    const r = createMemoryRegistry({ defaultCompatibility: 'FULL_TRANSITIVE' });
    await r.register('d', dec(2));
    expect((await r.register('d', dec(3))).version).toBe(2);
    await expect(r.register('d', rec([]))).rejects.toMatchObject({ code: 'CEG_SCHEMA_INCOMPATIBLE', details: expect.objectContaining({ field: '/fields/p' }) });
  });

  it('refuses an invalid schema with the field path before registering', async () => {
    const r = createMemoryRegistry();
    await expect(r.register('v', rec([{ name: 'n', type: ['null', 'int'], default: 1 }]))).rejects.toMatchObject({ code: 'CEG_SCHEMA_INVALID', details: expect.objectContaining({ field: '/fields/n' }) });
    expect(await r.versions('v')).toEqual([]);
  });
});
