/**
 * The OTLP endpoint may carry credentials (`http://user:password@collector/…`): the start-up line
 * that says where spans go names it without them (it was logged verbatim).
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { waitFor } from '../../helpers/wait.js';

describe('tracing start-up log', () => {
  it('names the OTLP endpoint without its user:password', async () => {
    let logged = '';
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        logged += chunk.toString();
        done();
      },
    });
    const gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://spans:tr4cepw@127.0.0.1:1/v1/traces' }), createLogger({ level: 'info', destination }));
    try {
      await gw.ready;
      await waitFor('the tracing line', () => logged.includes('tracing on'), 10_000);
      expect(logged).toContain('http://127.0.0.1:1/v1/traces');
      expect(logged).not.toContain('tr4cepw');
    } finally {
      await gw.close();
    }
  });
});
