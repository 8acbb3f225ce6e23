import type { Command } from 'commander';
import type * as OutboxModule from '../../bus/outbox/index.js';
import { GatewayError } from '../../core/errors.js';
import type { Config } from '../../config/index.js';
import { EXIT_USAGE, onSignals, requireKafka, setup, openGateway } from '../context.js';
import { createOpsServer } from '../../http/ops-server.js';
import { wholeNumber } from '../numbers.js';
import { errorMessage } from '../../core/errors.js';
import { neverRejects } from '../../core/never-rejects.js';

function outboxDatabase(config: Config): string {
  const url = config.outbox.databaseUrl;
  if (url === undefined) {
    // The outbox lives in the producer's own database (bus spec P3), never in the bus's DATABASE_URL.
    throw new GatewayError('CEG_INVALID_OPTIONS', 'OUTBOX_DATABASE_URL is not set: the outbox lives in the producing service\'s own database', { retriable: false, details: { field: 'OUTBOX_DATABASE_URL' } });
  }
  return url;
}

/**
 * How long the relay's stop() may let a cycle in flight finish, ms, within the shutdown budget
 * `shutdownTimeoutMs` (SHUTDOWN_TIMEOUT_MS): the budget less a third of it, at most 3000 ms, left for
 * closing its connections and the Kafka clients after it. Abandoned rows stay unsent (retried by
 * the next relay; possibly duplicates).
 */
export function relayStopGraceMs(shutdownTimeoutMs: number): number {
  return Math.max(0, shutdownTimeoutMs - Math.min(3000, Math.floor(shutdownTimeoutMs / 3)));
}

/**
 * How long publishing may fail or be stuck before the relay's /healthz says `degraded`, ms: the
 * relay's produce timeout (publishTimeoutMs, default 30000), after which a produce call counts as failed.
 */
export const PUBLISH_STALL_MS = 30_000;

/**
 * The broker's health as the gateway's /readyz judges it (`transport.isHealthy()`, false when it
 * does not answer within `timeoutMs`), probed now and then every max(1000, timeoutMs) ms, one probe
 * at a time; `up()` is the last answer (true before the first).
 */
function brokerProbe(transport: { isHealthy(): Promise<boolean> }, timeoutMs: number): { up(): boolean; stop(): void } {
  let up = true;
  let running = false;
  const probe = async (): Promise<void> => {
    if (running) return;
    running = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      up = await Promise.race([transport.isHealthy().catch(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)))]);
    } finally {
      clearTimeout(timer);
      running = false;
    }
  };
  // probe() cannot reject: isHealthy() is caught (false) and the rest only clears a timer.
  neverRejects(probe());
  const every = setInterval(() => neverRejects(probe()), Math.max(1000, timeoutMs));
  every.unref();
  return { up: () => up, stop: () => clearInterval(every) };
}

/**
 * The outbox (and with it `pg`), loaded only by the outbox commands: every other command, `serve`
 * among them, starts without PostgreSQL's client in its heap.
 */
const outboxModule = (): Promise<typeof OutboxModule> => import('../../bus/outbox/index.js');

