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
  /**
   * Set on a root whose `causationid` names an event of the chain that is, through its own causes,
   * caused by this one (a causation cycle, which a correct producer never writes): the cycle is
   * cut here so that every event of the chain is shown.
   */
  causationCycle?: true;
  /**
   * Set on a root that was {@link MAX_CHAIN_DEPTH} levels below a root: the tree is cut there and
   * this event starts a root of its own (its cause is the last event of the level above). A
   * chain of thousands of causes one under another stays readable, and no renderer (JSON
   * included) recurses without bound.
   */
  depthCut?: true;
  readonly children: ChainNode[];
}

/**
 * Most levels of one tree: deeper events start a root of their own, marked `depthCut`. A chain
 * is written by producers (partners among them): its depth is theirs to choose, and
 * `JSON.stringify` (like every recursive renderer) fails a few thousand levels down.
 */
export const MAX_CHAIN_DEPTH = 200;

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

/**
 * Builds the forest; siblings and roots ordered by time, then topic/partition/offset. Duplicates
 * (same source+id) are kept once. A `causationid` names an event by `id` alone (bus spec M2): when
 * several sources used that id, the first read is the cause. Events of a causation cycle are
 * never lost: the cycle is cut at its earliest event, which becomes a root marked `causationCycle`.
 */
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
    if (!byId.has(a.id)) byId.set(a.id, node);
  }
  const roots: ChainNode[] = [];
  const parentOf = new Map<ChainNode, ChainNode>();
  for (const n of nodes) {
    const parent = n.causationid === undefined ? undefined : byId.get(n.causationid);
    if (parent !== undefined && parent !== n) {
      parent.children.push(n);
      parentOf.set(n, parent);
    } else roots.push(n);
  }
  const order = (a: ChainNode, b: ChainNode): number => timeOf(a) - timeOf(b) || a.topic.localeCompare(b.topic) || a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset));
  // Events no root reaches hang on a causation cycle: cut each cycle at its earliest event.
  const reached = new Set<ChainNode>();
  const reach = (from: ChainNode): void => {
    const stack = [from];
    for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
      if (reached.has(n)) continue;
      reached.add(n);
      stack.push(...n.children);
    }
  };
  roots.forEach(reach);
  for (const stranded of nodes) {
    if (reached.has(stranded)) continue;
    // Up the causes until one repeats: that one and the causes from it round to it are the cycle.
    const path = new Set<ChainNode>();
    let n = stranded;
    while (!path.has(n)) {
      path.add(n);
      n = parentOf.get(n)!;
    }
    const cycle: ChainNode[] = [n];
    for (let m = parentOf.get(n)!; m !== n; m = parentOf.get(m)!) cycle.push(m);
    const cut = cycle.sort(order)[0]!;
    const parent = parentOf.get(cut)!;
    parent.children.splice(parent.children.indexOf(cut), 1);
    parentOf.delete(cut);
    cut.causationCycle = true;
    roots.push(cut);
    reach(cut);
  }
  // Breadth first, level by level: an event MAX_CHAIN_DEPTH levels down starts a root of its own.
  for (let r = 0; r < roots.length; r++) {
    let level: ChainNode[] = [roots[r]!];
    for (let depth = 1; level.length > 0; depth++) {
      const next: ChainNode[] = [];
      for (const n of level) {
        if (depth < MAX_CHAIN_DEPTH) next.push(...n.children);
        else {
          for (const c of n.children) {
            c.depthCut = true;
            roots.push(c);
          }
          n.children.length = 0;
        }
      }
      level = next;
    }
  }
  const stack: ChainNode[][] = [roots];
  for (let list = stack.pop(); list !== undefined; list = stack.pop()) {
    list.sort(order);
    for (const n of list) if (n.children.length > 0) stack.push(n.children);
  }
  return roots;
}

/** How many events the forest holds (duplicates were kept once by {@link buildChain}). */
export function chainSize(roots: readonly ChainNode[]): number {
  let count = 0;
  const stack = [...roots];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    count++;
    stack.push(...n.children);
  }
  return count;
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
  // A loop, not Math.min(...all): a spread of 100,000s of arguments overflows the stack.
  let start = Number.MAX_SAFE_INTEGER;
  for (const n of all) start = Math.min(start, timeOf(n));
  const lines = [`correlation ${correlationid}: ${all.length} event${all.length === 1 ? '' : 's'}`];
  const line = (n: ChainNode, prefix: string, last: boolean): void => {
    const t = timeOf(n);
    const rel = t === Number.MAX_SAFE_INTEGER ? '' : ` +${((t - start) / 1000).toFixed(3)}s`;
    const cycle = n.causationCycle === true ? `  (causation cycle: caused by ${n.causationid ?? '?'}, which it caused)` : n.depthCut === true ? `  (continues the chain under ${n.causationid ?? '?'}: cut at ${MAX_CHAIN_DEPTH} levels)` : '';
    lines.push(`${prefix}${last ? '└─ ' : '├─ '}${n.name}  ${n.time ?? '(no time)'}${rel}  source=${n.source}  id=${n.id}${n.partitionkey ? `  key=${n.partitionkey}` : ''}${cycle}`);
    n.children.forEach((c, i) => line(c, `${prefix}${last ? '   ' : '│  '}`, i === n.children.length - 1));
  };
  roots.forEach((r, i) => line(r, '', i === roots.length - 1));
  return `${lines.join('\n')}\n`;
}
