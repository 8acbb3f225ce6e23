import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import type { Gateway } from '../../app/index.js';
import { DeadLetters, MAX_IDS, deadLetterRefProblem } from '../../bus/deadletters/index.js';
import type { ActedOn, DeadLetterItem, DeadLetterRef, NotFound, Selection } from '../../bus/deadletters/index.js';
import { deadLetterTopic } from '../../bus/subscriber/index.js';
import { DEFAULT_OWNER, NAME_PATTERN, groupOf } from '../../bus/subscriptions/index.js';
import { FILE_OWNER } from '../../connectors/loader/schema.js';
import { GatewayError } from '../../core/errors.js';
import { topicMissing } from '../../transport/topics.js';
import { printable } from '../../core/printable.js';
import { topicNameProblem } from '../../core/topic-name.js';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../observability/index.js';
import { EXIT_CHECK_FAILED, brokerDeadline, requireKafka, setup, openGateway } from '../context.js';
import { cliKafkaTimeouts } from '../broker-deadline.js';
import { ownerOfGroup, ownersOfName } from '../subscription-owner.js';
import { redriveNote } from '../redrive-note.js';
import { ownerOption } from '../gateway-client.js';
import { wholeNumber } from '../numbers.js';

/**
 * The consumer group of `<subscription>` as the CLI takes it: the name of an HTTP subscription
 * (owner `--owner`, default `anonymous`) when its dead-letter topic exists; without `--owner`, then
 * that of a `kind: subscription` connector file (owner `connectors`); else the name itself as the
 * group (library and connector subscriptions are named by their group).
 * `ownerGiven`: `--owner` was given (only that owner's subscription is looked for then).
 * `ownersOf`: the owners of the stored subscriptions named `name` (the definitions topic), asked
 * only when nothing was found, so that the refusal names the `--owner` to give: a partner's
 * subscription is not the anonymous one the CLI assumes (new-user report hE: "no dead-letter topic
 * for subscription hEp-hook (looked for ce-gateway.sub.anonymous.hEp-hook.dlq, …)" for partner
 * hEacme's subscription, with no word of `--owner`).
 * Errors: CEG_NOT_FOUND when none has a dead-letter topic (naming the owners that have a
 *   subscription of that name, with the `--owner` to give); CEG_INVALID_NAME for a name that
 *   cannot name a topic.
 */
export async function resolveGroup(gw: Gateway, name: string, owner: string, ownerGiven = true, ownersOf?: (name: string) => Promise<readonly string[]>): Promise<string> {
  const exists = (topic: string): Promise<boolean> =>
    gw.transport.partitionCount(topic).then(
      () => true,
      (err: unknown) => {
        if (topicMissing(err)) return false;
        throw err;
      },
    );
  const owners = ownerGiven || owner === FILE_OWNER ? [owner] : [owner, FILE_OWNER];
  const candidates = [...(NAME_PATTERN.test(name) ? owners.filter((o) => NAME_PATTERN.test(o)).map((o) => groupOf(o, name)) : []), name];
  for (const group of candidates) {
    if (topicNameProblem(deadLetterTopic(group)) !== undefined) continue;
    if (await exists(deadLetterTopic(group))) return group;
  }
  const others = ownersOf === undefined || !NAME_PATTERN.test(name) ? [] : (await ownersOf(name)).filter((o) => !owners.includes(o));
  const hint =
    others.length === 0
      ? ''
      : others.length === 1
        ? `; ${name} is a subscription of ${others[0]}: give --owner ${others[0]}`
        : `; partners ${others.slice(0, 20).join(', ')}${others.length > 20 ? ', …' : ''} each have a subscription named ${name}: give --owner <partner>`;
  throw new GatewayError('CEG_NOT_FOUND', printable(`no dead-letter topic for subscription ${name.slice(0, 200)} (looked for ${candidates.map((g) => deadLetterTopic(g)).join(', ')})${hint}`), {
    retriable: false,
    details: { field: 'subscription', ...(others.length === 0 ? {} : { owners: others }) },
  });
}

function line(i: DeadLetterItem): string {
  const status = i.lastStatus === null ? '' : `  status=${i.lastStatus}`;
  const redriven = i.redrivenAt === null ? '' : `  redriven-at=${i.redrivenAt}`;
  return printable(`${i.deadLetter.partition}@${i.deadLetter.offset}  ${i.lastFailureTime ?? '-'}  id=${i.id ?? '-'}  source=${i.source ?? '-'}  attempts=${i.attempts ?? '-'}${status}${redriven}  reason=${i.reason}`);
}