/** `ce-gateway outbox migrate | relay`: the transactional outbox (bus spec P3; docs/outbox.md). */
export function registerOutboxCommand(program: Command): void {
  const outbox = program.command('outbox').description('the transactional outbox in a producer\'s PostgreSQL database (OUTBOX_DATABASE_URL, OUTBOX_TABLE)');
  outbox
    .command('migrate')
    .description('create the outbox table and its indexes if they do not exist')
    .action(async () => {
      const { config } = setup(program);
      const [{ default: pg }, { ensureOutboxSchema, outboxTable, outboxStoreError }] = await Promise.all([import('pg'), outboxModule()]);
      const t = outboxTable(config.outbox.table);
      // Bounded like `outbox stuck` and the relay (OUTBOX_QUERY_TIMEOUT_MS): a database that
      // accepts the connection and never answers held a deploy job's migrate step for ever
      // (break report hE, 2026-12-07). The statements are IF NOT EXISTS on the outbox's own
      // table and indexes, and the advisory lock waits only for another migrate: each within the bound.
      const client = new pg.Client({ connectionString: outboxDatabase(config), connectionTimeoutMillis: config.outbox.queryTimeoutMs, query_timeout: config.outbox.queryTimeoutMs });
      await client.connect().catch((err: unknown) => {
        throw outboxStoreError(err, t);
      });
      try {
        const made = await ensureOutboxSchema(client, { table: config.outbox.table }).catch((err: unknown) => {
          throw outboxStoreError(err, t);
        });
        process.stdout.write(`outbox table ready: ${made.name}\n`);
      } finally {
        // A connection whose query timed out may never answer the goodbye either.
        await Promise.race([client.end(), new Promise<void>((resolve) => setTimeout(resolve, 500).unref())]);
      }
    });
  outbox
    .command('stuck')
    .description('list unsent rows that failed at least --min-attempts times (a missing topic, a row too large or invalid), oldest first, one JSON object a line; read-only')
    // Each checked as it is read, as every other count of the CLI: a bad value is a usage error
    // naming that option only (one message named both, whichever was wrong), and `1e3` or `10abc`
    // are not counts. attempts is an `integer` column: a larger bound failed in PostgreSQL.
    .option('--min-attempts <n>', 'failed attempts at least (1–2147483647)', wholeNumber(1, 2_147_483_647), 3)
    .option('--limit <n>', 'rows at most (1–10000)', wholeNumber(1, 10_000), 100)
    .action(async ({ minAttempts, limit }: { minAttempts: number; limit: number }) => {
      const { config } = setup(program);
      const [{ default: pg }, { outboxTable, outboxStoreError }] = await Promise.all([import('pg'), outboxModule()]);
      const t = outboxTable(config.outbox.table);
      // Bounded like the relay (a hung database must not hold an operator's shell for ever).
      const client = new pg.Client({ connectionString: outboxDatabase(config), connectionTimeoutMillis: config.outbox.queryTimeoutMs, query_timeout: config.outbox.queryTimeoutMs });
      // Said as the relay says it (bus/outbox/store-error.ts): CEG_STORE_UNAVAILABLE with the
      // SQLSTATE, retriable alike; a missing table names it and `ce-gateway outbox migrate`.
      await client.connect().catch((err: unknown) => {
        throw outboxStoreError(err, t);
      });
      try {
        // Only the row that holds its key — the oldest unsent row of its (topic, partition key) — is
        // listed: a key's later rows may have attempts too (they were in the same failed produce
        // call, or in the cycle whose topic look-up failed), yet they wait for the holder and are
        // not what the operator has to act on. The unsent index by id; the NOT EXISTS probe uses
        // the (partition_key, id) index of unsent rows.
        const r = await client.query<Record<string, unknown>>(
          `SELECT o.id::text AS id, o.topic, o.partition_key AS "partitionKey", o.event_id AS "eventId", o.event_type AS "eventType", o.attempts, o.last_error AS "lastError", o.created_at AS "createdAt"
           FROM ${t.sql} AS o
           WHERE o.sent_at IS NULL AND o.attempts >= $1
             AND NOT EXISTS (SELECT 1 FROM ${t.sql} AS p WHERE p.sent_at IS NULL AND p.partition_key = o.partition_key AND p.topic = o.topic AND p.id < o.id)
           ORDER BY o.id LIMIT $2`,
          [minAttempts, limit],
        ).catch((err: unknown) => {
          // No table is not "no stuck row": the error names the missing table and what creates it.
          throw outboxStoreError(err, t);
        });
        for (const row of r.rows) process.stdout.write(`${JSON.stringify(row)}\n`);
      } finally {
        await client.end();
      }
    });
  outbox
    .command('relay')
    .description('publish committed outbox rows in order per partition key; wakes on LISTEN/NOTIFY and polls; serves /metrics and /healthz on HOST:PORT')
    .action(async () => {
      const { config, log } = setup(program);
      // On the in-memory transport the relay would mark rows published into a bus that dies with
      // this process: committed events lost. Checked before the database is touched.
      requireKafka(program, config, 'outbox relay');
      // OUTBOX_BATCH_SIZE above the relay's bound (MAX_OUTBOX_BATCH_SIZE) was refused by setup()'s
      // configuration check, naming the variable, before Kafka or the database is touched.
      const { startOutboxRelay } = await outboxModule();
      // Read-only: the rows are already encoded, so the relay needs only the Kafka transport (and
      // its own database). No schema is registered and no topic created, so neither the schema
      // registry nor topic-creation rights are needed to start: a registry outage never holds it.
      const gw = await openGateway(config, log, { readOnly: true });
      await gw.ready;
      const relay = await startOutboxRelay({
        connectionString: outboxDatabase(config),
        transport: gw.transport,
        table: config.outbox.table,
        batchSize: config.outbox.batchSize,
        maxBatchBytes: config.outbox.batchBytes,
        pollIntervalMs: config.outbox.pollIntervalMs,
        queryTimeoutMs: config.outbox.queryTimeoutMs,
        // The relay's stop() must end inside SHUTDOWN_TIMEOUT_MS with room for closing the rest,
        // or a stop during a broker outage always ran out the budget (exit 1).
        stopGraceMs: relayStopGraceMs(config.shutdownTimeoutMs),
        log: log.child({ component: 'outbox-relay' }),
        name: config.instance,
        // OUTBOX_TOPICS=catalog: a row inserted by hand naming the definitions topic or a
        // dead-letter topic is held, not published with the relay's credentials.
        ...(config.outbox.topics === 'catalog' ? { topics: gw.catalog.topics.map((t) => t.name) } : {}),
      });
      // Its own /metrics and /healthz (issue 15): the backlog is read from the table at scrape time.
      const removeSource = gw.metrics.addSource({
        ready: () => true,
        outboxRelay: () => relay.stats(),
        outbox: async () => {
          const b = await relay.backlog();
          return { backlogRows: b.rows, oldestRowAgeSeconds: b.oldestAgeSeconds };
        },
      });
      // The broker as the gateway's /readyz sees it (transport.isHealthy() within
      // READINESS_TIMEOUT_MS), probed in the background so /healthz answers at once.
      const broker = brokerProbe(gw.transport, config.readinessTimeoutMs);
      const ops = createOpsServer({
        metrics: () => gw.metrics.render(),
        log: log.child({ component: 'ops-server' }),
        // Liveness: a broker or database outage is waited out, never a reason to restart the relay
        // (200 throughout); `degraded` and `database` say that its database cannot be reached.
        // `degraded` also while the broker does not answer its probe, or publishing has failed or
        // been stuck for PUBLISH_STALL_MS (the relay's produce timeout), whichever shows first.
        healthy: () => {
          const st = relay.stats();
          const stalled = st.publishStalledMs >= PUBLISH_STALL_MS;
          return { ok: true, details: { consecutiveFailures: st.consecutiveFailures, published: st.published, listening: st.listening, database: st.databaseUp ? 'up' : 'down', broker: broker.up() ? 'up' : 'down', publishStalledMs: st.publishStalledMs, degraded: !st.databaseUp || !broker.up() || stalled, ...(st.lastError === undefined ? {} : { lastError: st.lastError.code ?? st.lastError.message.slice(0, 200) }), ...(st.databaseUp || st.lastError === undefined ? {} : { databaseError: st.lastError.message.slice(0, 300) }) } };
        },
      });
      await new Promise<void>((resolve) => {
        ops.once('error', (err) => {
          process.stderr.write(`ce-gateway: outbox relay cannot serve /metrics on ${config.http.host}:${config.http.port}: ${errorMessage(err)} (set PORT)\n`);
          process.exit(EXIT_USAGE);
        });
        ops.listen(config.http.port, config.http.host, resolve);
      });
      const addr = ops.address();
      log.info({ table: relay.table.name, metrics: typeof addr === 'object' && addr !== null ? `http://${config.http.host}:${addr.port}/metrics` : undefined }, 'outbox relay running');
      onSignals(async () => {
        broker.stop();
        ops.close();
        ops.closeAllConnections();
        await relay.stop();
        removeSource();
        await gw.close();
      }, log, config.shutdownTimeoutMs);
    });
}
