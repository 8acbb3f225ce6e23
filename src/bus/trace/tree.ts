/**
 * A correlation chain as a tree (bus spec T15, M2): every event of one `correlationid`, each under
 * the event named by its `causationid`. Events whose cause is not in the chain (the start, or a
 * cause outside the log's retention) are roots.
 */
import type { Envelope } from '../../envelope/types.js';

export interface ChainNode {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  readonly source: string;
  /** RFC 3339 as on the wire; may be absent. */
  readonly time?: string;
  readonly causationid?: string;
  readonly partitionkey?: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly children: ChainNode[];
}

export interface LocatedEvent {
  readonly event: Envelope;
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function timeOf(n: ChainNode): number {
  const t = n.time === undefined ? Number.NaN : Date.parse(n.time);
  return Number.isFinite(t) ? t : Number.MAX_SAFE_INTEGER;
}

/** Builds the forest; siblings and roots ordered by time, then topic/partition/offset. Duplicates (same source+id) are kept once. */
export function buildChain(events: readonly LocatedEvent[]): ChainNode[] {
  const byId = new Map<string, ChainNode>();
  const seen = new Set<string>();
  const nodes: ChainNode[] = [];
  for (const { event, topic, partition, offset } of events) {
    const a = event.attributes;
    const dedup = `${a.source}\u0000${a.id}`;
    if (seen.has(dedup)) continue;
    seen.add(dedup);
    const node: ChainNode = {
      id: a.id,
      name: str(a.eventname) ?? a.type,
      type: a.type,
      source: a.source,
      ...(a.time === undefined ? {} : { time: a.time }),
      ...(str(a.causationid) === undefined ? {} : { causationid: str(a.causationid) }),
      ...(str(a.partitionkey) === undefined ? {} : { partitionkey: str(a.partitionkey) }),
      topic,
      partition,
      offset: offset.toString(),
      children: [],
    };
    nodes.push(node);
    byId.set(a.id, node);
  }
  const roots: ChainNode[] = [];
  for (const n of nodes) {
    const parent = n.causationid === undefined ? undefined : byId.get(n.causationid);
    if (parent !== undefined && parent !== n) parent.children.push(n);
    else roots.push(n);
  }
  const order = (a: ChainNode, b: ChainNode): number => timeOf(a) - timeOf(b) || a.topic.localeCompare(b.topic) || a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset));
  const sortDeep = (list: ChainNode[]): void => {
    list.sort(order);
    for (const n of list) sortDeep(n.children);
  };
  sortDeep(roots);
  return roots;
}

/** Renders the forest as an indented tree with times relative to the first event. */
export function renderChain(correlationid: string, roots: readonly ChainNode[]): string {
  const all: ChainNode[] = [];
  const walk = (n: ChainNode): void => {
    all.push(n);
    n.children.forEach(walk);
  };
  roots.forEach(walk);
  if (all.length === 0) return `correlation ${correlationid}: no events found\n`;
  const start = Math.min(...all.map(timeOf));
  const lines = [`correlation ${correlationid}: ${all.length} event${all.length === 1 ? '' : 's'}`];
  const line = (n: ChainNode, prefix: string, last: boolean): void => {
    const t = timeOf(n);
    const rel = t === Number.MAX_SAFE_INTEGER ? '' : ` +${((t - start) / 1000).toFixed(3)}s`;
    lines.push(`${prefix}${last ? '└─ ' : '├─ '}${n.name}  ${n.time ?? '(no time)'}${rel}  source=${n.source}  id=${n.id}${n.partitionkey ? `  key=${n.partitionkey}` : ''}`);
    n.children.forEach((c, i) => line(c, `${prefix}${last ? '   ' : '│  '}`, i === n.children.length - 1));
  };
  roots.forEach((r, i) => line(r, '', i === roots.length - 1));
  return `${lines.join('\n')}\n`;
}
