/**
 * An Avro schema as a resolved graph: named types looked up, names qualified, aliases made full,
 * logical-type attributes kept. Built from the schema JSON in one walk that also collects every
 * declaration problem with the field path where it sits (the checker and the validator share it).
 * Spec: Avro 1.11 specification §"Schema Declaration" (primitive and complex types, names,
 * namespaces, aliases), §"Logical Types" (decimal precision and scale), §"Unions" (no nested
 * unions, no two branches of the same type or name).
 */

/** Avro primitive type names. */
export const primitiveTypes = ['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string'] as const;
export type PrimitiveName = (typeof primitiveTypes)[number];

/** A logical type annotation as declared (`logicalType` plus decimal's precision and scale). */
export interface LogicalInfo {
  readonly logicalType: string;
  readonly precision?: number;
  readonly scale?: number;
}

export interface PrimitiveNode {
  readonly kind: 'primitive';
  readonly type: PrimitiveName;
  readonly logical?: LogicalInfo;
}
interface NamedBase {
  /** Unqualified name. */
  readonly name: string;
  /** Namespace, '' for none. */
  readonly namespace: string;
  readonly fullName: string;
  /** Aliases, fully qualified (Spec: §"Aliases": relative aliases take the type's namespace). */
  readonly aliases: readonly string[];
}
export interface RecordField {
  readonly name: string;
  readonly aliases: readonly string[];
  readonly type: AvroNode;
  readonly hasDefault: boolean;
  readonly default?: unknown;
}
export interface RecordNode extends NamedBase {
  readonly kind: 'record';
  /** Filled after the record itself is registered, so that recursive references resolve. */
  readonly fields: RecordField[];
}
export interface EnumNode extends NamedBase {
  readonly kind: 'enum';
  readonly symbols: readonly string[];
  /** The enum's own default symbol (Avro ≥ 1.9), used for unknown writer symbols. */
  readonly default?: string;
}
export interface FixedNode extends NamedBase {
  readonly kind: 'fixed';
  readonly size: number;
  readonly logical?: LogicalInfo;
}
export interface ArrayNode {
  readonly kind: 'array';
  readonly items: AvroNode;
}
export interface MapNode {
  readonly kind: 'map';
  readonly values: AvroNode;
}
export interface UnionNode {
  readonly kind: 'union';
  readonly branches: readonly AvroNode[];
}
export type NamedNode = RecordNode | EnumNode | FixedNode;
export type AvroNode = PrimitiveNode | NamedNode | ArrayNode | MapNode | UnionNode;

/** A declaration problem: `path` is the field path (`/fields/price`, `/fields/tags/items`, `/` for the root). */
export interface SchemaProblem {
  readonly path: string;
  readonly message: string;
}

