/**
 * Timing files: a YAML (or JSON) mapping that extends a profile and overrides figures. Every
 * problem is reported with its line and column, as scenario and hardware profile files are,
 * and a file with any problem is refused whole: nothing of it is used.
 *
 *   name: slow-dc                 # default: the file's name
 *   description: our DC on a bad day
 *   extends: smartos              # a built-in profile (default: instant)
 *   scale: 2                      # multiplies every figure taken from `extends`
 *   tasks:
 *     machine_create:
 *       fetch_dataset: {p50: 5s, p99: 30s, rate: 50MiB/s}
 *     nop: 100ms                   # a task without steps: its `run`
 *   vm:
 *     boot: {p50: 3s, p99: 10s, brands: {bhyve: {p50: 20s, p99: 60s}}}
 *   cn:
 *     boot: {min: 2m, max: 4m}
 *
 * A figure is a duration (fixed), {fixed}, {min, max} (uniform) or {p50, p99} (log-normal),
 * with `rate` (bytes per second, where a phase moves bytes) and `brands` (other figures for
 * some brands) as it needs.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isMap, isScalar, type Node } from 'yaml';
import { parseDuration } from '../common/duration.js';
import { describe as show, readYaml, type YamlProblem, type YamlReader } from '../common/yaml-reader.js';
import { CN_STAGES, phasesOf, RATE_KEYS, TASK_NAMES, VM_STAGES, WAITLIST_STAGES, WORKFLOW_STAGES } from './catalogue.js';
import type { Figure, Spread } from './figure.js';
import { scaled } from './figure.js';
import { makeProfile, type TimingProfile } from './profile.js';

/** Brands a figure may name (vmadm's, src/vmadm/properties.ts ALL_BRANDS). */
export const FIGURE_BRANDS = ['joyent', 'joyent-minimal', 'lx', 'bhyve', 'kvm', 'builder'] as const;

const FIGURE_KEYS = ['fixed', 'min', 'max', 'p50', 'p99', 'rate', 'brands'] as const;
const SECTIONS = {
  vm: Object.keys(VM_STAGES),
  cn: Object.keys(CN_STAGES),
  workflow: Object.keys(WORKFLOW_STAGES),
  waitlist: Object.keys(WAITLIST_STAGES),
} as const;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_SCALE = 1000;
const MAX_RATE = 1e12;

export type TimingFileResult = { ok: true; profile: TimingProfile } | { ok: false; problems: YamlProblem[] };

/**
 * Read a timing file's text. `builtins` are the profiles `extends` may name; `fileName` gives
 * the default name and the profile's source.
 */
export function parseTimingFile(text: string, fileName: string, builtins: ReadonlyMap<string, TimingProfile>): TimingFileResult {
  const parsed = readYaml(text);
  if (!parsed.ok) return parsed;
  const r = parsed.reader;
  const root = parsed.root;
  const e = r.entries(root, 'a timing file');
  if (!e) return { ok: false, problems: r.problems };
  r.onlyKeys(e, ['name', 'description', 'extends', 'scale', 'tasks', ...Object.keys(SECTIONS)], 'a timing file');

  let name = path.basename(fileName).replace(/\.(ya?ml|json)$/i, '');
  const n = e.get('name');
  if (n) {
    const v = r.string(n.value, 'name', n.key);
    if (v !== undefined && !NAME_RE.test(v)) r.problem(n.value ?? n.key, 'name must be 1-64 letters, digits, dots, dashes or underscores');
    else if (v !== undefined) name = v;
  }
  let description = `timing file ${fileName}`;
  const d = e.get('description');
  if (d) description = r.string(d.value, 'description', d.key) ?? description;

  let base = builtins.get('instant');
  const x = e.get('extends');
  if (x) {
    const v = r.string(x.value, 'extends', x.key);
    if (v !== undefined) {
      base = builtins.get(v);
      if (!base) r.problem(x.value ?? x.key, `extends names no built-in timing profile "${v}"; known: ${[...builtins.keys()].join(', ')}`);
    }
  }
  let scale = 1;
  const sc = e.get('scale');
  if (sc) scale = r.number(sc.value, 'scale', (v) => v > 0 && v <= MAX_SCALE, `a number over 0 up to ${MAX_SCALE}`, sc.key) ?? 1;

  const own = new Map<string, Figure>();
  const t = e.get('tasks');
  if (t) readTasks(r, t.value ?? t.key, own);
  for (const [section, stages] of Object.entries(SECTIONS)) {
    const s = e.get(section);
    if (!s) continue;
    const entries = r.entries(s.value, section, s.key);
    if (!entries) continue;
    r.onlyKeys(entries, stages, section);
    for (const [stage, { key, value }] of entries) {
      if (!stages.includes(stage)) continue;
      const fullKey = `${section}.${stage}`;
      const f = readFigure(r, value, fullKey, key);
      if (f) own.set(fullKey, f);
    }
  }
  if (r.problems.length > 0 || !base) return { ok: false, problems: sortProblems(r.problems) };
  const figures = new Map<string, Figure>();
  for (const [key, f] of base.figures) figures.set(key, scaled(f, scale));
  for (const [key, f] of own) figures.set(key, f);
  return { ok: true, profile: makeProfile(name, description, fileName, figures) };
}

