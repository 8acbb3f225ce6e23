/**
 * `npm run stack:up | stack:down | stack:status`. `up` prints the settings as KEY=value lines on
 * stdout (progress goes to stderr), the same variables the gateway reads.
 */
import { stackConfig, stackDown, stackStatus, stackUp } from './index.js';

async function main(cmd: string | undefined): Promise<number> {
  switch (cmd) {
    case 'up': {
      const env = await stackUp((l) => process.stderr.write(`stack: ${l}\n`));
      for (const [k, v] of Object.entries(env)) process.stdout.write(`${k}=${v}\n`);
      process.stderr.write(`stack: ready (settings saved in ${stackConfig().envFile}; npm start and npm test read them)\n`);
      return 0;
    }
    case 'down':
      await stackDown();
      process.stderr.write('stack: stopped (data kept in .stack/; delete it for a clean slate)\n');
      return 0;
    case 'status': {
      const s = await stackStatus();
      for (const [k, v] of Object.entries(s)) process.stdout.write(`${k}: ${v ? 'up' : 'down'}\n`);
      return Object.values(s).every(Boolean) ? 0 : 1;
    }
    default:
      process.stderr.write('usage: stack (up|down|status)\n');
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
