/**
 * `<data-dir>/scenario.pid`: the pid of the `mockcloud scenario run` driving that data dir's
 * daemon, so that `mockcloud scenario stop` can find and signal it, and a second run on the
 * same daemon is refused while the first goes on.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, promises as fsp, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { isProcessAlive } from '../daemon/daemon-json.js';

export const SCENARIO_PID_FILE = 'scenario.pid';

export function scenarioPidPath(dataDir: string): string {
  return path.join(dataDir, SCENARIO_PID_FILE);
}

/** The pid the file names, if it names a live process. */
export function runningScenarioPid(dataDir: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(scenarioPidPath(dataDir), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 && isProcessAlive(pid) && isScenarioRun(pid) ? pid : undefined;
}

/**
 * Whether `pid` still is a `scenario run` (a run killed with -9 leaves its file, and the pid
 * may since belong to another process, which `stop` must not signal). ps(1) answers on Linux
 * and illumos alike; where it cannot, the live pid is trusted.
 */
function isScenarioRun(pid: number): boolean {
  let args: string;
  try {
    args = execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
  } catch (err) {
    // ps exits 1 when there is no such process; any other failure: no ps to ask.
    return (err as { status?: number }).status !== 1;
  }
  return /\bscenario\s+run\b/.test(args);
}

/**
 * Take the data dir for this run: the file is created exclusively, so of two runs started at
 * once only one gets it. Resolves with the pid of the live run that has it, if another has.
 */
export async function claimScenarioPid(dataDir: string, pid = process.pid): Promise<number | undefined> {
  const file = scenarioPidPath(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o644);
      try {
        writeSync(fd, `${pid}\n`);
      } finally {
        closeSync(fd);
      }
      return undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const other = runningScenarioPid(dataDir);
      if (other !== undefined) return other;
      // A file left by a run that is gone: remove it and try once more.
      await fsp.rm(file, { force: true });
    }
  }
  const other = runningScenarioPid(dataDir);
  if (other !== undefined) return other;
  throw new Error(`cannot take ${file}: it came back twice after removal with no live run in it`);
}

/** Remove the file if it still names `pid` (a newer run's file stays). */
export async function removeScenarioPid(dataDir: string, pid = process.pid): Promise<void> {
  const file = scenarioPidPath(dataDir);
  const text = await fsp.readFile(file, 'utf8').catch(() => undefined);
  if (text !== undefined && Number(text.trim()) === pid) await fsp.rm(file, { force: true });
}

/** Remove a file whose process is gone. */
export async function removeStaleScenarioPid(dataDir: string): Promise<void> {
  if (runningScenarioPid(dataDir) === undefined) await fsp.rm(scenarioPidPath(dataDir), { force: true });
}
