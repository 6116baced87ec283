/**
 * Hardware profiles from files: every `*.json`, `*.yaml` and `*.yml` of a profiles dir (the
 * daemon's `--profiles-dir`, default `<data-dir>/profiles`), read in name order when the daemon
 * starts. A file holds one profile (a mapping with `name`) or several (`profiles:` and a list).
 * A profile `extends` a built-in or an earlier profile (default `virtual`) and gives only what
 * differs. JSON is read by the same YAML parser, so both get errors that name the file and line.
 *
 *   name: gpu-box
 *   extends: large
 *   description: 4 sockets of GPUs
 *   cpuCoreCount: 64
 *   cpuTotalCores: 128
 *   memoryMiB: 2097152
 *   nics: [{tags: [external]}, {tags: [storage]}]
 *   traits: {gpu: true}
 *   reserved: false
 *   timing: slow/dc.yaml     # a timing profile or file (docs/timing.md), relative to this dir
 *
 * Invalid files stop the daemon's start with every problem found, each as `file:line: what`.
 */
import { readSmallTextFile } from '../common/bounded-file.js';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isMap, isSeq, LineCounter, parseDocument, type Document, type Node as YamlNode, type YAMLMap } from 'yaml';
import { MockcloudError } from '../common/errors.js';
import { resolveTiming } from '../timing/resolve.js';
import { OVERPROVISION_KEYS, PROFILES, type HardwareProfile, type Placement } from './profiles.js';

export const PROFILE_FILE_EXTENSIONS = ['.json', '.yaml', '.yml'];
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

type Check = (value: unknown) => string | undefined;

const text: Check = (v) => (typeof v === 'string' ? undefined : 'must be a string');
const bool: Check = (v) => (typeof v === 'boolean' ? undefined : 'must be true or false');
const count: Check = (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 1_000_000_000 ? undefined : 'must be a whole number ≥ 1');
const size: Check = (v) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? undefined : 'must be a number > 0');

/** The keys of a profile in a file and what each must be. */
const FIELDS: Record<string, Check> = {
  name: (v) => (typeof v === 'string' && NAME_RE.test(v) ? undefined : 'must be 1-64 letters, digits, dots, dashes or underscores'),
  extends: text,
  description: text,
  manufacturer: text,
  product: text,
  skuNumber: text,
  hwVersion: text,
  hwFamily: text,
  cpuType: text,
  cpuVirtualization: text,
  cpuPhysicalCores: count,
  cpuCoreCount: count,
  cpuTotalCores: count,
  bhyveMaxVcpus: count,
  memoryMiB: count,
  diskCount: count,
  diskSizeGB: size,
  zpoolProfile: (v) => (typeof v === 'string' && ['mirror', 'raidz', 'raidz1', 'raidz2', 'raidz3', 'striped'].includes(v) ? undefined : 'must be one of mirror, raidz, raidz1, raidz2, raidz3, striped'),
  zpoolSizeGiB: size,
  platform: text,
  vmCapable: bool,
  bhyveCapable: bool,
  headnode: bool,
  timing: (v) => (typeof v === 'string' && v.length > 0 ? undefined : 'must name a timing profile (instant, smartos) or a timing file'),
  nics: (v) =>
    Array.isArray(v) &&
    v.length >= 1 &&
    v.length <= 8 &&
    v.every((n) => typeof n === 'object' && n !== null && Object.keys(n).every((k) => k === 'tags') && Array.isArray((n as { tags?: unknown }).tags) && (n as { tags: unknown[] }).tags.every((t) => typeof t === 'string' && /^[A-Za-z0-9_-]{1,31}$/.test(t)))
      ? undefined
      : 'must be a list of 1 to 8 NICs like {tags: [external]} (NIC tag names: letters, digits, _ or -)',
  traits: (v) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? undefined : 'must be a mapping (trait: value)'),
  reserved: bool,
  reservoir: bool,
  overprovisionRatios: (v) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) && Object.entries(v).every(([k, n]) => (OVERPROVISION_KEYS as readonly string[]).includes(k) && typeof n === 'number' && n >= 0)
      ? undefined
      : `must be a mapping of ${OVERPROVISION_KEYS.join(', ')} to numbers ≥ 0`,
};

const PLACEMENT_KEYS = ['traits', 'reserved', 'reservoir', 'overprovisionRatios'] as const;

