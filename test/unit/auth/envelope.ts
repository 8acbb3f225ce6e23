/** A minimal envelope for authorization checks (only `type` and `source` matter there). */
import type { Envelope } from '../../../src/envelope/index.js';

export function envelopeOf(type: string, source: string): Envelope {
  return { attributes: { specversion: '1.0', id: 'e-1', source, type }, data: undefined } as unknown as Envelope;
}
