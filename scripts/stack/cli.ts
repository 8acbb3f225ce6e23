/**
 * `npm run stack:up | stack:down | stack:status | stack:reset`. `up` (and `reset`: down, delete
 * the state, up) prints the settings as KEY=value lines on stdout (progress goes to stderr), the
 * same variables the gateway reads, a URL without its user:password (publicUrl; the env file has it whole).
 */
import { resolve } from 'node:path';
import { publicUrl } from '../../src/core/public-url.js';
import { stackConfig, stackDown, stackReset, stackStatus, stackStatusNote, stackUp } from './index.js';

async function main(cmd: string | undefined): Promise<number> {
  switch (cmd) {
    case 'up':
    case 'reset': {
      const progress = (l: string): void => void process.stderr.write(`stack: ${l}\n`);
      const env = await (cmd === 'up' ? stackUp(progress) : stackReset(progress));
      for (const [k, v] of Object.entries(env)) process.stdout.write(`${k}=${publicUrl(v)}\n`);
      const c = stackConfig();
      // The gateway and the CLI read ./.stack/env of the folder they run in, or CE_GATEWAY_ENV_FILE (src/config/env-file.ts).
      const readByDefault = resolve(c.envFile) === resolve(process.cwd(), '.stack', 'env');
      process.stderr.write(
        readByDefault
          ? `stack: ready (settings saved in ${c.envFile}; npm start and npm test run here read them)\n`
          : `stack: ready (settings saved in ${c.envFile}, outside ./.stack/: set CE_GATEWAY_ENV_FILE=${c.envFile} for npm start and the CLI to read them)\n`,
      );
      return 0;
    }
    case 'down':
      await stackDown();
      process.stderr.write(`stack: stopped (data kept in ${stackConfig().stateDir}${stackConfig().postgres.dataDir.startsWith(stackConfig().stateDir) ? '' : ` and ${stackConfig().postgres.dataDir}`}; \`npm run stack:reset\` starts it again with none)\n`);
      return 0;
    case 'status': {
      const s = await stackStatus();
      for (const [k, v] of Object.entries(s)) process.stdout.write(`${k}: ${v ? 'up' : 'down'}\n`);
      const note = await stackStatusNote();
      if (note !== undefined) process.stderr.write(`stack: ${note}\n`);
      return Object.values(s).every(Boolean) ? 0 : 1;
    }
    default:
      process.stderr.write('usage: stack (up|down|status|reset)\n');
      return 2;
  }
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`stack: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