function readTasks(r: YamlReader, node: Node | null, out: Map<string, Figure>): void {
  const tasks = r.entries(node, 'tasks');
  if (!tasks) return;
  r.onlyKeys(tasks, TASK_NAMES, 'tasks');
  for (const [task, { key, value }] of tasks) {
    if (!TASK_NAMES.includes(task)) continue;
    const phases = phasesOf(task);
    // A figure written for the task itself is its `run`, for a task that has one.
    if (!isMap(value) || isFigureMap(value)) {
      if (!phases.includes('run')) {
        r.problem(value ?? key, `task ${task} has phases (${phases.join(', ')}): give a figure for each, not one for the task`);
        continue;
      }
      const f = readFigure(r, value, `tasks.${task}.run`, key);
      if (f) out.set(`tasks.${task}.run`, f);
      continue;
    }
    const byPhase = r.entries(value, `task ${task}`, key)!;
    r.onlyKeys(byPhase, phases, `task ${task}'s phases`);
    for (const [phase, p] of byPhase) {
      if (!phases.includes(phase)) continue;
      const f = readFigure(r, p.value, `tasks.${task}.${phase}`, p.key);
      if (f) out.set(`tasks.${task}.${phase}`, f);
    }
  }
}

/** A mapping whose keys are a figure's (fixed, p50 ...), not phase names. */
function isFigureMap(node: Node): boolean {
  if (!isMap(node)) return false;
  return node.items.every((pair) => isScalar(pair.key) && (FIGURE_KEYS as readonly string[]).includes(String(pair.key.value)));
}

function readFigure(r: YamlReader, node: Node | null, key: string, near: Node | null, inBrand = false): Figure | undefined {
  if (!isMap(node)) {
    const ms = readDuration(r, node, key, near);
    return ms === undefined ? undefined : { spread: { kind: 'fixed', ms } };
  }
  const e = r.entries(node, key, near)!;
  r.onlyKeys(e, inBrand ? FIGURE_KEYS.filter((k) => k !== 'brands') : FIGURE_KEYS, `the figure of ${key}`);
  const dur = (k: string): number | undefined => {
    const v = e.get(k);
    return v ? readDuration(r, v.value, `${key} ${k}`, v.key) : undefined;
  };
  const has = (k: string): boolean => e.has(k);
  const kinds = [has('fixed'), has('min') || has('max'), has('p50') || has('p99')].filter(Boolean).length;
  let spread: Spread | undefined;
  if (kinds !== 1) {
    r.problem(node, `the figure of ${key} needs exactly one of: fixed; min and max (uniform); p50 and p99 (log-normal)`);
  } else if (has('fixed')) {
    const ms = dur('fixed');
    if (ms !== undefined) spread = { kind: 'fixed', ms };
  } else if (has('min') || has('max')) {
    if (!has('min') || !has('max')) r.problem(node, `the uniform figure of ${key} needs both min and max`);
    const min = dur('min');
    const max = dur('max');
    if (min !== undefined && max !== undefined) {
      if (max < min) r.problem(e.get('max')!.value ?? node, `${key}: max (${max} ms) is below min (${min} ms)`);
      else spread = { kind: 'uniform', minMs: min, maxMs: max };
    }
  } else {
    if (!has('p50') || !has('p99')) r.problem(node, `the log-normal figure of ${key} needs both p50 and p99`);
    const p50 = dur('p50');
    const p99 = dur('p99');
    if (p50 !== undefined && p99 !== undefined) {
      if (p99 < p50) r.problem(e.get('p99')!.value ?? node, `${key}: p99 (${p99} ms) is below p50 (${p50} ms)`);
      else spread = { kind: 'lognormal', p50Ms: p50, p99Ms: p99 };
    }
  }
  const figure: Figure | undefined = spread ? { spread } : undefined;
  const rate = e.get('rate');
  if (rate) {
    if (!RATE_KEYS.has(key)) {
      r.problem(rate.key, `${key} moves no bytes: a rate is only for ${[...RATE_KEYS].join(', ')}`);
    } else {
      const bps = readRate(r, rate.value, key, rate.key);
      if (bps !== undefined && figure) figure.rateBytesPerSecond = bps;
    }
  }
  const brands = e.get('brands');
  if (brands && !inBrand) {
    const be = r.entries(brands.value, `${key} brands`, brands.key);
    if (be) {
      r.onlyKeys(be, FIGURE_BRANDS, `${key} brands`);
      const out: Record<string, Figure> = {};
      for (const [brand, b] of be) {
        if (!(FIGURE_BRANDS as readonly string[]).includes(brand)) continue;
        const f = readFigure(r, b.value, `${key} (brand ${brand})`, b.key, true);
        if (f) out[brand] = f;
      }
      if (figure) figure.brands = out;
    }
  }
  return figure;
}

