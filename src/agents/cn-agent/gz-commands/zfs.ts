/**
 * `zfs list` and `zpool list` over the CN's ZFS view (zfs/model.ts), laid out as the
 * illumos tools lay them out (table.ts): `zfs list [-r|-d depth] [-Hp] [-o prop,...]
 * [-s prop]... [-S prop]... [-t type,...] [dataset...]` (filesystems and volumes unless -t;
 * snapshots after their dataset) and `zpool list [-Hp] [-o prop,...] [pool...]`. Other
 * subcommands would change the pool: not on a mock CN's global zone.
 */
import { nicenum, type Dataset, type Pool } from '../zfs/model.js';
import { hasFlag, lastValue, parseArgs, UsageError, type ParsedArgs } from './args.js';
import { formatTable, type TableColumn } from './table.js';
import { fail, ok, type CommandResult, type GzDataset, type GzSnapshot } from './types.js';

interface PropSpec {
  /** The property as `datasetProperties` names it (or 'name'). */
  key: string;
  header: string;
  right: boolean;
  bytes?: boolean;
  /** 0 shows as `none` (quotas and reservations). */
  noneIfZero?: boolean;
  /** The column's least width: 5 for numbers, the longest value name for index properties. */
  minWidth?: number;
}

const ZFS_PROPS: Record<string, PropSpec> = {
  name: { key: 'name', header: 'NAME', right: false },
  type: { key: 'type', header: 'TYPE', right: false, minWidth: 'filesystem'.length },
  creation: { key: 'creation', header: 'CREATION', right: false },
  used: { key: 'used', header: 'USED', right: true, bytes: true },
  available: { key: 'available', header: 'AVAIL', right: true, bytes: true },
  avail: { key: 'available', header: 'AVAIL', right: true, bytes: true },
  referenced: { key: 'referenced', header: 'REFER', right: true, bytes: true },
  refer: { key: 'referenced', header: 'REFER', right: true, bytes: true },
  compressratio: { key: 'compressratio', header: 'RATIO', right: true },
  ratio: { key: 'compressratio', header: 'RATIO', right: true },
  mounted: { key: 'mounted', header: 'MOUNTED', right: false },
  quota: { key: 'quota', header: 'QUOTA', right: true, bytes: true, noneIfZero: true },
  reservation: { key: 'reservation', header: 'RESERV', right: true, bytes: true, noneIfZero: true },
  reserv: { key: 'reservation', header: 'RESERV', right: true, bytes: true, noneIfZero: true },
  recordsize: { key: 'recordsize', header: 'RECSIZE', right: true, bytes: true },
  recsize: { key: 'recordsize', header: 'RECSIZE', right: true, bytes: true },
  mountpoint: { key: 'mountpoint', header: 'MOUNTPOINT', right: false },
  compression: { key: 'compression', header: 'COMPRESS', right: false },
  compress: { key: 'compression', header: 'COMPRESS', right: false },
  zoned: { key: 'zoned', header: 'ZONED', right: false },
  refquota: { key: 'refquota', header: 'REFQUOTA', right: true, bytes: true, noneIfZero: true },
  refreservation: { key: 'refreservation', header: 'REFRESERV', right: true, bytes: true, noneIfZero: true },
  refreserv: { key: 'refreservation', header: 'REFRESERV', right: true, bytes: true, noneIfZero: true },
  origin: { key: 'origin', header: 'ORIGIN', right: false },
  volsize: { key: 'volsize', header: 'VOLSIZE', right: true, bytes: true },
  volblocksize: { key: 'volblocksize', header: 'VOLBLOCK', right: true, bytes: true },
  volblock: { key: 'volblocksize', header: 'VOLBLOCK', right: true, bytes: true },
};

const ZFS_LIST_USAGE = [
  'usage:',
  '\tlist [-Hp] [-r|-d max] [-o property[,...]] [-s property]...',
  '\t    [-S property]... [-t type[,...]] [filesystem|volume|snapshot] ...',
].join('\n');

const ZFS_LIST_OPTIONS = {
  withValue: { o: 'fields', s: 'sort', S: 'rsort', t: 'types', d: 'depth' },
  flags: { H: 'scripted', p: 'parsable', r: 'recursive' },
};

export function zfs(snapshot: GzSnapshot, args: string[]): CommandResult {
  const [sub, ...rest] = args;
  if (sub === undefined) return fail('usage: zfs command args ...', 2);
  if (sub !== 'list') return fail(`zfs ${sub}: not available on a mock CN (mockcloud): its datasets change only through cn-agent tasks`);
  try {
    return zfsList(snapshot.zfs.datasets, parseArgs(rest, ZFS_LIST_OPTIONS));
  } catch (err) {
    if (err instanceof UsageError) return fail(`${err.message}\n${ZFS_LIST_USAGE}`, 2);
    throw err;
  }
}

