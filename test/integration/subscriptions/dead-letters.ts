/**
 * Shared by the dead-letter tests on Kafka: reading a subscription's dead-letter topic with a raw
 * Kafka consumer (what an operator's tool would do), a JSON call of the gateway's API, and the
 * `ce-gateway` CLI as a process.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { rawKafka } from '../consumer/members.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

/** Dead letters on `<group>.dlq` by CloudEvent id (`ce_id`) → their headers, once every one of `ids` is there (30 s at most). */
export async function readDeadLetters(group: string, ids: readonly unknown[]): Promise<Map<string, Map<string, string>>> {
  const dead = new Map<string, Map<string, string>>();
  const reader = rawKafka().consumer({ groupId: uniqueName('it-dlq-reader') });
  await reader.connect();
  await reader.subscribe({ topics: [`${group}.dlq`], fromBeginning: true });
  await reader.run({
    eachMessage: async ({ message }) => {
      const h = new Map(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
      dead.set(h.get('ce_id') ?? '', h);
    },
  });
  try {
    await waitFor(`${ids.length} dead letters on ${group}.dlq`, () => ids.every((id) => dead.has(String(id))), 30_000, 200);
  } finally {
    await reader.disconnect();
  }
  return dead;
}

/** One JSON call of the gateway at `base()` (a body goes as JSON); the answer's status and parsed body (`{}` when empty). */
export function jsonApi(base: () => string): (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }> {
  return async (method, path, body) => {
    const res = await fetch(`${base()}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  };
}

const run = promisify(execFile);

/** `ce-gateway <args>` as a process with `env()` over this process's environment; resolves with its output and exit code (never rejects on a non-zero exit). */
export function cliRunner(env: () => NodeJS.ProcessEnv): (args: string[]) => Promise<{ stdout: string; stderr: string; code: number }> {
  return (args) =>
    run(process.execPath, [...CLI_ENTRY, ...args], { env: { ...process.env, ...env() }, maxBuffer: 16 * 1024 * 1024 }).then(
      (r) => ({ ...r, code: 0 }),
      (err: { stdout: string; stderr: string; code: number }) => ({ stdout: err.stdout, stderr: err.stderr, code: err.code }),
    );
}