/**
 * One `--dead-letter <partition>:<offset>` (as `list` prints a dead letter, `<partition>@<offset>`,
 * with `:` or `@`): a partition that is a safe integer ≥ 0 and an offset in decimal from 0 to
 * 2^63−1, digits only, without leading zeros; appended to the earlier ones (repeatable).
 * Errors: commander's InvalidArgumentError (exit 2 with the usage), naming what is wrong.
 */
export function deadLetterArg(value: string, previous: readonly DeadLetterRef[] = []): DeadLetterRef[] {
  const m = /^(\d{1,16})[:@](\d{1,20})$/.exec(value);
  const ref = m === null ? undefined : { partition: Number(m[1]), offset: m[2]! };
  const problem = ref === undefined ? { message: 'give <partition>:<offset>, e.g. 0:42 (as list prints it, partition@offset)' } : /^0\d/.test(m![1]!) ? { message: 'the partition: an integer ≥ 0 without leading zeros' } : deadLetterRefProblem(ref);
  if (problem !== undefined) throw new InvalidArgumentError(`${problem.message} (got ${JSON.stringify(value.slice(0, 60))})`);
  return [...previous, ref!];
}

/**
 * `--all`, `--id <ids…>` (those ids from any source), `--id <ids…> --source <uri>` (exactly the
 * events of that source with those ids: CloudEvents 1.0.2 §id names an event by source + id) or
 * `--dead-letter <partition>:<offset>` (repeatable: exactly those dead letters on the
 * subscription's dead-letter topic, readable or not); one kind at a time, at most MAX_IDS entries.
 * Errors: CEG_MALFORMED_REQUEST (usage, exit 2).
 */
export function selection(opts: { all?: boolean; id?: string[]; source?: string; deadLetter?: DeadLetterRef[] }): Selection {
  const usage = (message: string): GatewayError => new GatewayError('CEG_MALFORMED_REQUEST', message, { retriable: false });
  if (opts.deadLetter !== undefined) {
    const also = [opts.all === true ? '--all' : undefined, opts.id !== undefined ? '--id' : undefined, opts.source !== undefined ? '--source' : undefined].filter((o) => o !== undefined);
    if (also.length > 0) throw usage(`either --dead-letter or ${also.join(' and ')}, not both`);
    if (opts.deadLetter.length > MAX_IDS) throw usage(`at most ${MAX_IDS} --dead-letter at once`);
    return { deadLetters: opts.deadLetter };
  }
  if (opts.all === true && opts.id !== undefined) throw usage('either --all or --id, not both');
  if (opts.all === true && opts.source !== undefined) throw usage('--source narrows --id; --all selects every source');
  if (opts.all === true) return { all: true };
  if (opts.id === undefined || opts.id.length === 0) throw usage('name the dead letters: --id <event id…> (with --source <uri> for one source), --dead-letter <partition>@<offset> or --all');
  if (opts.id.length > MAX_IDS) throw usage(`at most ${MAX_IDS} ids at once`);
  if (opts.id.some((id) => id.length === 0)) throw usage('--id: an event id is a non-empty string');
  if (opts.source === undefined) return { ids: opts.id };
  if (opts.source.length === 0) throw usage('--source: the event source, a non-empty URI-reference');
  const source = opts.source;
  return { events: opts.id.map((id) => ({ source, id })) };
}

/** A `notFound` entry as the CLI prints it: the id, `<id> from <source>`, or `<partition>@<offset>`. */
const missing = (m: NotFound): string => (typeof m === 'string' ? m : 'partition' in m ? `${m.partition}@${m.offset}` : `${m.id} from ${m.source}`);

/** One dead letter acted on, as the CLI prints it. */
const acted = (verb: string, a: ActedOn): string => printable(`${verb} ${a.deadLetter.partition}@${a.deadLetter.offset} id=${a.id ?? '-'} source=${a.source ?? '-'}`);

