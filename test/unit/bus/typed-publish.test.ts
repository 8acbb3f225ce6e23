/**
 * X1: publishers use the types generated from the model. A wrong payload for a generated kind name
 * is a compile error (checked by `npm run typecheck`, which covers test/) and, at run time, the
 * same data is refused by the codec.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED } from '../../../src/catalog/generated/index.js';
import type { PriceLoadingCompletedPayload } from '../../../src/catalog/generated/index.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

describe('typed publish', () => {
  it('takes the generated payload type for a generated kind name', async () => {
    const data: PriceLoadingCompletedPayload = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__1', barsLoaded: 3, completedAt: '2022-03-15T12:00:00Z' };
    const receipt = gw.gateway.publisher().publish(PRICE_LOADING_COMPLETED.name, data);
    expect((await receipt!.delivered).topic).toBe(PRICE_LOADING_COMPLETED.topic);
  });

  it('rejects a wrong payload at compile time and at run time', () => {
    const bad = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__1', barsLoaded: 'three', completedAt: '2022-03-15T12:00:00Z' };
    // @ts-expect-error barsLoaded is an int in the PriceLoadingCompleted schema
    expect(() => gw.gateway.publisher().publish('PriceLoadingCompleted', bad)).toThrow(expect.objectContaining({ code: 'CEG_INVALID_DATA' }));
  });
});
