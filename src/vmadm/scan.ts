/**
 * Reading VM files from disk: the whole directory when a store opens or rescans, or one
 * file when a hand edit is reconciled. Bad files are reported, never fatal, never touched.
 */
import { promises as fsp } from 'node:fs';
import { isDurableTempName } from '../common/durable-file.js';
import { vmFile, vmUuidOfFile, parseVmFile, VmFileError } from './vm-file.js';
import { toStored } from './derived.js';

export interface DiskVm {
  /** The stored form (derived fields a dummy-written file carried are dropped). */
  stored: Record<string, unknown>;
  /** File mtime rounded to whole milliseconds, as Node's `stats.mtime` (and so the dummy) shows it. */
  mtimeMs: number;
}

export type ReadResult = { kind: 'ok'; vm: DiskVm } | { kind: 'missing' } | { kind: 'bad'; reason: string };

export async function readVmFile(dir: string, uuid: string): Promise<ReadResult> {
  const file = vmFile(dir, uuid);
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'bad', reason: (err as Error).message };
  }
  try {
    const [st, text] = await Promise.all([fh.stat(), fh.readFile('utf8')]);
    const raw = parseVmFile(text, uuid);
    const mtimeMs = Math.round(st.mtimeMs);
    const stored = toStored(raw);
    // The dummy shows every stopped VM with an exit status and time (derived from the
    // mtime when not stored); keep that, once, so it does not move on later writes.
    if (stored.state === 'stopped' && stored.exit_timestamp === undefined) {
      stored.exit_status ??= 0;
      stored.exit_timestamp = new Date(mtimeMs).toISOString();
    }
    return { kind: 'ok', vm: { stored, mtimeMs } };
  } catch (err) {
    if (err instanceof VmFileError) return { kind: 'bad', reason: err.message };
    return { kind: 'bad', reason: (err as Error).message };
  } finally {
    await fh.close();
  }
}

/** The VM uuids with a file in `dir` (temp files and other names ignored). Creates `dir`. */
export async function listVmUuids(dir: string): Promise<string[]> {
  return (await listVmDir(dir)).uuids;
}

/** VM uuids, plus the temp files an interrupted writeFileDurable left behind. */
export async function listVmDir(dir: string): Promise<{ uuids: string[]; temps: string[] }> {
  await fsp.mkdir(dir, { recursive: true });
  const names = await fsp.readdir(dir);
  const uuids: string[] = [];
  const temps: string[] = [];
  for (const name of names) {
    const uuid = vmUuidOfFile(name);
    if (uuid !== undefined) uuids.push(uuid);
    else if (isDurableTempName(name) && name.includes('.json.')) temps.push(name);
  }
  return { uuids, temps };
}

/** Run `fn` over `items` with at most `limit` in flight. */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
