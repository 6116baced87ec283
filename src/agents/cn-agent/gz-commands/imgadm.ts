/**
 * `imgadm list` and `imgadm get` over the images the CN has installed, as smartos-live's
 * src/img/lib/cli.js prints them: list's columns `uuid,name,version,os,type,pub` sorted by
 * `published_at,name` (-o / -s), -H without the header, -j the image infos as JSON,
 * `field=value` filters (`~` a substring, `true`/`false` booleans); the table is tabula's
 * (every column as wide as its widest cell, two spaces apart, `-` for a missing value).
 * The other subcommands fetch or remove images: not on a mock CN's global zone.
 */
import { hasFlag, lastValue, parseArgs, UsageError } from './args.js';
import { fail, ok, type CommandResult, type GzImage, type GzSnapshot } from './types.js';

type Row = Record<string, unknown>;

export function imgadm(snapshot: GzSnapshot, args: string[]): CommandResult {
  const [sub, ...rest] = args;
  if (sub === undefined) return fail('imgadm: error (Usage): no command given', 1);
  try {
    if (sub === 'list') return list(snapshot.images, rest);
    if (sub === 'get') return get(snapshot.images, rest);
  } catch (err) {
    if (err instanceof UsageError) return fail(`imgadm ${sub}: error (Usage): ${err.message}`);
    throw err;
  }
  return fail(`imgadm ${sub}: not available on a mock CN (mockcloud): its images are installed through cn-agent tasks`);
}

/** What `imgadm get` prints on stderr for an image the zpool does not have. */
export function imageNotInstalled(uuid: string, zpool: string): string {
  return `imgadm get: error (ImageNotInstalled): image "${uuid}" was not found on zpool "${zpool}"\n`;
}

function get(images: readonly GzImage[], args: string[]): CommandResult {
  const p = parseArgs(args, { withValue: { P: 'zpool' }, flags: { r: 'children', h: 'help' } });
  if (p.positional.length !== 1) throw new UsageError(`incorrect number of args (${p.positional.length}): "${p.positional.join(' ')}"`);
  const uuid = p.positional[0]!;
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(uuid)) {
    return fail(`imgadm get: error (InvalidUUID): invalid uuid: "${uuid}"`);
  }
  const zpool = lastValue(p, 'zpool') ?? 'zones';
  const image = images.find((i) => i.manifest.uuid === uuid && i.zpool === zpool);
  if (!image) return fail(imageNotInstalled(uuid, zpool));
  return ok(`${JSON.stringify(image, null, 2)}\n`);
}

function list(images: readonly GzImage[], args: string[]): CommandResult {
  const p = parseArgs(args, { withValue: { o: 'columns', s: 'sort' }, flags: { j: 'json', json: 'json', H: 'noheader', h: 'help', docker: 'docker' } });
  const filters: Record<string, string | boolean> = {};
  for (const arg of p.positional) {
    const eq = arg.indexOf('=');
    if (eq === -1) throw new UsageError(`invalid filter: "${arg}" (must be of the form "field=value")`);
    const value = arg.slice(eq + 1);
    filters[arg.slice(0, eq)] = value === 'true' ? true : value === 'false' ? false : value;
  }
  if (hasFlag(p, 'docker')) filters.type = 'docker';
  const kept = images.filter((info) => keep(rowOf(info), filters));
  if (hasFlag(p, 'json')) return ok(`${JSON.stringify(kept, null, 2)}\n`);
  const columns = (lastValue(p, 'columns') ?? 'uuid,name,version,os,type,pub').trim().split(/\s*,\s*/);
  const sort = (lastValue(p, 'sort') ?? 'published_at,name').trim().split(/\s*,\s*/);
  return ok(tabula(kept.map(rowOf), columns, sort, !hasFlag(p, 'noheader')));
}

/** The manifest plus imgadm's computed fields (pub, published, source, zpool, size). */
function rowOf(info: GzImage): Row {
  const row: Row = { ...info.manifest };
  if (typeof row.published_at === 'string') {
    row.published_date = row.published_at.slice(0, 10);
    row.pub = row.published_date;
    row.published = row.published_at.replace(/\.\d+Z$/, 'Z');
  }
  row.source = info.source;
  row.zpool = info.zpool;
  const files = row.files;
  if (Array.isArray(files) && files[0] && typeof files[0] === 'object') row.size = (files[0] as Row).size;
  return row;
}

function keep(row: Row, filters: Record<string, string | boolean>): boolean {
  for (const [field, want] of Object.entries(filters)) {
    let actual: unknown = row;
    for (const part of field.split('.')) {
      actual = actual && typeof actual === 'object' ? (actual as Row)[part] : undefined;
      if (actual === undefined) break;
    }
    if (actual === undefined) return false;
    if (typeof want === 'boolean') {
      if (actual !== want) return false;
    } else if (want.startsWith('~')) {
      if (!String(actual).includes(want.slice(1))) return false;
    } else if (String(actual) !== want) {
      return false;
    }
  }
  return true;
}

function cellOf(row: Row, field: string): string | undefined {
  const v = row[field];
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v);
}

function tabula(rows: Row[], columns: string[], sort: string[], header: boolean): string {
  const sorted = [...rows].sort((a, b) => {
    for (let field of sort) {
      const invert = field.startsWith('-');
      if (invert) field = field.slice(1);
      let av: unknown = a[field];
      let bv: unknown = b[field];
      if (!Number.isNaN(Number(av)) && !Number.isNaN(Number(bv))) {
        av = Number(av);
        bv = Number(bv);
      }
      if (av === undefined && bv === undefined) continue;
      if (av === undefined) return invert ? 1 : -1;
      if (bv === undefined) return invert ? -1 : 1;
      if ((av as string) < (bv as string)) return invert ? 1 : -1;
      if ((av as string) > (bv as string)) return invert ? -1 : 1;
    }
    return 0;
  });
  const cells = sorted.map((row) => columns.map((c) => cellOf(row, c) ?? '-'));
  const names = columns.map((c) => c.toUpperCase());
  const widths = names.map((n, i) => Math.max(n.length, ...sorted.map((row) => (cellOf(row, columns[i]!) ?? '').length)));
  const line = (values: string[]): string =>
    `${values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join('  ')}\n`;
  return [...(header ? [line(names)] : []), ...cells.map(line)].join('');
}