function zfsList(datasets: readonly GzDataset[], p: ParsedArgs): CommandResult {
  const fields = (lastValue(p, 'fields') ?? 'name,used,available,referenced,mountpoint').split(',');
  const props: PropSpec[] = [];
  for (const f of fields) {
    const spec = ZFS_PROPS[f];
    if (!spec) return fail(`bad property list: invalid property '${f}'\n${ZFS_LIST_USAGE}`, 2);
    props.push(spec);
  }
  const types = typesOf(lastValue(p, 'types'));
  if (typeof types === 'string') return fail(`invalid type '${types}'\n${ZFS_LIST_USAGE}`, 2);
  const depthText = lastValue(p, 'depth');
  const depth = depthText === undefined ? undefined : Number(depthText);
  if (depth !== undefined && !(Number.isInteger(depth) && depth >= 0)) return fail(`invalid depth '${depthText}'\n${ZFS_LIST_USAGE}`, 2);
  const recursive = hasFlag(p, 'recursive') || depth !== undefined;

  const byName = new Map(datasets.map((d) => [d.name, d]));
  const chosen = new Map<string, GzDataset>();
  const errors: string[] = [];
  const wanted = (d: Dataset): boolean => types.includes(d.type);
  if (p.positional.length === 0) {
    for (const d of datasets) if (wanted(d) && (depth === undefined || depthOf(d.name) <= depth)) chosen.set(d.name, d);
  } else {
    for (const name of p.positional) {
      const root = byName.get(name);
      if (!root) {
        errors.push(`cannot open '${name}': dataset does not exist`);
        continue;
      }
      chosen.set(root.name, root);
      if (!recursive || root.type === 'snapshot') continue;
      for (const d of datasets) {
        if (!(d.name.startsWith(`${name}/`) || d.name.startsWith(`${name}@`)) || !wanted(d)) continue;
        if (depth !== undefined && depthOf(d.name) - depthOf(name) > depth) continue;
        chosen.set(d.name, d);
      }
    }
  }
  const rows = [...chosen.values()];
  const sorts = [...(p.opts.get('sort') as string[] | undefined ?? []).map((s) => ({ s, dir: 1 })), ...(p.opts.get('rsort') as string[] | undefined ?? []).map((s) => ({ s, dir: -1 }))];
  for (const { s } of sorts) if (!ZFS_PROPS[s]) return fail(`invalid property '${s}'\n${ZFS_LIST_USAGE}`, 2);
  rows.sort((a, b) => {
    for (const { s, dir } of sorts) {
      const c = compareProp(a, b, ZFS_PROPS[s]!.key);
      if (c !== 0) return c * dir;
    }
    return defaultOrder(a, b);
  });
  const parsable = hasFlag(p, 'parsable');
  const table = rows.map((d) => props.map((prop) => zfsCell(d, prop, parsable)));
  const stderr = errors.map((e) => `${e}\n`).join('');
  if (rows.length === 0 && errors.length === 0 && p.positional.length === 0) return ok('no datasets available\n');
  const stdout = rows.length > 0 || errors.length === 0 ? formatTable(props.map(column), table, hasFlag(p, 'scripted')) : '';
  return { stdout, stderr, code: errors.length > 0 ? 1 : 0 };
}

function typesOf(text: string | undefined): Dataset['type'][] | string {
  if (text === undefined) return ['filesystem', 'volume'];
  const out = new Set<Dataset['type']>();
  for (const t of text.split(',')) {
    if (t === 'all') ['filesystem', 'volume', 'snapshot'].forEach((x) => out.add(x as Dataset['type']));
    else if (t === 'filesystem' || t === 'volume' || t === 'snapshot') out.add(t);
    else if (t === 'snap') out.add('snapshot');
    else if (t === 'fs') out.add('filesystem');
    else if (t === 'vol') out.add('volume');
    else if (t !== 'bookmark') return t;
  }
  return [...out];
}

function depthOf(name: string): number {
  return name.split('@')[0]!.split('/').length - 1;
}

