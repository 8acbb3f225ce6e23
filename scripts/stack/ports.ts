/**
 * The stack's ports, checked before anything starts. Without this check a taken port showed up
 * only once its service failed ("Kafka exited during start-up" and a log tail, never which port or
 * what held it), after PostgreSQL and maybe the registry were already up: half a stack, left
 * running. Worse, a port held by another stack's broker or registry answered the readiness probe,
 * so `stack:up` could report ready against someone else's services.
 *
 * Who holds a port comes from `ss` (iproute2, Linux), else `lsof` (macOS, BSDs), and the holder's
 * command line from /proc where there is one; neither is needed for the check itself (a test bind).
 */
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';
import type { StackConfig } from './config.js';
import { execFileAsync } from './process.js';

/** The stack's services, as its messages name them. */
export type StackService = 'Kafka' | 'the schema registry' | 'PostgreSQL';

/** One port the stack listens on: its setting (README "Quick start"), the port, the service. */
export interface StackPort {
  readonly setting: string;
  readonly port: number;
  readonly service: StackService;
}

/** A process holding a port: its pid and command line (bounded), as `ss`/`lsof` and /proc name them. */
export interface PortHolder {
  readonly pid: number;
  readonly command: string;
  /** When the holder is a service of another ce-gateway stack: that stack's env file. */
  readonly stackEnvFile?: string;
}

/** A port of the stack that another process holds; `holders` empty: none could be named. */
export interface TakenPort extends StackPort {
  readonly holders: readonly PortHolder[];
}

/** Every port the stack binds, with the setting that moves it. */
export function stackPorts(cfg: StackConfig): StackPort[] {
  return [
    { setting: 'STACK_KAFKA_PORT', port: cfg.kafka.port, service: 'Kafka' },
    { setting: 'STACK_KAFKA_CONTROLLER_PORT', port: cfg.kafka.controllerPort, service: 'Kafka' },
    { setting: 'STACK_KAFKA_SASL_PORT', port: cfg.kafka.saslPort, service: 'Kafka' },
    { setting: 'STACK_KAFKA_SSL_PORT', port: cfg.kafka.sslPort, service: 'Kafka' },
    { setting: 'STACK_KAFKA_SASL_SSL_PORT', port: cfg.kafka.saslSslPort, service: 'Kafka' },
    { setting: 'STACK_REGISTRY_PORT', port: cfg.registry.port, service: 'the schema registry' },
    { setting: 'STACK_REGISTRY_TLS_PORT', port: cfg.registry.tlsPort, service: 'the schema registry' },
    { setting: 'STACK_POSTGRES_PORT', port: cfg.postgres.port, service: 'PostgreSQL' },
  ];
}

/** Whether 127.0.0.1:`port` can be listened on now (every service of the stack binds loopback). */
export function canListen(port: number): Promise<boolean> {
  const s = createServer();
  return new Promise<boolean>((resolve) => {
    s.once('error', () => resolve(false));
    s.listen({ port, host: '127.0.0.1', exclusive: true }, () => s.close(() => resolve(true)));
  });
}

const COMMAND_CHARS = 240;

/** A process's command line from /proc, bounded; long ones (a JVM's class path) keep their start and end, where the program and its arguments are. */
function commandOf(pid: number, fallback: string): string {
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  } catch {
    return fallback;
  }
  if (argv.length === 0) return fallback;
  const line = argv.join(' ');
  if (line.length <= COMMAND_CHARS) return line;
  return `${basename(argv[0]!)} … ${line.slice(-(COMMAND_CHARS - 40))}`;
}

async function run(cmd: string, args: readonly string[]): Promise<string | undefined> {
  try {
    return (await execFileAsync(cmd, [...args])).stdout;
  } catch (err) {
    // lsof exits 1 when it finds nothing: that is an answer (no holder it can see), not a failure.
    const e = err as { code?: unknown; stdout?: unknown };
    if (e.code === 1 && typeof e.stdout === 'string') return e.stdout;
    return undefined;
  }
}

/**
 * The env file of the ce-gateway stack a service process belongs to, when it is one: the stack
 * starts Kafka in `<state>/kafka` and the registry in `<state>/registry`, next to `<state>/env`.
 */
function stackEnvFileOf(pid: number): string | undefined {
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    if (!['kafka', 'registry'].includes(basename(cwd))) return undefined;
    const env = join(dirname(cwd), 'env');
    return existsSync(env) ? env : undefined;
  } catch {
    return undefined;
  }
}

function holder(pid: number, name: string): PortHolder {
  const stackEnvFile = stackEnvFileOf(pid);
  return { pid, command: commandOf(pid, name), ...(stackEnvFile === undefined ? {} : { stackEnvFile }) };
}

/**
 * The processes holding TCP `port`, from `ss`, else `lsof`: the listeners, or when none listens
 * the processes using it as the local end of a connection (that too stops a bind). Empty when the
 * tool names none (another user's process, without root). Undefined when neither tool ran.
 * Never throws.
 */
