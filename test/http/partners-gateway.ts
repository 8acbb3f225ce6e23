/**
 * An in-memory gateway with the test partners (test/helpers/partners.ts) on a loopback port, its
 * log lines collected: the set-up of the HTTP tests of partner permissions.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';

export interface PartnersGateway {
  readonly gw: Gateway;
  readonly url: string;
  readonly setup: PartnersSetup;
  /** Log output so far, one chunk per entry (JSON lines). */
  readonly logs: readonly string[];
  close(): Promise<void>;
}

/**
 * Starts it and waits until it is ready with its subscriptions loaded. `prefix`: of its topics, unique
 * per file. `editFile`: rewrites the partners file's text before the gateway reads it.
 */
export async function startPartnersGateway(prefix: string, logLevel: 'silent' | 'info' = 'silent', editFile?: (text: string) => string): Promise<PartnersGateway> {
  const setup = partnersSetup(prefix);
  if (editFile !== undefined) writeFileSync(setup.file, editFile(readFileSync(setup.file, 'utf8')));
  process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
  const logs: string[] = [];
  const out = new PassThrough();
  out.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  const gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: logLevel, SUBSCRIPTIONS_TOPIC: `${prefix}.subscriptions`, ...setup.env }), createLogger({ level: logLevel, destination: out }));
  try {
    const addr = await gw.listen();
    await gw.ready;
    await gw.subscriptionsLoaded();
    return {
      gw,
      url: `http://127.0.0.1:${addr.port}`,
      setup,
      logs,
      close: async () => {
        await gw.close();
        setup.cleanup();
      },
    };
  } catch (err) {
    await gw.close().catch(() => undefined);
    setup.cleanup();
    throw err;
  }
}