/** A duration, never negative: "250ms", "4s", "2m", "1m30s". */
function readDuration(r: YamlReader, node: Node | null, what: string, near: Node | null): number | undefined {
  const v = isScalar(node) ? node.value : undefined;
  if (typeof v === 'number' && v < 0) {
    r.problem(node, `${what} must not be negative (${v})`, near);
    return undefined;
  }
  if (typeof v === 'string' && v.trim().startsWith('-')) {
    r.problem(node, `${what} must not be negative (${JSON.stringify(v)})`, near);
    return undefined;
  }
  if (typeof v === 'number' && v === 0) return 0;
  if (typeof v !== 'string' && typeof v !== 'number') {
    r.problem(node ?? near, `${what} must be a duration such as "250ms" or "4s", not ${show(node)}`, near);
    return undefined;
  }
  const d = parseDuration(String(v));
  if ('error' in d) {
    r.problem(node, `${what}: ${d.error}`, near);
    return undefined;
  }
  return d.ms;
}

const RATE_UNITS: Record<string, number> = {
  'B': 1, 'KB': 1e3, 'MB': 1e6, 'GB': 1e9, 'KiB': 1024, 'MiB': 1024 ** 2, 'GiB': 1024 ** 3,
};
const RATE_RE = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)\/s$/;

/** Bytes per second: "100MiB/s", "1.5GB/s", or a number of bytes per second. Never 0. */
function readRate(r: YamlReader, node: Node | null, key: string, near: Node | null): number | undefined {
  const v = isScalar(node) ? node.value : undefined;
  let bps: number | undefined;
  if (typeof v === 'number') bps = v;
  else if (typeof v === 'string') {
    const m = RATE_RE.exec(v.trim());
    if (m) bps = Number(m[1]) * RATE_UNITS[m[2]!]!;
    else if (v.trim().startsWith('-')) bps = -1;
  }
  if (bps === undefined) {
    r.problem(node ?? near, `the rate of ${key} must be bytes per second such as "100MiB/s" or "1GB/s", not ${show(node)}`, near);
    return undefined;
  }
  if (!(bps > 0) || bps > MAX_RATE) {
    r.problem(node ?? near, `the rate of ${key} must be more than 0 (and at most 1TB/s), not ${show(node)}`, near);
    return undefined;
  }
  return bps;
}

function sortProblems(list: YamlProblem[]): YamlProblem[] {
  return [...list].sort((a, b) => a.line - b.line || a.col - b.col);
}

/** `file:line:col: message` lines, as the daemon and the control API report them. */
export function formatProblems(file: string, problems: readonly YamlProblem[]): string {
  return problems.map((p) => `${file}:${p.line}:${p.col}: ${p.message}`).join('\n');
}

/** Read a timing file from disk; a problem (or an unreadable file) is thrown as TimingFileError. */
export async function loadTimingFile(file: string, builtins: ReadonlyMap<string, TimingProfile>): Promise<TimingProfile> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    throw new TimingFileError(`cannot read timing file ${file}: ${(err as Error).message}`);
  }
  const res = parseTimingFile(text, file, builtins);
  if (!res.ok) throw new TimingFileError(`timing file ${file} is not valid:\n${formatProblems(file, res.problems)}`, res.problems);
  return res.profile;
}

export class TimingFileError extends Error {
  constructor(
    message: string,
    readonly problems: readonly YamlProblem[] = [],
  ) {
    super(message);
    this.name = 'TimingFileError';
  }
}