/**
 * `ce-gateway deadletters list|redrive|purge <subscription>` (issue 10): a subscription's dead
 * letters straight from Kafka, as the HTTP routes do them (the same marks, the same redrive topic),
 * so it works with no gateway running. `list` is read-only; `redrive` produces to the
 * subscription's `.redrive` topic; `purge` writes marks to its `.dlq.state` topic.
 * Before `redrive` or `purge` writes anything, something must own the group (as the HTTP routes
 * answer 404 otherwise): a stored subscription, a connector file, or live members
 * (subscription-owner.ts). A deleted subscription's group is refused (exit 1, nothing written):
 * its redriven events would go to a redrive topic nothing reads and be marked redriven for good.
 * `--force` writes anyway, for a group served by something this command cannot see (a library
 * subscriber that is stopped now). A pull subscription's redrive is refused as over HTTP (409),
 * `--force` or not: nothing reads its redrive topic.
 * Selection: `--all`; `--id <ids…>`, every dead letter of those event ids from any source (two
 * publishers may share an id: each one acted on is printed with its source); `--id <ids…>
 * --source <uri>`, exactly those events of that source; `--dead-letter <partition>:<offset>`
 * (repeatable), exactly those dead letters, as `list` prints them — the way to act on one that is
 * not a readable event (no id, no source) without `--all`.
 * Exit codes: 0 done; 1 some ids were not found, or no owner (refused); 2 usage or connection error.
 */
/** The owners of the stored subscriptions of a name, from the definitions topic (SUBSCRIPTIONS_TOPIC) the gateways read. */
const storedOwners =
  (gw: Gateway, config: Config, log: Logger) =>
  (name: string): Promise<string[]> =>
    ownersOfName(gw, config.subscriptions.topic, name, log);