/** zfs's default order: by dataset name, a snapshot right after its dataset, oldest first. */
function defaultOrder(a: Dataset, b: Dataset): number {
  const [af, as] = a.name.split('@') as [string, string | undefined];
  const [bf, bs] = b.name.split('@') as [string, string | undefined];
  if (af !== bf) return af < bf ? -1 : 1;
  if ((as === undefined) !== (bs === undefined)) return as === undefined ? -1 : 1;
  return a.creation - b.creation || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

function compareProp(a: GzDataset, b: GzDataset, key: string): number {
  const av = key === 'name' ? a.name : a.properties[key];
  const bv = key === 'name' ? b.name : b.properties[key];
  const an = Number(av);
  const bn = Number(bv);
  if (av !== undefined && bv !== undefined && !Number.isNaN(an) && !Number.isNaN(bn) && av !== '' && bv !== '') return an - bn;
  return String(av) < String(bv) ? -1 : String(av) > String(bv) ? 1 : 0;
}

function zfsCell(d: GzDataset, prop: PropSpec, parsable: boolean): string {
  if (prop.key === 'name') return d.name;
  const raw = d.properties[prop.key] ?? '-';
  if (parsable || raw === '-') return raw;
  if (prop.key === 'creation') return ctime(Number(raw));
  if (prop.noneIfZero && raw === '0') return 'none';
  if (prop.bytes) return nicenum(Number(raw));
  return raw;
}

/** Numbers (right-aligned) take at least 5 characters, as "20.4M" does. */
function column(p: PropSpec | PoolProp): TableColumn {
  return { header: p.header, right: p.right, minWidth: p.minWidth ?? (p.right ? 5 : 0) };
}

/** `Thu Aug 26  0:24 2021`: zfs's creation time (strftime "%a %b %e %k:%M %Y", local time). */
function ctime(epochSeconds: number): string {
  const d = new Date(epochSeconds * 1000);
  const day = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][d.getDay()]!;
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getMonth()]!;
  const pad = (n: number, w: number, c: string): string => String(n).padStart(w, c);
  return `${day} ${month} ${pad(d.getDate(), 2, ' ')} ${pad(d.getHours(), 2, ' ')}:${pad(d.getMinutes(), 2, '0')} ${d.getFullYear()}`;
}

// ---- zpool

interface PoolProp {
  header: string;
  right: boolean;
  minWidth?: number;
  value(pool: Pool, parsable: boolean): string;
}

const capacity = (pool: Pool): number => (pool.size > 0 ? Math.round((pool.allocated / pool.size) * 100) : 0);

const POOL_PROPS: Record<string, PoolProp> = {
  name: { header: 'NAME', right: false, value: (pl) => pl.name },
  size: { header: 'SIZE', right: true, value: (pl, p) => (p ? String(pl.size) : nicenum(pl.size)) },
  allocated: { header: 'ALLOC', right: true, value: (pl, p) => (p ? String(pl.allocated) : nicenum(pl.allocated)) },
  free: { header: 'FREE', right: true, value: (pl, p) => (p ? String(pl.free) : nicenum(pl.free)) },
  checkpoint: { header: 'CKPOINT', right: true, value: () => '-' },
  expandsize: { header: 'EXPANDSZ', right: true, value: () => '-' },
  fragmentation: { header: 'FRAG', right: true, value: (_pl, p) => (p ? '0' : '0%') },
  capacity: { header: 'CAP', right: true, value: (pl, p) => (p ? String(capacity(pl)) : `${capacity(pl)}%`) },
  dedupratio: { header: 'DEDUP', right: true, value: (_pl, p) => (p ? '1.00' : '1.00x') },
  health: { header: 'HEALTH', right: true, minWidth: 'DEGRADED'.length, value: (pl) => pl.health },
  altroot: { header: 'ALTROOT', right: false, value: () => '-' },
};
const POOL_ALIASES: Record<string, string> = { alloc: 'allocated', ckpoint: 'checkpoint', frag: 'fragmentation', cap: 'capacity', dedup: 'dedupratio' };

const ZPOOL_LIST_USAGE = 'usage:\n\tlist [-gHLpPv] [-o property[,...]] [-T d|u] [pool] ... [interval [count]]';

export function zpool(snapshot: GzSnapshot, args: string[]): CommandResult {
  const [sub, ...rest] = args;
  if (sub === undefined) return fail('usage: zpool command args ...', 2);
  if (sub !== 'list') return fail(`zpool ${sub}: not available on a mock CN (mockcloud)`);
  let p: ParsedArgs;
  try {
    p = parseArgs(rest, { withValue: { o: 'fields', T: 'time' }, flags: { H: 'scripted', p: 'parsable', g: 'g', L: 'L', P: 'P', v: 'v' } });
  } catch (err) {
    if (err instanceof UsageError) return fail(`${err.message}\n${ZPOOL_LIST_USAGE}`, 2);
    throw err;
  }
  const fields = (lastValue(p, 'fields') ?? 'name,size,allocated,free,checkpoint,expandsize,fragmentation,capacity,dedupratio,health,altroot').split(',');
  const props: PoolProp[] = [];
  for (const f of fields) {
    const prop = POOL_PROPS[POOL_ALIASES[f] ?? f];
    if (!prop) return fail(`property '${f}' is not a valid pool property\n${ZPOOL_LIST_USAGE}`, 2);
    props.push(prop);
  }
  const pool = snapshot.zfs.pool;
  for (const name of p.positional) {
    if (name !== pool.name) return fail(`cannot open '${name}': no such pool`);
  }
  const parsable = hasFlag(p, 'parsable');
  return ok(formatTable(props.map(column), [props.map((prop) => prop.value(pool, parsable))], hasFlag(p, 'scripted')));
}
