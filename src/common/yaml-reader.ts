/**
 * Reading a parsed YAML document (eemeli/yaml's node tree) with every complaint pinned to the
 * line and column of the node it is about. Scenario files and timing files are read through
 * here so that no value is read without a position to blame.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { parseDuration } from './duration.js';

/** A position in a YAML file, 1-based. */
export interface SourcePos {
  line: number;
  col: number;
}

/** One complaint about a YAML file, at the line (and column) it is about. */
export interface YamlProblem extends SourcePos {
  message: string;
}

/**
 * Parse a YAML (or JSON) text into its root node and a reader pinned to its lines, or the
 * syntax errors at their lines (duplicate keys included).
 */
export function readYaml(text: string): { ok: true; root: Node | null; reader: YamlReader } | { ok: false; problems: YamlProblem[] } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => {
        const at = e.linePos?.[0] ?? { line: 1, col: 1 };
        const first = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '').trim();
        return { line: at.line, col: at.col, message: `YAML syntax error: ${first}` };
      }),
    };
  }
  return { ok: true, root: doc.contents as Node | null, reader: new YamlReader(lines) };
}

/** A mapping's entries by key, each with its key node (for "unknown key" at the key). */
export type Entries = Map<string, { key: Node; value: Node | null }>;

export class YamlReader {
  readonly problems: YamlProblem[] = [];

  constructor(
    private readonly lines: LineCounter,
    private readonly fallback: SourcePos = { line: 1, col: 1 },
  ) {}

  pos(node: Node | null | undefined, near?: Node | null): SourcePos {
    const offset = node?.range?.[0] ?? near?.range?.[0];
    if (offset === undefined) return this.fallback;
    const { line, col } = this.lines.linePos(offset);
    return { line, col };
  }

  problem(at: Node | SourcePos | null | undefined, message: string, near?: Node | null): void {
    const p = at && 'line' in at && typeof at.line === 'number' ? (at as SourcePos) : this.pos(at as Node | null | undefined, near);
    this.problems.push({ line: p.line, col: p.col, message });
  }

  /** The entries of a mapping, or a problem saying `what` must be one. */
  entries(node: Node | null, what: string, near?: Node | null): Entries | undefined {
    if (!isMap(node)) {
      this.problem(node, `${what} must be a mapping (key: value lines)`, near);
      return undefined;
    }
    const out: Entries = new Map();
    for (const pair of node.items) {
      const key = pair.key as Node | null;
      if (!isScalar(key) || (typeof key.value !== 'string' && typeof key.value !== 'number')) {
        this.problem(key, `${what}: keys must be plain words`, node);
        continue;
      }
      out.set(String(key.value), { key, value: (pair.value as Node | null) ?? null });
    }
    return out;
  }

  /** Complain about every key of `entries` not in `allowed`; whether there was any. */
  onlyKeys(entries: Entries, allowed: readonly string[], what: string): boolean {
    let found = false;
    for (const [name, { key }] of entries) {
      if (!allowed.includes(name)) {
        found = true;
        const near = allowed.find((k) => editDistance(k, name) <= 2);
        const known = allowed.length ? `; ${what} takes ${allowed.map((k) => `"${k}"`).join(', ')}` : `; ${what} takes none`;
        this.problem(key, `unknown key "${name}" in ${what}${near ? ` (did you mean "${near}"?)` : ''}${known}`);
      }
    }
    return found;
  }

  scalar(node: Node | null): unknown {
    return isScalar(node) ? node.value : undefined;
  }

  string(node: Node | null, what: string, near?: Node | null): string | undefined {
    const v = this.scalar(node);
    if (typeof v === 'string' && v.length > 0) return v;
    if (typeof v === 'number') return String(v);
    this.problem(node, `${what} must be a non-empty string`, near);
    return undefined;
  }

  number(node: Node | null, what: string, check: (n: number) => boolean, range: string, near?: Node | null): number | undefined {
    const v = this.scalar(node);
    if (typeof v === 'number' && Number.isFinite(v) && check(v)) return v;
    this.problem(node, `${what} must be ${range}, not ${describe(node)}`, near);
    return undefined;
  }

  integer(node: Node | null, what: string, min: number, max: number, near?: Node | null): number | undefined {
    return this.number(node, what, (n) => Number.isInteger(n) && n >= min && n <= max, `a whole number from ${min} to ${max}`, near);
  }

  duration(node: Node | null, what: string, opts: { min?: number } = {}, near?: Node | null): number | undefined {
    const v = this.scalar(node);
    if (typeof v !== 'string' && typeof v !== 'number') {
      this.problem(node, `${what} must be a duration such as "30s", not ${describe(node)}`, near);
      return undefined;
    }
    const d = parseDuration(String(v));
    if ('error' in d) {
      this.problem(node, `${what}: ${d.error}`, near);
      return undefined;
    }
    if (d.ms < (opts.min ?? 0)) {
      this.problem(node, `${what} must be ${opts.min === 1 ? 'longer than 0' : `at least ${opts.min} ms`}, not ${JSON.stringify(String(v))}`, near);
      return undefined;
    }
    return d.ms;
  }

  /** A list of scalars read by `item`. */
  list<T>(node: Node | null, what: string, item: (n: Node | null) => T | undefined, near?: Node | null): T[] | undefined {
    if (!isSeq(node) || node.items.length === 0) {
      this.problem(node, `${what} must be a non-empty list`, near);
      return undefined;
    }
    const out: T[] = [];
    let ok = true;
    for (const n of node.items as (Node | null)[]) {
      const v = item(n);
      if (v === undefined) ok = false;
      else out.push(v);
    }
    return ok ? out : undefined;
  }
}

/** A value as the messages quote it. */
export function describe(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) return node.value === null ? 'nothing' : JSON.stringify(node.value);
  return 'that';
}

/** Levenshtein distance, for "did you mean" (short words only). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}