/** The result of {@link buildAvroModel}: the graph (best effort when there are problems) and the problems. */
export interface AvroModel {
  readonly root: AvroNode;
  readonly problems: readonly SchemaProblem[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isPrimitive(t: unknown): t is PrimitiveName {
  return typeof t === 'string' && (primitiveTypes as readonly string[]).includes(t);
}

/** Joins field-path segments: `join('/', 'fields', 'x')` → `/fields/x`. */
export function joinPath(base: string, ...segments: string[]): string {
  const head = base === '/' ? '' : base;
  return `${head}/${segments.join('/')}`;
}

function maxDecimalPrecisionForFixed(size: number): number {
  // Spec §"Decimal": precision ≤ floor(log10(2^(8·size − 1) − 1)).
  return Math.floor(Math.log10(2) * (8 * size - 1));
}

class Builder {
  readonly problems: SchemaProblem[] = [];
  readonly named = new Map<string, NamedNode>();

  problem(path: string, message: string): void {
    this.problems.push({ path, message });
  }

  qualify(name: string, namespace: string): string {
    return name.includes('.') || namespace === '' ? name : `${namespace}.${name}`;
  }

  checkFullName(full: string, path: string, what: string): void {
    const parts = full.split('.');
    if (parts.some((p) => !NAME.test(p))) this.problem(path, `${what} "${full}" is not a valid Avro name (letters, digits and _, not starting with a digit; dots only between namespace parts)`);
  }

  logical(schema: Record<string, unknown>, underlying: string, path: string, fixedSize?: number): LogicalInfo | undefined {
    const lt = schema['logicalType'];
    if (typeof lt !== 'string') return undefined;
    if (lt !== 'decimal') return { logicalType: lt };
    const precision = schema['precision'];
    const scale = schema['scale'] ?? 0;
    if (underlying !== 'bytes' && underlying !== 'fixed') {
      this.problem(path, `decimal must annotate bytes or fixed, not ${underlying}`);
      return undefined;
    }
    if (typeof precision !== 'number' || !Number.isInteger(precision) || precision < 1) {
      this.problem(path, 'decimal needs "precision", an integer ≥ 1');
      return undefined;
    }
    if (typeof scale !== 'number' || !Number.isInteger(scale) || scale < 0 || scale > precision) {
      this.problem(path, `decimal "scale" must be an integer from 0 to the precision (${precision}), found ${JSON.stringify(scale)}`);
      return undefined;
    }
    if (fixedSize !== undefined && precision > maxDecimalPrecisionForFixed(fixedSize)) {
      this.problem(path, `decimal precision ${precision} does not fit in fixed(${fixedSize}) (at most ${maxDecimalPrecisionForFixed(fixedSize)})`);
      return undefined;
    }
    return { logicalType: 'decimal', precision, scale };
  }

  namedHeader(schema: Record<string, unknown>, namespace: string, path: string, what: string): { name: string; namespace: string; fullName: string; aliases: string[] } {
    const raw = schema['name'];
    let fullName = '';
    if (typeof raw !== 'string' || raw === '') {
      this.problem(path, `${what} needs a "name"`);
      fullName = `anonymous${this.named.size}`;
    } else {
      const ns = typeof schema['namespace'] === 'string' && !raw.includes('.') ? schema['namespace'] : namespace;
      fullName = this.qualify(raw, ns);
      this.checkFullName(fullName, path, `${what} name`);
    }
    const dot = fullName.lastIndexOf('.');
    const ownNs = dot < 0 ? '' : fullName.slice(0, dot);
    const aliasesRaw = schema['aliases'];
    const aliases: string[] = [];
    if (aliasesRaw !== undefined) {
      if (!Array.isArray(aliasesRaw) || aliasesRaw.some((a) => typeof a !== 'string')) this.problem(path, `${what} "aliases" must be an array of names`);
      else for (const a of aliasesRaw as string[]) {
        const full = this.qualify(a, ownNs);
        this.checkFullName(full, path, `${what} alias`);
        aliases.push(full);
      }
    }
    const name = dot < 0 ? fullName : fullName.slice(dot + 1);
    // Spec §"Names": primitive type names "may not be defined in any namespace".
    if (isPrimitive(name)) this.problem(path, `${what} may not be named after the primitive type ${name}${dot < 0 ? '' : ` (not even in namespace ${ownNs}: primitive type names may not be defined in any namespace)`}`);
    return { name, namespace: ownNs, fullName, aliases };
  }

  register(node: NamedNode, path: string): void {
    if (this.named.has(node.fullName)) this.problem(path, `type ${node.fullName} is defined twice`);
    else this.named.set(node.fullName, node);
  }

  build(schema: unknown, namespace: string, path: string): AvroNode {
    if (typeof schema === 'string') {
      if (isPrimitive(schema)) return { kind: 'primitive', type: schema };
      // Spec §"Names": a name without a dot is in the enclosing namespace. Avro Java (the
      // registries) also tries the null namespace; avsc does not, and neither does this check.
      const found = this.named.get(this.qualify(schema, namespace));
      if (found !== undefined) return found;
      const inNull = namespace !== '' && !schema.includes('.') ? this.named.get(schema) : undefined;
      if (inNull !== undefined) {
        this.problem(
          path,
          `unknown type "${schema}": inside namespace ${namespace} it means ${namespace}.${schema} (Avro 1.11 §"Names"), and the type ${schema} defined earlier has no namespace, so it cannot be referenced from here — give ${schema} a namespace and reference it by its full name (Avro Java and the schema registries fall back to the null namespace and accept this; avsc, which this project encodes with, refuses it)`,
        );
        return inNull;
      }
      this.problem(path, `unknown type "${schema}" (not a primitive and not defined earlier)`);
      return { kind: 'primitive', type: 'null' };
    }
    if (Array.isArray(schema)) return this.union(schema, namespace, path);
    if (!isObject(schema)) {
      this.problem(path, `a schema is a type name, an object or an array (union), not ${JSON.stringify(schema)}`);
      return { kind: 'primitive', type: 'null' };
    }
    const type = schema['type'];
    if (isPrimitive(type)) {
      const logical = this.logical(schema, type, path);
      return logical === undefined ? { kind: 'primitive', type } : { kind: 'primitive', type, logical };
    }
    switch (type) {
      case 'record':
      case 'error':
        return this.record(schema, namespace, path);
      case 'enum':
        return this.enumType(schema, namespace, path);
      case 'fixed':
        return this.fixed(schema, namespace, path);
      case 'array':
        return { kind: 'array', items: this.build(schema['items'], namespace, joinPath(path, 'items')) };
      case 'map':
        return { kind: 'map', values: this.build(schema['values'], namespace, joinPath(path, 'values')) };
      default:
        // {"type": "<named type reference>"} or {"type": [union]} or {"type": {...}}
        if (type !== undefined && (typeof type === 'string' || Array.isArray(type) || isObject(type))) return this.build(type, namespace, path);
        this.problem(path, `unknown type ${JSON.stringify(type)}`);
        return { kind: 'primitive', type: 'null' };
    }
  }

  record(schema: Record<string, unknown>, namespace: string, path: string): RecordNode {
    const header = this.namedHeader(schema, namespace, path, 'record');
    const node: RecordNode = { kind: 'record', ...header, fields: [] };
    this.register(node, path);
    const fields = schema['fields'];
    if (!Array.isArray(fields)) {
      this.problem(path, `record ${header.fullName} needs "fields", an array`);
      return node;
    }
    const seen = new Set<string>();
    fields.forEach((f: unknown, i) => {
      if (!isObject(f) || typeof f['name'] !== 'string') {
        this.problem(joinPath(path, 'fields', String(i)), 'a field needs a "name"');
        return;
      }
      const name = f['name'];
      const fpath = joinPath(path, 'fields', name);
      if (!NAME.test(name)) this.problem(fpath, `field name "${name}" is not a valid Avro name (letters, digits and _, not starting with a digit)`);
      if (seen.has(name)) this.problem(fpath, `field "${name}" is declared twice`);
      seen.add(name);
      if (!('type' in f)) this.problem(fpath, `field "${name}" needs a "type"`);
      const type = this.build(f['type'], header.namespace, fpath);
      const aliasesRaw = f['aliases'];
      const aliases = Array.isArray(aliasesRaw) ? aliasesRaw.filter((a): a is string => typeof a === 'string') : [];
      for (const a of aliases) if (!NAME.test(a)) this.problem(fpath, `field alias "${a}" is not a valid Avro name`);
      node.fields.push('default' in f ? { name, aliases, type, hasDefault: true, default: f['default'] } : { name, aliases, type, hasDefault: false });
    });
    return node;
  }

  enumType(schema: Record<string, unknown>, namespace: string, path: string): EnumNode {
    const header = this.namedHeader(schema, namespace, path, 'enum');
    const raw = schema['symbols'];
    let symbols: string[] = [];
    if (!Array.isArray(raw) || raw.some((s) => typeof s !== 'string')) this.problem(path, `enum ${header.fullName} needs "symbols", an array of names`);
    else {
      symbols = raw as string[];
      for (const s of symbols) if (!NAME.test(s)) this.problem(path, `enum symbol "${s}" is not a valid Avro name`);
      const dup = symbols.find((s, i) => symbols.indexOf(s) !== i);
      if (dup !== undefined) this.problem(path, `enum symbol "${dup}" is listed twice`);
    }
    const def = schema['default'];
    let node: EnumNode;
    if (def === undefined) node = { kind: 'enum', ...header, symbols };
    else {
      if (typeof def !== 'string' || !symbols.includes(def)) this.problem(path, `enum default ${JSON.stringify(def)} is not one of its symbols`);
      node = typeof def === 'string' ? { kind: 'enum', ...header, symbols, default: def } : { kind: 'enum', ...header, symbols };
    }
    this.register(node, path);
    return node;
  }

  fixed(schema: Record<string, unknown>, namespace: string, path: string): FixedNode {
    const header = this.namedHeader(schema, namespace, path, 'fixed');
    const size = schema['size'];
    let n = 0;
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) this.problem(path, `fixed ${header.fullName} needs "size", an integer ≥ 0 (bytes)`);
    else n = size;
    const logical = this.logical(schema, 'fixed', path, n);
    const node: FixedNode = logical === undefined ? { kind: 'fixed', ...header, size: n } : { kind: 'fixed', ...header, size: n, logical };
    this.register(node, path);
    return node;
  }

  union(schemas: unknown[], namespace: string, path: string): UnionNode {
    const branches = schemas.map((s) => this.build(s, namespace, path));
    const keys = new Set<string>();
    branches.forEach((b, i) => {
      if (b.kind === 'union') this.problem(path, 'a union may not contain a union directly');
      const key = b.kind === 'primitive' ? b.type : b.kind === 'array' || b.kind === 'map' ? b.kind : b.kind === 'union' ? `union${i}` : b.fullName;
      if (keys.has(key)) this.problem(path, `union has two branches of type ${key}`);
      keys.add(key);
    });
    return { kind: 'union', branches };
  }
}

/**
 * Builds the graph of a parsed schema JSON value, collecting declaration problems (names, duplicate
 * fields and types, unknown references, enum symbols and default, fixed size, decimal precision
 * and scale, union branches). Field defaults are checked separately ({@link defaultProblems}).
 * Never throws.
 * Spec: Avro 1.11 §"Schema Declaration", §"Names", §"Aliases", §"Unions", §"Logical Types".
 */
export function buildAvroModel(json: unknown): AvroModel {
  const b = new Builder();
  const root = b.build(json, '', '/');
  return { root, problems: b.problems };
}

/** Short human description of a type: `double`, `decimal(18,5)`, `record Price`, `union [null, string]`. */
export function describeType(node: AvroNode): string {
  switch (node.kind) {
    case 'primitive':
      if (node.logical === undefined) return node.type;
      if (node.logical.logicalType === 'decimal') return `decimal(${node.logical.precision ?? '?'},${node.logical.scale ?? 0})`;
      return `${node.type} ${node.logical.logicalType}`;
    case 'record':
    case 'enum':
      return `${node.kind} ${node.name}`;
    case 'fixed':
      return node.logical?.logicalType === 'decimal'
        ? `fixed ${node.name}(${node.size}) decimal(${node.logical.precision ?? '?'},${node.logical.scale ?? 0})`
        : `fixed ${node.name}(${node.size})`;
    case 'array':
      return `array<${describeType(node.items)}>`;
    case 'map':
      return `map<${describeType(node.values)}>`;
    case 'union':
      return `union [${node.branches.map(describeType).join(', ')}]`;
  }
}