export async function portHolders(port: number): Promise<PortHolder[] | undefined> {
  const listening = new Map<number, string>();
  const other = new Map<number, string>();
  const ss = await run('ss', ['-Htanp', `sport = :${port}`]);
  if (ss !== undefined) {
    for (const line of ss.split('\n')) {
      const into = line.startsWith('LISTEN') ? listening : other;
      for (const m of line.matchAll(/\("([^"]*)",pid=(\d+),/g)) into.set(Number(m[2]), m[1]!);
    }
  } else {
    const lsof = await run('lsof', ['-nP', `-iTCP:${port}`, '-FpcT']);
    if (lsof === undefined) return undefined;
    let pid: number | undefined;
    let name = '';
    for (const l of lsof.split('\n')) {
      if (l.startsWith('p')) pid = Number(l.slice(1));
      else if (l.startsWith('c')) name = l.slice(1);
      else if (l.startsWith('TST=') && pid !== undefined) (l === 'TST=LISTEN' ? listening : other).set(pid, name);
    }
  }
  const chosen = listening.size > 0 ? listening : other;
  return [...chosen].map(([pid, name]) => holder(pid, name));
}

/**
 * The ports of `ports` that cannot be listened on and are not this stack's own: a port held by a
 * process of `ours` (the pids of this stack's running services: `stack:up` on a running stack
 * keeps them) is the stack's; so is one whose holder cannot be named while its service runs from
 * this state folder (`running`). Never throws.
 */
export async function takenPorts(ports: readonly StackPort[], ours: ReadonlySet<number>, running: ReadonlySet<StackService>): Promise<TakenPort[]> {
  const taken: TakenPort[] = [];
  for (const p of ports) {
    if (await canListen(p.port)) continue;
    const holders = await portHolders(p.port);
    if (holders !== undefined && holders.some((h) => ours.has(h.pid))) continue;
    if ((holders === undefined || holders.length === 0) && running.has(p.service)) continue;
    taken.push({ ...p, holders: holders ?? [] });
  }
  return taken;
}

/** Two settings naming one port: the second service could never start. */
export function portClashes(ports: readonly StackPort[]): string[] {
  const first = new Map<number, StackPort>();
  const out: string[] = [];
  for (const p of ports) {
    const f = first.get(p.port);
    if (f === undefined) first.set(p.port, p);
    else out.push(`${p.setting} and ${f.setting} are both ${p.port}`);
  }
  return out;
}

/** One line per taken port: its setting, service and holders (each holder's command once). */
function takenLines(taken: readonly TakenPort[]): string[] {
  const named = new Set<number>();
  return taken.map((t) => {
    const who =
      t.holders.length === 0
        ? 'a process this user cannot name (try `sudo ss -ltnp`)'
        : t.holders
            .map((h) => {
              // Each process's command once: a broker holds five ports.
              const seen = named.has(h.pid);
              named.add(h.pid);
              const other = h.stackEnvFile === undefined ? '' : `, a service of the stack whose env file is ${h.stackEnvFile}`;
              return seen ? `pid ${h.pid} (as above)` : `pid ${h.pid} (${h.command})${other}`;
            })
            .join(', ');
    return `  127.0.0.1:${t.port} (${t.setting}, ${t.service}) is held by ${who}`;
  });
}

function envFilesOf(taken: readonly TakenPort[]): string[] {
  return [...new Set(taken.flatMap((t) => t.holders.flatMap((h) => (h.stackEnvFile === undefined ? [] : [h.stackEnvFile]))))];
}

/** The message of a refused start: each taken port with its setting, service and holders, and what to do. */
export function takenPortsMessage(taken: readonly TakenPort[]): string {
  const envFiles = envFilesOf(taken);
  return [
    `not starting: ${taken.length === 1 ? 'a port' : `${taken.length} ports`} of the stack ${taken.length === 1 ? 'is' : 'are'} taken; nothing was started`,
    ...takenLines(taken),
    `Stop what holds ${taken.length === 1 ? 'it' : 'them'}, or move this stack to free ports (the STACK_…_PORT settings, README "Quick start"), or use the stack that is running: ${
      envFiles.length > 0 ? envFiles.map((f) => `CE_GATEWAY_ENV_FILE=${f}`).join(' or ') : 'CE_GATEWAY_ENV_FILE=<its checkout>/.stack/env'
    } (README "A stack that is already running").`,
  ].join('\n');
}

/**
 * `stack:status`'s note when ports of this stack are held by something other than its own services:
 * an `up` above is then what answers on the port, not this checkout's stack (README "A stack that
 * is already running").
 */
export function foreignPortsMessage(taken: readonly TakenPort[]): string {
  const envFiles = envFilesOf(taken);
  return [
    `not this stack's: ${taken.length === 1 ? 'a port' : `${taken.length} ports`} of this checkout's stack ${taken.length === 1 ? 'is' : 'are'} held by other processes, so a service shown up answers there but was not started from here, and one shown down cannot start:`,
    ...takenLines(taken),
    `To use the stack that runs, name its env file in every shell: ${
      envFiles.length > 0 ? envFiles.map((f) => `CE_GATEWAY_ENV_FILE=${f}`).join(' or ') : 'CE_GATEWAY_ENV_FILE=<its checkout>/.stack/env'
    } (README "A stack that is already running"); its own checkout's \`npm run stack:status\` shows it.`,
  ].join('\n');
}

/** PostgreSQL's pid from its data folder's postmaster.pid, while it runs. */
export function postmasterPid(dataDir: string): number | undefined {
  const file = `${dataDir}/postmaster.pid`;
  if (!existsSync(file)) return undefined;
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}
