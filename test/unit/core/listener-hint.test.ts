/**
 * core/tls-errors listenerHint: a Kafka connection the broker closed while the client lacks TLS
 * or a SASL login names what the listener may want; a TLS hello a plain listener dropped keeps
 * its own hint; nothing for other errors or a client that has both.
 */
import { describe, expect, it } from 'vitest';
import { listenerHint } from '../../../src/core/tls-errors.js';

const plain = { ssl: false, sasl: false };

describe('listenerHint', () => {
  it('names TLS and SASL for a plain client whose connection was closed, in either client library\'s words', () => {
    for (const text of ['connect: Closed connection', 'ensureTopics: metadata failed 6 times. (Connection closed)']) {
      expect(listenerHint(text, plain)).toBe('the broker closed the connection: is this a TLS or SASL listener? It drops a client without KAFKA_SSL=true or KAFKA_SASL_MECHANISM. Check the port and KAFKA_SSL and KAFKA_SASL_MECHANISM');
    }
  });

  it('names only what the client lacks', () => {
    expect(listenerHint('Closed connection', { ssl: true, sasl: false })).toBe('the broker closed the connection: is this a SASL listener? It drops a client without KAFKA_SASL_MECHANISM. Check the port and KAFKA_SASL_MECHANISM');
    expect(listenerHint('Closed connection', { ssl: false, sasl: true })).toBe('the broker closed the connection: is this a TLS listener? It drops a client without KAFKA_SSL=true. Check the port and KAFKA_SSL');
    expect(listenerHint('Closed connection', { ssl: true, sasl: true })).toBeUndefined();
  });

  it('keeps the TLS-hello hint, and says nothing of other errors', () => {
    expect(listenerHint('Client network socket disconnected before secure TLS connection was established', { ssl: true, sasl: false })).toMatch(/with KAFKA_SSL=true, is this a TLS listener\?/);
    for (const text of ['connect ECONNREFUSED 127.0.0.1:1', 'Request timed out', 'This server is not the leader for that topic-partition', 'enclosed connections']) {
      expect(listenerHint(text, plain), text).toBeUndefined();
    }
  });
});
