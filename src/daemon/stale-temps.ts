/**
 * Temp files an earlier run left: writeFileDurable writes `.<name>.<pid>.<12 hex>.tmp` beside
 * its target and renames it over the target; a process killed between the two leaves the temp
 * file, which nothing reads and nothing else removes (a `.vmapi-vms.json.<pid>.<rand>.tmp`
 * under headnode/ survived every later start and stop); an IMGAPI upload cut off by a kill
 * leaves its `.file0.<rand>.tmp`. At start the daemon removes them (a live daemon on the same
 * data dir is refused, so their writers are dead): the data dir's own files and the headnode's
 * at once, before anything writes there; the CNs' dirs in the background, sparing its own
 * writes' (by pid). VM dirs are the VM store's (vmadm/scan.ts removes those as it loads them).
 */
import { promises as fsp, type Dirent } from 'node:fs';
import path from 'node:path';
import { mapLimit } from './concurrency.js';
import type { Logger } from '../common/log.js';
import { serversDir } from '../mockcn/layout.js';

/** writeFileDurable's `.<name>.<pid>.<12 hex>.tmp`; IMGAPI's uploads `.file0.<12 hex>.tmp` (no pid). */
const TEMP_RE = /^\..+?(?:\.(\d+))?\.[0-9a-f]{12}\.tmp$/;

/**
 * A temp file no write of this process is using: another process's, or (`anyPid`: before
 * anything of this process writes there) any.
 */
export function isStaleTemp(name: string, anyPid = false, pid = process.pid): boolean {
  const m = TEMP_RE.exec(name);
  if (!m) return false;
  return anyPid || (m[1] !== undefined && Number(m[1]) !== pid);
}

/** Remove stale temp files in `dir` and, `depth` levels down, its subdirs (not `skip`). Returns them. */
export async function removeStaleTemps(dir: string, depth: number, skip: ReadonlySet<string> = new Set(), anyPid = false): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch {
    return []; // absent (a first start) or gone meanwhile
  }
  const removed: string[] = [];
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isFile() && isStaleTemp(e.name, anyPid)) {
      await fsp.rm(full, { force: true });
      removed.push(full);
    } else if (e.isDirectory() && depth > 0 && !skip.has(e.name)) {
      removed.push(...(await removeStaleTemps(full, depth - 1, skip, anyPid)));
    }
  }
  return removed;
}

/** The data dir's and the headnode's, before anything starts (nothing of this process writes there yet). */
export async function removeStaleTempsAtStart(dataDir: string, log: Logger): Promise<void> {
  const removed = [...(await removeStaleTemps(dataDir, 0, undefined, true)), ...(await removeStaleTemps(path.join(dataDir, 'headnode'), 4, undefined, true))];
  if (removed.length > 0) log.info({ files: removed }, `removed ${removed.length} temp file(s) an earlier run left`);
}

/** Every CN dir's (its VMs' excepted), a few dirs at a time; for after the start. */
export async function removeStaleServerTemps(dataDir: string, log: Logger): Promise<void> {
  let names: string[];
  try {
    names = await fsp.readdir(serversDir(dataDir));
  } catch {
    return;
  }
  let removed = 0;
  await mapLimit(names, 8, async (name) => {
    removed += (await removeStaleTemps(path.join(serversDir(dataDir), name), 3, new Set(['vms']))).length;
  });
  if (removed > 0) log.info({ files: removed }, `removed ${removed} temp file(s) an earlier run left in the CNs' dirs`);
}
