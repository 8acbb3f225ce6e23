/**
 * Builds the process's bus from the configuration (bus spec T2): role `none` needs no broker and
 * no registry; any other role connects a gateway (without its HTTP server) and waits until its
 * topics and schemas are ready.
 */
import { loadCatalog } from '../catalog/index.js';
import { Bus } from '../bus/bus.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import { createGateway } from './gateway.js';

export async function createBus(config: Config, log: Logger): Promise<Bus> {
  if (config.role === 'none') {
    log.info('bus role none: the bus is disabled; in-process handlers still run');
    return new Bus({ role: 'none', catalog: loadCatalog(config.catalogDir), log });
  }
  const gateway = createGateway(config, log);
  await gateway.ready;
  return new Bus({
    role: config.role,
    catalog: gateway.catalog,
    log,
    remote: {
      publish: (kind, data, opts) => gateway.publisher().publish(kind, data, opts),
      subscribe: (o) => gateway.subscribe(o),
      replay: (subscription, to, opts) => gateway.replay(subscription, to, opts),
      close: () => gateway.close(),
    },
  });
}
