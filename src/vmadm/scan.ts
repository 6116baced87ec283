/**
 * Reading VM files from disk: the whole directory when a store opens or rescans, or one
 * file when a hand edit is reconciled. Bad files are reported, never fatal, never touched.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDir, isDurableTempName } from '../common/durable-file.js';
import { vmFile, vmUuidOfFile, parseVmFile, VmFileError } from './vm-file.js';
import { toStored } from './derived.js';

export interface DiskVm {
  /** The stored form (derived fields a dummy-written file carried are dropped). */
  stored: Record<string, unknown>;
  /** File mtime rounded to whole milliseconds, as Node's `stats.mtime` (and so the dummy) shows it. */
  mtimeMs: number;
}

export type ReadResult = { kind: 'ok'; vm: DiskVm } | { kind: 'missing' } | { kind: 'bad'; reason: string };

// Reads are synchronous: a VM file is a few KB in the page cache, and a store of thousands
// opens far faster with one read syscall each than with four thread-pool round trips.
export async function readVmFile(dir: string, uuid: string): Promise<ReadResult> {
  const file = vmFile(dir, uuid);
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'bad', reason: (err as Error).message };
  }
  try {
    const st = fs.fstatSync(fd);
    const text = fs.readFileSync(fd, 'utf8');
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
    fs.closeSync(fd);
  }
}

/** The VM uuids with a file in `dir` (temp files and other names ignored). Creates `dir`. */
export async function listVmUuids(dir: string): Promise<string[]> {
  return (await listVmDir(dir)).uuids;
}

/** VM uuids, plus the temp files an interrupted writeFileDurable left behind. */
export async function listVmDir(dir: string): Promise<{ uuids: string[]; temps: string[] }> {
  if (!fs.existsSync(dir)) {
    // A new server has no vms/ yet: its entry must be durable before a VM file goes in.
    fs.mkdirSync(dir, { recursive: true });
    await fsyncDir(path.dirname(dir));
  }
  const names = fs.readdirSync(dir);
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
