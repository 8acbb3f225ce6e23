import { describe, expect, it } from 'vitest';
import { jsonView } from '../../../src/connectors/index.js';
import { createEnvelope } from '../../helpers/envelope.js';
import { priceEvent } from './helpers.js';

describe('jsonView', () => {
  it('shows data decoded from Avro as application/json, keeping every other attribute', () => {
    const avro = priceEvent({ datacontenttype: 'application/avro' });
    const v = jsonView(avro);
    expect(v.attributes).toEqual({ ...avro.attributes, datacontenttype: 'application/json' });
    expect(v.data).toBe(avro.data);
    expect(Object.isFrozen(v.attributes)).toBe(true);
  });

  it('leaves JSON media types, text carried as a string, binary data and no data alone', () => {
    const json = priceEvent({ datacontenttype: 'application/vnd.x+json' });
    expect(jsonView(json)).toBe(json);
    const text = createEnvelope({ source: 'urn:x', type: 't', datacontenttype: 'text/plain' }, { kind: 'json', value: 'hello' });
    expect(jsonView(text)).toBe(text);
    const bytes = createEnvelope({ source: 'urn:x', type: 't', datacontenttype: 'application/avro' }, { kind: 'binary', bytes: new Uint8Array([0, 1]) });
    expect(jsonView(bytes)).toBe(bytes);
    const none = createEnvelope({ source: 'urn:x', type: 't' });
    expect(jsonView(none)).toBe(none);
  });
});
