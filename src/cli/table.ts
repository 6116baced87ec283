/**
 * Listings as Triton's CLIs print them (node-triton, sdcadm): `-H` no header, `-o a,b` the
 * columns, `-s a,-b` the sort (a leading `-` reverses), `-l` the long column set, `-j` one JSON
 * object per line (node-triton's list commands: `triton instances -j | json -ga name`).
 * The table itself is tabula's, the library those CLIs print with.
 */
import { createRequire } from 'node:module';
import type { Argv } from 'yargs';
import { UsageError } from './daemon-client.js';

const require = createRequire(import.meta.url);

interface TabulaColumn {
  lookup: string;
  name?: string;
  align?: 'left' | 'right';
}

interface TabulaOptions {
  columns?: (string | TabulaColumn)[];
  skipHeader?: boolean;
  sort?: string[];
  noAnsi?: boolean;
}

const tabula = require('tabula') as {
  format(items: object[], opts?: TabulaOptions): string;
  sortArrayOfObjects(items: object[], fields: string[]): void;
};

/** One column a listing offers: its field (what -o and -s name), header and alignment. */
export interface ColumnSpec {
  field: string;
  header: string;
  align?: 'left' | 'right';
}

export interface TableArgs {
  H?: boolean;
  o?: string;
  s?: string;
  l?: boolean;
  json?: boolean;
}

/** A listing's table: every column it offers, the default and long sets, the default sort. */
export interface TableSpec {
  columns: readonly ColumnSpec[];
  defaults: readonly string[];
  long: readonly string[];
  sort: readonly string[];
}

export function withTableOptions<T>(y: Argv<T>, spec: TableSpec, what: string): Argv<T & TableArgs> {
  const fields = spec.columns.map((c) => c.field).join(', ');
  return y
    .option('H', { type: 'boolean', describe: 'omit the table header' })
    .option('o', { type: 'string', describe: `columns to show, comma-separated (of: ${fields})`, requiresArg: true })
    .option('s', {
      type: 'string',
      describe: `sort on these columns, comma-separated; a leading - sorts in reverse (default: ${spec.sort.join(',')})`,
      requiresArg: true,
    })
    .option('l', { alias: 'long', type: 'boolean', describe: `long format: ${spec.long.join(', ')}` })
    .option('json', { alias: 'j', type: 'boolean', describe: `JSON: ${what}` }) as Argv<T & TableArgs>;
}

/** A column name as a user types it (adminIp, admin_ip, ADMIN-IP) → the field it names. */
function resolveField(spec: TableSpec, name: string, flag: string): string {
  const norm = (s: string): string => s.toLowerCase().replace(/[-_ ]/g, '');
  const col = spec.columns.find((c) => norm(c.field) === norm(name) || norm(c.header) === norm(name));
  if (!col) {
    throw new UsageError(`${flag} ${JSON.stringify(name)} is not a column; the columns are: ${spec.columns.map((c) => c.field).join(', ')}`);
  }
  return col.field;
}

function splitList(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

/** The sort as asked (-s) or the default, checked against the columns. */
export function sortOf(spec: TableSpec, args: TableArgs): string[] {
  if (args.s === undefined) return [...spec.sort];
  const fields = splitList(args.s).map((s) => (s.startsWith('-') ? `-${resolveField(spec, s.slice(1), '-s')}` : resolveField(spec, s, '-s')));
  if (fields.length === 0) throw new UsageError('-s needs at least one column');
  return fields;
}

/** Sort rows in place as `-s` says, with tabula's comparison (numbers as numbers, missing values first). */
export function sortRows<T extends object>(rows: T[], sort: readonly string[]): T[] {
  tabula.sortArrayOfObjects(rows, [...sort]);
  return rows;
}

/** The table text for rows already sorted: the columns of -o, -l or the default; -H drops the header. */
export function formatTable(spec: TableSpec, args: TableArgs, rows: object[]): string {
  const fields = args.o !== undefined ? splitList(args.o).map((f) => resolveField(spec, f, '-o')) : args.l ? [...spec.long] : [...spec.defaults];
  if (fields.length === 0) throw new UsageError('-o needs at least one column');
  const columns = fields.map((field) => {
    const c = spec.columns.find((x) => x.field === field)!;
    return { lookup: c.field, name: c.header, align: c.align ?? 'left' };
  });
  return tabula.format(rows, { columns, skipHeader: args.H === true, noAnsi: true });
}

/** `-j` of a listing: one JSON object per line, in the listing's order. */
export function jsonLines(rows: readonly object[]): string {
  return rows.map((r) => `${JSON.stringify(r)}\n`).join('');
}
