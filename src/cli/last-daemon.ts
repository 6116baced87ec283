/**
 * Where this user's daemon last ran, so the other commands find it without `--data-dir`: a
 * daemon started as the README says (`--data-dir ./mockcloud-data`) is found by a
 * `mockcloud list-servers` in another shell, from any directory.
 *
 * The pointer is one small file outside every data dir (a daemon writes nothing into a data
 * dir it does not own): `$XDG_STATE_HOME/mockcloud/last-daemon.json`, by default
 * `~/.local/state/mockcloud/last-daemon.json`. It names the data dir, the pid and the control
 * API; a reader checks that the daemon there is still alive before it trusts it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { defaultDataDir } from '../daemon/config.js';
import { daemonJsonPath, isProcessAlive } from '../daemon/daemon-json.js';

export interface LastDaemon {
  dataDir: string;
  pid: number;
  startedAt: string;
  control: string;
}

export function lastDaemonFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(env.HOME || os.homedir(), '.local', 'state');
  return path.join(base, 'mockcloud', 'last-daemon.json');
}

/** Record a running daemon. Best effort: a read-only home only loses the convenience. */
export async function recordLastDaemon(entry: LastDaemon, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const file = lastDaemonFile(env);
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileDurable(file, `${JSON.stringify(entry, null, 2)}\n`);
    return file;
  } catch {
    return undefined;
  }
}

export function readLastDaemon(env: NodeJS.ProcessEnv = process.env): LastDaemon | undefined {
  try {
    const value = JSON.parse(readFileSync(lastDaemonFile(env), 'utf8')) as Partial<LastDaemon>;
    if (typeof value.dataDir !== 'string' || !path.isAbsolute(value.dataDir)) return undefined;
    return value as LastDaemon;
  } catch {
    return undefined;
  }
}

/** Whether `<dataDir>/daemon.json` names a live process. */
export function hasLiveDaemon(dataDir: string): boolean {
  try {
    const info = JSON.parse(readFileSync(daemonJsonPath(dataDir), 'utf8')) as { pid?: unknown };
    return typeof info.pid === 'number' && isProcessAlive(info.pid);
  } catch {
    return false;
  }
}

/**
 * The data dir a command means when it names none: the one where a daemon runs, trying where
 * this user's daemon last ran, then the default (/data/mockcloud in a mockcloud zone, else
 * ~/.mockcloud); when neither has a live daemon, the last daemon's (if it still exists), so
 * offline commands and error messages point where the CNs are.
 */
export function impliedDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const last = readLastDaemon(env)?.dataDir;
  const fallback = defaultDataDir();
  for (const dir of [last, fallback]) if (dir !== undefined && hasLiveDaemon(dir)) return dir;
  if (last !== undefined && existsSync(last)) return last;
  return fallback;
}
