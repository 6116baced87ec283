import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/*
 * Why the mix of synchronous and asynchronous calls: on the hot paths (every VM write, every
 * server created) a promise-based fs call costs far more CPU than the syscall itself (a
 * thread-pool round trip each). open/write/rename/close on a local filesystem are page-cache
 * operations measured in microseconds, so they run synchronously; only fsync, which waits for
 * the disk, goes to the thread pool. Directory fsyncs are also shared: writers that renamed
 * into the same directory while one sync was running are covered by the next single sync.
 */

export interface DurableWriteOptions {
  /** Set the file's atime and mtime (before it is synced and published). */
  mtime?: Date;
}

/**
 * Replace `target` atomically and durably: a unique temp file in the same directory,
 * fsync, rename over the target, fsync of the directory. A crash at any moment leaves
 * either the old or the new content, never a torn file.
 *
 * The temp name starts with a dot and ends in `.tmp`, so no reader that matches
 * `<uuid>.json` mistakes it for a VM.
 */
export async function writeFileDurable(target: string, data: string | Uint8Array, opts: DurableWriteOptions = {}): Promise<void> {
  const dir = path.dirname(target);
  const tmp = path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = fs.openSync(tmp, 'wx', 0o644);
  try {
    fs.writeFileSync(fd, data);
    if (opts.mtime) fs.futimesSync(fd, opts.mtime, opts.mtime);
    await fsyncFd(fd);
  } catch (err) {
    closeQuietly(fd);
    unlinkQuietly(tmp);
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, target);
  } catch (err) {
    unlinkQuietly(tmp);
    throw err;
  }
  await fsyncDir(dir);
}

/**
 * Create `file` (it must not exist) with `data`, fsynced; the caller syncs the directory.
 * All asynchronous: used for a dozen files at once, where a synchronous create would stall the
 * event loop behind the journal commits of the fsyncs already under way.
 */
export async function createFileSynced(file: string, data: string | Uint8Array): Promise<void> {
  const fh = await fsp.open(file, 'wx', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Remove a file and make the removal durable. ENOENT is reported to the caller. */
export async function unlinkDurable(target: string): Promise<void> {
  fs.unlinkSync(target);
  await fsyncDir(path.dirname(target));
}

interface DirSync {
  /** The sync under way. */
  running: Promise<void> | undefined;
  /** The one sync that follows it, shared by everyone who asked meanwhile. */
  next: Promise<void> | undefined;
}

const dirSyncs = new Map<string, DirSync>();

/**
 * Create `dir` and its parents up to, not including, `root`, which must exist: a writer inside
 * a CN's directory never brings back a directory that was removed (renamed away) while it
 * worked, as `mkdir -p` would; it gets ENOENT instead.
 */
export async function mkdirBelow(root: string, dir: string): Promise<void> {
  const rel = path.relative(root, dir);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${dir} is not below ${root}`);
  let at = root;
  for (const part of rel.split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    await fsp.mkdir(at).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
}

/**
 * Make `dir`'s entries durable. A caller always gets a sync that started after its call: when
 * one is already running, callers wait for the next one, which all of them share.
 */
export function fsyncDir(dir: string): Promise<void> {
  let st = dirSyncs.get(dir);
  if (!st) {
    st = { running: undefined, next: undefined };
    dirSyncs.set(dir, st);
  }
  const state = st;
  if (!state.running) {
    state.running = syncDirNow(dir).finally(() => {
      state.running = undefined;
      if (!state.next) dirSyncs.delete(dir);
    });
    return state.running;
  }
  state.next ??= state.running
    .catch(() => undefined)
    .then(() => {
      state.next = undefined;
      return fsyncDir(dir);
    });
  return state.next;
}

async function syncDirNow(dir: string): Promise<void> {
  const fd = fs.openSync(dir, 'r');
  try {
    await fsyncFd(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // already failing: the first error is the one to report
  }
}

function unlinkQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    // nothing to clean up
  }
}

/** Temp files a crash left behind (by writeFileDurable's naming) in `dir`. */
export function isDurableTempName(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp');
}
