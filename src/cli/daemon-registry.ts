/**
 * The daemons running on this machine, so the other commands find the one meant without
 * `--data-dir`, and refuse to guess when there are several.
 *
 * Each running daemon has one small file in the state dir (a daemon writes nothing into a data
 * dir it does not own): `$XDG_STATE_HOME/mockcloud/daemons/<pid>.json`, by default
 * `~/.local/state/mockcloud/daemons/<pid>.json`, naming its data dir, pid and control API. The
 * daemon removes it when it stops; a reader that finds one whose daemon is gone (killed with
 * -9, its pid reused) removes it before anything else, so the registry never names a daemon
 * that is not there. `last-data-dir.json` beside it names only a directory (where a daemon
 * last ran), so that with no daemon running `list-servers` still reads the CNs from there.
 */
import { existsSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { defaultDataDir } from '../daemon/config.js';
import { daemonJsonPath, isProcessAlive } from '../daemon/daemon-json.js';

export interface RunningDaemon {
  dataDir: string;
  pid: number;
  startedAt: string;
  control: string;
}

export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(env.HOME || os.homedir(), '.local', 'state');
  return path.join(base, 'mockcloud');
}

function entryFile(pid: number, env: NodeJS.ProcessEnv): string {
  return path.join(stateDir(env), 'daemons', `${pid}.json`);
}

/**
 * Record a running daemon (and its data dir as the last one used). Best effort: a read-only
 * home only loses the convenience. Returns the entry's path, to remove at stop.
 */
export async function registerDaemon(entry: RunningDaemon, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const file = entryFile(entry.pid, env);
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileDurable(file, `${JSON.stringify(entry, null, 2)}\n`);
    await writeFileDurable(path.join(stateDir(env), 'last-data-dir.json'), `${JSON.stringify({ dataDir: entry.dataDir }, null, 2)}\n`);
  } catch {
    return undefined;
  }
  // The single pointer earlier versions kept named a daemon that may be long gone.
  removeQuietly(path.join(stateDir(env), 'last-daemon.json'));
  return file;
}

/** Remove a daemon's entry (synchronous: also from an `exit` handler). */
export function unregisterDaemon(file: string | undefined): void {
  if (file) removeQuietly(file);
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already, or not ours to remove
  }
}

/** The pid named by `<dataDir>/daemon.json`, when that process is alive. */
export function liveDaemonPid(dataDir: string): number | undefined {
  try {
    const info = JSON.parse(readFileSync(daemonJsonPath(dataDir), 'utf8')) as { pid?: unknown };
    return typeof info.pid === 'number' && isProcessAlive(info.pid) ? info.pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every daemon running now, oldest first: the registry's live entries (a dead one is removed
 * as it is found), and the default data dir's daemon when it runs unregistered (started by
 * another user, or under SMF with another HOME).
 */
export function runningDaemons(env: NodeJS.ProcessEnv = process.env): RunningDaemon[] {
  const dir = path.join(stateDir(env), 'daemons');
  const out: RunningDaemon[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => /^\d+\.json$/.test(n));
  } catch {
    // no registry yet
  }
  for (const name of names) {
    const file = path.join(dir, name);
    let entry: Partial<RunningDaemon> | undefined;
    try {
      entry = JSON.parse(readFileSync(file, 'utf8')) as Partial<RunningDaemon>;
    } catch {
      entry = undefined;
    }
    const valid = entry && typeof entry.dataDir === 'string' && path.isAbsolute(entry.dataDir) && typeof entry.pid === 'number';
    // Alive, and still the daemon of its data dir (not a reused pid).
    if (!valid || liveDaemonPid(entry!.dataDir!) !== entry!.pid) {
      // A half-written entry of a daemon starting right now is left alone.
      if (valid || Date.now() - mtimeMs(file) > 10_000) removeQuietly(file);
      continue;
    }
    out.push(entry as RunningDaemon);
  }
  const fallback = defaultDataDir();
  const pid = out.some((d) => d.dataDir === fallback) ? undefined : liveDaemonPid(fallback);
  if (pid !== undefined) out.push({ dataDir: fallback, pid, startedAt: '', control: '' });
  return out.sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.pid - b.pid));
}

function mtimeMs(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** Where a daemon last ran (a directory, not a daemon), when it still exists. */
export function lastDataDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  try {
    const value = JSON.parse(readFileSync(path.join(stateDir(env), 'last-data-dir.json'), 'utf8')) as { dataDir?: unknown };
    return typeof value.dataDir === 'string' && path.isAbsolute(value.dataDir) && existsSync(value.dataDir) ? value.dataDir : undefined;
  } catch {
    return undefined;
  }
}