export function registerDeadLettersCommand(program: Command): void {
  const cmd = program.command('deadletters').description("list, redrive or purge a subscription's dead letters (<subscription>.dlq)");
  const owner = (o: { owner?: string }): string => o.owner ?? DEFAULT_OWNER;
  const withGateway = async <T>(run: (gw: Gateway, dl: DeadLetters, config: Config, log: Logger) => Promise<T>): Promise<T> => {
    const { config, log, brokerTimeoutMs } = setup(program);
    requireKafka(program, config, 'deadletters');
    const gw = await openGateway(config, log, { readOnly: true, kafkaTimeouts: cliKafkaTimeouts(brokerTimeoutMs) });
    // A broker that does not answer within the deadline ends the command (exit 2).
    const deadline = brokerDeadline(gw.transport, config, brokerTimeoutMs, 'deadletters');
    try {
      await gw.ready;
      return await run(gw, new DeadLetters({ transport: gw.transport, codec: gw.codec() }), config, log);
    } finally {
      await gw.close();
      deadline.stop();
    }
  };

  cmd
    .command('list')
    .description('print one page of dead letters, oldest first (the next page: --after with the token printed on stderr)')
    .argument('<subscription>', 'subscription name (HTTP or connector file), or the consumer group of a library subscription')
    .option('--limit <n>', 'items per page, 1–1000', wholeNumber(1, 1000), 100)
    .option('--after <token>', 'continue after a previous page')
    .option('--owner <owner>', `owner of an HTTP subscription (default ${DEFAULT_OWNER}, then a connector file's: ${FILE_OWNER})`, ownerOption)
    .option('--json', 'print the page as JSON: { items, next }')
    .action(async (name: string, opts: { limit: number; after?: string; owner?: string; json?: boolean }) => {
      await withGateway(async (gw, dl, config, log) => {
        const page = await dl.list(await resolveGroup(gw, name, owner(opts), opts.owner !== undefined, storedOwners(gw, config, log)), { limit: opts.limit, ...(opts.after === undefined ? {} : { after: opts.after }) });
        if (opts.json) process.stdout.write(`${JSON.stringify(page)}\n`);
        else for (const i of page.items) process.stdout.write(`${line(i)}\n`);
        if (!opts.json && page.next !== null) process.stderr.write(`more: --after ${page.next}\n`);
        if (!opts.json && page.items.length === 0) process.stderr.write(`no dead letters${opts.after === undefined ? '' : ' after that token'}\n`);
      });
    });

  for (const verb of ['redrive', 'purge'] as const) {
    cmd
      .command(verb)
      .description(
        `${verb === 'redrive' ? 'send dead letters back to that subscription only (each at most once)' : 'hide dead letters that were dealt with from the listing (the records stay on the dead-letter topic until its retention.ms, unlimited by default)'}; refused (exit 1, nothing written) unless a stored subscription, a connector file or live consumer-group members own the group (a deleted subscription's group: see --force)`,
      )
      .argument('<subscription>', 'subscription name (HTTP or connector file), or the consumer group of a library subscription')
      .option('--id <ids...>', 'event ids; without --source, every dead letter with one of these ids, from any source')
      .option('--source <uri>', 'only the events of this source (CloudEvents `source`) with the --id ids: exactly those events')
      .option('--dead-letter <partition@offset>', 'a dead letter by where it is on the dead-letter topic, as list prints it (partition@offset; partition:offset is taken too); repeatable; also one that is not a readable event', deadLetterArg)
      .option('--all', 'every dead letter still listed')
      .option('--owner <owner>', `owner of an HTTP subscription (default ${DEFAULT_OWNER}, then a connector file's: ${FILE_OWNER})`, ownerOption)
      .option('--force', `${verb} although no stored subscription, connector file or live consumer-group member owns the group (one served by something this command cannot see, e.g. a stopped library subscriber)`)
      .option('--json', 'print the result as JSON')
      .action(async (name: string, opts: { id?: string[]; source?: string; deadLetter?: DeadLetterRef[]; all?: boolean; owner?: string; force?: boolean; json?: boolean }) => {
        const sel = selection(opts);
        await withGateway(async (gw, dl, config, log) => {
          const group = await resolveGroup(gw, name, owner(opts), opts.owner !== undefined, storedOwners(gw, config, log));
          const who = printable(`consumer group ${group} (subscription ${name}${group === name ? '' : ` of owner ${group === groupOf(FILE_OWNER, name) ? FILE_OWNER : owner(opts)}`})`);
          const check = await ownerOfGroup(gw, config, group, log);
          if (verb === 'redrive' && check.owner?.by === 'stored' && check.owner.pull) {
            process.stderr.write(`ce-gateway deadletters redrive: refusing: ${who} is a pull subscription: its dead letters are records no client can read (poison), and nothing reads its redrive topic; list and purge them. Nothing was redriven.\n`);
            process.exitCode = EXIT_CHECK_FAILED;
            return;
          }
          if (check.owner === undefined) {
            const why = printable(check.looked.join('; '));
            if (opts.force !== true) {
              const what =
                verb === 'redrive'
                  ? `Nothing was redriven: the events would go to ${group}.redrive, which nothing reads, and be marked redriven for good (a subscription re-created under this name starts at that topic's end and never gets them). Re-create the subscription first, or give --force if the group is served by something else (e.g. a library subscriber that is stopped now).`
                  : 'Nothing was purged (the HTTP route answers 404 for it too). Give --force to purge the dead letters of a deleted subscription anyway, or if the group is served by something else.';
              process.stderr.write(`ce-gateway deadletters ${verb}: refusing: no subscription owns ${who}: ${why}. ${what}\n`);
              process.exitCode = EXIT_CHECK_FAILED;
              return;
            }
            process.stderr.write(`ce-gateway deadletters ${verb}: --force: no subscription owns ${who} (${why}); going ahead\n`);
          }
          const result = verb === 'redrive' ? await dl.redrive(group, sel) : await dl.purge(group, sel);
          if (opts.json) process.stdout.write(`${JSON.stringify(result)}\n`);
          else if ('redriven' in result) {
            process.stdout.write(`redriven ${result.redriven} to ${group}.redrive\n`);
            for (const i of result.items) process.stdout.write(`${acted('redriven', i)}\n`);
            for (const s of result.skipped) process.stdout.write(`${printable(`skipped ${s.deadLetter.partition}@${s.deadLetter.offset} id=${s.id ?? '-'} source=${s.source ?? '-'}: ${s.reason}`)}\n`);
          } else {
            process.stdout.write(`purged ${result.purged}\n`);
            for (const i of result.items) process.stdout.write(`${acted('purged', i)}\n`);
          }
          if ('redriven' in result && result.redriven > 0) {
            // When the events arrive: at once where a member runs, else at a gateway's next look (redrive-note.ts).
            const members = check.owner?.by === 'members' ? check.owner.members : ((await gw.transport.groupMembers(group).catch(() => undefined))?.members ?? 0);
            const note = redriveNote({ redriven: result.redriven, ownedBy: check.owner?.by, members, idleStopMs: config.subscriptions.onDemand.idleStopMs, name, ...(check.owner?.by === 'stored' ? { state: check.owner.state } : {}) });
            if (note !== undefined) process.stderr.write(`${printable(note)}\n`);
          }
          if (result.notFound.length > 0) {
            process.stderr.write(`${printable(`not found: ${result.notFound.map(missing).join(', ')}`)}\n`);
            process.exitCode = EXIT_CHECK_FAILED;
          }
        });
      });
  }
}
