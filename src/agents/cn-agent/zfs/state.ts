/**
 * What the ZFS write tasks changed on one mock CN, kept in `<server dir>/zfs.json`: the
 * datasets they made (filesystems, snapshots, clones; renames re-key them) and the properties
 * they set on the datasets the CN derives from its platform, images and VMs.
 *
 * The file is read the first time a ZFS task of the CN needs it (never at start-up, never by
 * heartbeats or status reports) and replaced durably (writeFileDurable) before a write task
 * answers, so an acknowledged change survives a crash. A change is computed on a copy and
 * becomes visible only once it is on disk. A file that cannot be read as a ZFS state is set
 * aside (renamed to `.zfs.json.bad-<time>`) and the CN starts from its derived datasets.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../../../common/durable-file.js';
import type { TaskLog } from '../task-log.js';
import { nameProblem } from './names.js';
import { isKnownProperty, type DatasetType } from './props.js';

export const ZFS_STATE_FILE = 'zfs.json';
const FORMAT_VERSION = 1;

/** A dataset made by a ZFS task. */
export interface OwnDataset {
  type: DatasetType;
  /** Epoch seconds. */
  creation: number;
  /** Creation order on this CN (stands in for createtxg). */
  txg: number;
  /** Bytes it refers to. */
  refer: number;
  /** Bytes only it holds (what it adds to the pool). */
  unique: number;
  /** The snapshot a clone was made from. */
  origin?: string;
  volsize?: number;
  /** Properties set on it (`zfs get -p` values). */
  props: Record<string, string>;
}

export class ZfsChanges {
  constructor(
    readonly datasets = new Map<string, OwnDataset>(),
    /** Properties set on derived datasets, by dataset name. */
    readonly props = new Map<string, Record<string, string>>(),
    public txg = 0,
  ) {}

  copy(): ZfsChanges {
    const datasets = new Map<string, OwnDataset>();
    for (const [k, v] of this.datasets) datasets.set(k, { ...v, props: { ...v.props } });
    const props = new Map<string, Record<string, string>>();
    for (const [k, v] of this.props) props.set(k, { ...v });
    return new ZfsChanges(datasets, props, this.txg);
  }

  nextTxg(): number {
    this.txg += 1;
    return this.txg;
  }

  toJSON(): unknown {
    return {
      v: FORMAT_VERSION,
      txg: this.txg,
      datasets: Object.fromEntries([...this.datasets].sort(([a], [b]) => (a < b ? -1 : 1))),
      props: Object.fromEntries(this.props),
    };
  }
}

/** The per-CN holder the tasks share (in the CN's task state): loads once, commits durably. */
export class ZfsStore {
  private current: ZfsChanges | undefined;
  private loading: Promise<ZfsChanges> | undefined;

  constructor(readonly file: string) {}

  get(log: TaskLog): Promise<ZfsChanges> {
    if (this.current) return Promise.resolve(this.current);
    this.loading ??= readChanges(this.file, log).then(
      (c) => {
        this.current = c;
        return c;
      },
      (err: unknown) => {
        this.loading = undefined;
        throw err;
      },
    );
    return this.loading;
  }

  /** Make `next` the CN's state: on disk first, then visible. */
  async commit(next: ZfsChanges): Promise<void> {
    await writeFileDurable(this.file, `${JSON.stringify(next, null, 2)}\n`);
    this.current = next;
  }
}

export function zfsStateFile(serverDir: string): string {
  return path.join(serverDir, ZFS_STATE_FILE);
}

async function readChanges(file: string, log: TaskLog): Promise<ZfsChanges> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new ZfsChanges();
    throw err;
  }
  try {
    return parseChanges(JSON.parse(text), log);
  } catch (err) {
    const aside = path.join(path.dirname(file), `.${path.basename(file)}.bad-${Date.now()}`);
    log.warn({ error: (err as Error).message, file, aside }, 'ZFS state file is not valid; set aside, starting from the derived datasets');
    await fsp.rename(file, aside).catch(() => undefined);
    return new ZfsChanges();
  }
}

const TYPES: readonly string[] = ['filesystem', 'volume', 'snapshot'];

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function stringProps(v: unknown): Record<string, string> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string' || !isKnownProperty(k)) return undefined;
    out[k] = x;
  }
  return out;
}

/** The file as written by `toJSON`; entries that do not fit are dropped with a warning. */
function parseChanges(doc: unknown, log: TaskLog): ZfsChanges {
  if (!doc || typeof doc !== 'object' || (doc as { v?: unknown }).v !== FORMAT_VERSION) {
    throw new Error('not a version 1 ZFS state');
  }
  const d = doc as { txg?: unknown; datasets?: unknown; props?: unknown };
  const out = new ZfsChanges(undefined, undefined, isCount(d.txg) ? d.txg : 0);
  for (const [name, raw] of Object.entries((d.datasets as Record<string, unknown>) ?? {})) {
    const r = raw as Partial<Record<keyof OwnDataset, unknown>> | null;
    const props = stringProps(r?.props);
    const ok =
      r &&
      nameProblem(name, 'any') === undefined &&
      TYPES.includes(r.type as string) &&
      (r.type === 'snapshot') === name.includes('@') &&
      isCount(r.creation) &&
      isCount(r.txg) &&
      isCount(r.refer) &&
      isCount(r.unique) &&
      (r.origin === undefined || (typeof r.origin === 'string' && r.origin.includes('@'))) &&
      (r.volsize === undefined || isCount(r.volsize)) &&
      props;
    if (!ok) {
      log.warn({ dataset: name }, 'dropping an unreadable dataset from the ZFS state');
      continue;
    }
    const ds: OwnDataset = {
      type: r.type as DatasetType,
      creation: r.creation as number,
      txg: r.txg as number,
      refer: r.refer as number,
      unique: r.unique as number,
      props,
    };
    if (r.origin !== undefined) ds.origin = r.origin as string;
    if (r.volsize !== undefined) ds.volsize = r.volsize as number;
    out.datasets.set(name, ds);
    out.txg = Math.max(out.txg, ds.txg);
  }
  for (const [name, raw] of Object.entries((d.props as Record<string, unknown>) ?? {})) {
    const props = stringProps(raw);
    if (!props || nameProblem(name, 'any') !== undefined) {
      log.warn({ dataset: name }, 'dropping unreadable properties from the ZFS state');
      continue;
    }
    out.props.set(name, props);
  }
  return out;
}