/** Read every profile file of `dir`; `required`: the dir must exist (it was given explicitly). */
export async function loadProfileFiles(dir: string, required: boolean): Promise<HardwareProfile[]> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!required && code === 'ENOENT') return [];
    throw new MockcloudError('InvalidArgument', `cannot read the profiles dir ${dir}: ${(err as Error).message}`);
  }
  const files = names.filter((n) => PROFILE_FILE_EXTENSIONS.includes(path.extname(n).toLowerCase()) && !n.startsWith('.')).sort();
  const known = new Map<string, HardwareProfile>(PROFILES);
  const fromFiles: HardwareProfile[] = [];
  const errors: string[] = [];
  for (const name of files) {
    const file = path.join(dir, name);
    let content: string;
    try {
      content = await readSmallTextFile(file, 'a profile file');
    } catch (err) {
      errors.push(err instanceof MockcloudError ? err.message : `cannot read ${file}: ${(err as Error).message}`);
      continue;
    }
    const parsed = parseProfileFile(file, content, known);
    errors.push(...parsed.errors);
    for (const p of parsed.profiles) {
      const earlier = fromFiles.find((q) => q.name === p.name);
      if (earlier) {
        errors.push(`${p.source}: profile ${p.name} is defined twice (also at ${earlier.source})`);
        continue;
      }
      known.set(p.name, p);
      fromFiles.push(p);
    }
  }
  for (const p of fromFiles) {
    if (p.timing === undefined) continue;
    try {
      await resolveTiming(p.timing, dir);
    } catch (err) {
      errors.push(`${p.source}: timing ${JSON.stringify(p.timing)}: ${(err as Error).message.split('\n').join('\n    ')}`);
    }
  }
  if (errors.length > 0) {
    throw new MockcloudError('InvalidArgument', `bad profile file${errors.length > 1 ? 's' : ''}:\n  ${errors.join('\n  ')}`);
  }
  return fromFiles;
}

/** The profiles of one file's text, and what is wrong with it (`file:line: what`). */
export function parseProfileFile(
  file: string,
  content: string,
  known: ReadonlyMap<string, HardwareProfile> = PROFILES,
): { profiles: HardwareProfile[]; errors: string[] } {
  const lines = new LineCounter();
  const doc = parseDocument(content, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number | undefined): string => `${file}:${offset === undefined ? 1 : lines.linePos(offset).line}`;
  if (doc.errors.length > 0) {
    return { profiles: [], errors: doc.errors.map((e) => `${at(e.pos[0])}: ${e.message.split('\n')[0]}`) };
  }
  const root = doc.contents;
  let maps: { node: YAMLMap; where: string }[] = [];
  if (isMap(root) && root.has('profiles')) {
    const list = root.get('profiles', true);
    const others = root.items.filter((p) => (p.key as { value?: unknown })?.value !== 'profiles');
    if (others.length > 0) return { profiles: [], errors: [`${at(keyOffset(others[0]!))}: a file with "profiles:" holds nothing else`] };
    if (!isSeq(list)) return { profiles: [], errors: [`${at(nodeOffset(list))}: "profiles" must be a list of profiles`] };
    for (const item of list.items) {
      if (!isMap(item)) return { profiles: [], errors: [`${at(nodeOffset(item))}: each profile must be a mapping with a name`] };
      maps.push({ node: item, where: at(nodeOffset(item)) });
    }
  } else if (isMap(root)) {
    maps = [{ node: root, where: at(nodeOffset(root)) }];
  } else {
    return { profiles: [], errors: [`${at(nodeOffset(root))}: a profile file holds a mapping (one profile with a name) or "profiles:" and a list`] };
  }
  const profiles: HardwareProfile[] = [];
  const errors: string[] = [];
  const table = new Map(known);
  for (const { node, where } of maps) {
    const out = profileOf(doc, node, where, at, table);
    if (typeof out === 'string') errors.push(out);
    else if (Array.isArray(out)) errors.push(...out);
    else {
      profiles.push(out);
      table.set(out.name, out);
    }
  }
  return { profiles, errors };
}

