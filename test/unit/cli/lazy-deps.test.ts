/**
 * What a gateway on the default client does not load: kafkajs (KAFKA_CLIENT=kafkajs only), `pg`
 * (the outbox commands only) and `cli-progress` (`replay` only). Each costs heap and code in every
 * process that loads it (BENCHMARKS "Memory"); the check runs in a fresh process that imports
 * every CLI command module, as `ce-gateway` does, and creates a gateway. The same process then
 * creates a kafkajs transport, so the check is shown to see kafkajs when it is loaded, and the
 * linear header decoder (src/transport/kafka/kafkajs.ts) to be in place although kafkajs itself
 * was loaded late.
 */
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { runProcess } from '../../helpers/spawn-node.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');

const SCRIPT = `
import { createRequire } from 'node:module';
import { readdirSync } from 'node:fs';
const require = createRequire(process.cwd() + '/package.json');
const loaded = () => Object.keys(require.cache).map((p) => /node_modules[\\\\/](kafkajs|pg|cli-progress)[\\\\/](index|lib[\\\\/]index|cli-progress)\\.js$/.exec(p)?.[1]).filter(Boolean).sort();
for (const f of readdirSync('src/cli/commands')) if (f.endsWith('.ts')) await import('./src/cli/commands/' + f);
const { loadConfig } = await import('./src/config/index.ts');
const { createGateway } = await import('./src/app/index.ts');
const { createLogger } = await import('./src/observability/index.ts');
const config = loadConfig({ KAFKA_BROKERS: '127.0.0.1:1', LOG_LEVEL: 'silent' });
const gw = createGateway(config, createLogger({ level: 'silent' }));
const before = loaded();
const { createKafkaTransport } = await import('./src/transport/index.ts');
createKafkaTransport({ brokers: ['127.0.0.1:1'] });
const decoder = require('kafkajs/src/protocol/recordBatch/record/v0/decoder.js');
process.stdout.write(JSON.stringify({ client: config.kafka.client, before, after: loaded(), patched: decoder[Symbol.for('ce-gateway.kafkajs.linear-header-decoder')] === true }));
await gw.close();
`;

// A node child through tsx: 4 s in a CI run, past the unit project's 10 s on a busy machine (liveness bound, not speed).
it('a gateway on the default client loads neither kafkajs, pg nor cli-progress; a kafkajs transport loads kafkajs with the linear decoder', { timeout: 60_000 }, async () => {
  const r = await runProcess(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent', KAFKA_CLIENT: '' }, timeoutMs: 60_000 });
  expect(r.code, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout) as { client: string; before: string[]; after: string[]; patched: boolean };
  expect(out.client).toBe('platformatic');
  expect(out.before).toEqual([]);
  expect(out.after).toEqual(['kafkajs']);
  expect(out.patched).toBe(true);
});
