/**
 * `npm run stack:up | stack:down | stack:status | stack:reset`. `up` (and `reset`: down, delete
 * the state, up) prints the settings as KEY=value lines on stdout (progress goes to stderr), the
 * same variables the gateway reads, a URL without its user:password (publicUrl; the env file has it whole).
 */
import { publicUrl } from '../../src/core/public-url.js';
import { stackConfig, stackDown, stackReset, stackStatus, stackUp } from './index.js';

async function main(cmd: string | undefined): Promise<number> {
  switch (cmd) {
    case 'up':
    case 'reset': {
      const progress = (l: string): void => void process.stderr.write(`stack: ${l}\n`);
      const env = await (cmd === 'up' ? stackUp(progress) : stackReset(progress));
      for (const [k, v] of Object.entries(env)) process.stdout.write(`${k}=${publicUrl(v)}\n`);
      process.stderr.write(`stack: ready (settings saved in ${stackConfig().envFile}; npm start and npm test read them)\n`);
      return 0;
    }
    case 'down':
      await stackDown();
      process.stderr.write('stack: stopped (data kept in .stack/; `npm run stack:reset` starts it again with none)\n');
      return 0;
    case 'status': {
      const s = await stackStatus();
      for (const [k, v] of Object.entries(s)) process.stdout.write(`${k}: ${v ? 'up' : 'down'}\n`);
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
