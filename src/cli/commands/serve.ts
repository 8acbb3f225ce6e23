import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { loadConnectors, startConnectors } from '../../connectors/index.js';
import { onSignals, setup } from '../context.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP gateway (POST /events, /readyz, /metrics); Kafka and the registry from KAFKA_BROKERS / SCHEMA_REGISTRY_URL, in-memory when unset')
    .action(async () => {
      const { config, log } = setup(program);
      // A bad connector file stops start-up before anything listens.
      const defs = config.connectorsDir === undefined ? [] : loadConnectors(config.connectorsDir);
      const gw = createGateway(config, log);
      const addr = await gw.listen();
      log.info({ url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`, transport: gw.transport.kind }, 'listening');
      const connectors = await startConnectors(gw, defs, log.child({ component: 'connectors' }), { instanceId: config.instance });
      if (connectors.running.length > 0) log.info({ connectors: connectors.running.length }, 'connectors started');
      onSignals(async () => {
        await connectors.stop();
        await gw.close();
      }, log);
    });
}