function profileOf(
  doc: Document,
  node: YAMLMap,
  where: string,
  at: (offset: number | undefined) => string,
  known: ReadonlyMap<string, HardwareProfile>,
): HardwareProfile | string[] {
  const errors: string[] = [];
  const values: Record<string, unknown> = {};
  for (const pair of node.items) {
    const key = (pair.key as { value?: unknown } | null)?.value;
    const line = at(keyOffset(pair));
    if (typeof key !== 'string') {
      errors.push(`${line}: a key must be a name`);
      continue;
    }
    const check = FIELDS[key];
    if (!check) {
      errors.push(`${line}: unknown key ${JSON.stringify(key)}; known: ${Object.keys(FIELDS).join(', ')}`);
      continue;
    }
    const value = (pair.value as { toJSON?: () => unknown } | null)?.toJSON ? (pair.value as YamlNode).toJSON(doc) : (pair.value as unknown);
    const problem = check(value);
    if (problem) {
      errors.push(`${at(nodeOffset(pair.value) ?? keyOffset(pair))}: ${key} ${problem}`);
      continue;
    }
    values[key] = value;
  }
  if (values.name === undefined && !errors.some((e) => e.includes(': name '))) errors.push(`${where}: a profile needs a name`);
  const baseName = (values.extends as string | undefined) ?? 'virtual';
  const base = known.get(baseName);
  if (!base) errors.push(`${at(nodeOffset(node.get('extends', true)))}: extends ${JSON.stringify(baseName)}, which is no built-in or earlier profile; known: ${[...known.keys()].join(', ')}`);
  if (errors.length > 0 || !base) return errors;

  const { extends: _ignored, traits, reserved, reservoir, overprovisionRatios, ...hardware } = values;
  const profile: HardwareProfile = { ...base, ...(hardware as Partial<HardwareProfile>), name: values.name as string, source: where };
  if (values.description === undefined) profile.description = `${base.description} (${values.name as string}: from ${where})`;
  // A placement of its own replaces the base's field by field.
  const placement: Placement = { ...(base.placement ?? {}) };
  const given: Record<string, unknown> = { traits, reserved, reservoir, overprovisionRatios };
  for (const k of PLACEMENT_KEYS) if (given[k] !== undefined) (placement as Record<string, unknown>)[k] = given[k];
  if (Object.values(placement).some((v) => v !== undefined)) profile.placement = placement;
  else delete profile.placement;
  // The figures must fit together as psrinfo and sysinfo print them.
  const line = (key: string): string => at(keyOffset(node.items.find((p) => (p.key as { value?: unknown })?.value === key)) ?? nodeOffset(node));
  for (const { key, message } of figureProblems(profile)) errors.push(`${line(key)}: ${message}`);
  return errors.length > 0 ? errors : profile;
}

/** Where a profile's CPU figures do not fit together as psrinfo and sysinfo print them. */
function figureProblems(profile: HardwareProfile): { key: string; message: string }[] {
  const out: { key: string; message: string }[] = [];
  if (profile.cpuCoreCount % profile.cpuPhysicalCores !== 0) {
    out.push({ key: 'cpuCoreCount', message: `cpuCoreCount ${profile.cpuCoreCount} is not a multiple of cpuPhysicalCores (sockets) ${profile.cpuPhysicalCores}` });
  }
  if (profile.cpuTotalCores < profile.cpuCoreCount) {
    out.push({ key: 'cpuTotalCores', message: `cpuTotalCores (threads) ${profile.cpuTotalCores} is below cpuCoreCount ${profile.cpuCoreCount}` });
  }
  if (profile.bhyveMaxVcpus > profile.cpuTotalCores) {
    out.push({ key: 'bhyveMaxVcpus', message: `bhyveMaxVcpus ${profile.bhyveMaxVcpus} is above cpuTotalCores ${profile.cpuTotalCores}` });
  }
  return out;
}

/**
 * A profile given as a plain object (the control API's `hardware` of one CN, e.g. from a
 * captured server's sysinfo: src/mirror): the keys and checks of a profile file, over the
 * `virtual` built-in (or the one it `extends`); every problem as `<what>.<key> ...`.
 */
export function profileFromObject(value: unknown, what: string, known: ReadonlyMap<string, HardwareProfile> = PROFILES): HardwareProfile {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new MockcloudError('InvalidArgument', `${what} must be an object`);
  const errors: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const check = FIELDS[key];
    if (!check) errors.push(`${what}: unknown key ${JSON.stringify(key)}`);
    else {
      const problem = check(v);
      if (problem) errors.push(`${what}.${key} ${problem}`);
      else values[key] = v;
    }
  }
  if (values.name === undefined && !errors.some((e) => e.startsWith(`${what}.name `))) errors.push(`${what}.name is missing`);
  const base = known.get((values.extends as string | undefined) ?? 'virtual');
  if (!base) errors.push(`${what}.extends names no known profile; known: ${[...known.keys()].join(', ')}`);
  if (errors.length === 0 && base) {
    const { extends: _ignored, traits, reserved, reservoir, overprovisionRatios, ...hardware } = values;
    const profile: HardwareProfile = { ...base, ...(hardware as Partial<HardwareProfile>), name: values.name as string };
    if (values.description === undefined) profile.description = `${base.description} (${profile.name})`;
    const placement: Placement = { ...(base.placement ?? {}) };
    const given: Record<string, unknown> = { traits, reserved, reservoir, overprovisionRatios };
    for (const k of PLACEMENT_KEYS) if (given[k] !== undefined) (placement as Record<string, unknown>)[k] = given[k];
    if (Object.values(placement).some((v) => v !== undefined)) profile.placement = placement;
    else delete profile.placement;
    for (const p of figureProblems(profile)) errors.push(`${what}.${p.message}`);
    if (errors.length === 0) return profile;
  }
  throw new MockcloudError('InvalidArgument', errors.join('; '));
}

function keyOffset(pair: unknown): number | undefined {
  return nodeOffset((pair as { key?: unknown } | undefined)?.key);
}

function nodeOffset(node: unknown): number | undefined {
  const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
  return range?.[0];
}
