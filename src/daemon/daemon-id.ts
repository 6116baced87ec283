/**
 * Which daemon this is, for Triton: a uuid made once per data dir (`<data-dir>/daemon-id`) and
 * the host name, given to every CN it hosts as sysinfo `Mockcloud Daemon` ("<id>@<host>").
 * Several daemons (mockcloud zones on several hosts) may register CNs with one CNAPI; each
 * counts and deletes its own, and `list-servers --all-daemons` shows who hosts what.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { isUuid, newUuid } from '../common/uuid.js';

export const DAEMON_ID_FILE = 'daemon-id';

/** The data dir's daemon id, made (durably) on first use. */
export async function loadDaemonId(dataDir: string): Promise<string> {
  const file = path.join(dataDir, DAEMON_ID_FILE);
  try {
    const text = (await fsp.readFile(file, 'utf8')).trim();
    if (isUuid(text)) return text.toLowerCase();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const id = newUuid();
  await writeFileDurable(file, `${id}\n`);
  return id;
}

/** The `Mockcloud Daemon` value of this daemon's CNs. */
export function hostedByValue(id: string, host: string = os.hostname()): string {
  return `${id}@${host}`;
}
