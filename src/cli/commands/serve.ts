import type { Command } from 'commander';
import { createGateway } from '../../app/index.js';
import { onSignals, setup } from '../context.js';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP gateway (POST /events, /readyz, /metrics); Kafka and the registry from KAFKA_BROKERS / SCHEMA_REGISTRY_URL, in-memory when unset')
    .action(async () => {
      const { config, log } = setup(program);
      const gw = createGateway(config, log);
      const addr = await gw.listen();
      log.info({ url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`, transport: gw.transport.kind }, 'listening');
      onSignals(() => gw.close(), log);
    });
}
