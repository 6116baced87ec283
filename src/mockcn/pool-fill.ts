/**
 * `<server dir>/zpool-fill.json`: how full a zpool-fill event left the CN's pool (0-1). A
 * filled pool is a state of the CN, like its VMs: it is on disk before the event that set it
 * is answered, and a CN loaded again starts with it (MockCn.conditions.poolFill).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';

export const POOL_FILL_FILE = 'zpool-fill.json';

export async function readPoolFill(serverDir: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await fsp.readFile(path.join(serverDir, POOL_FILL_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const fill = (JSON.parse(text) as { poolFill?: unknown }).poolFill;
    return typeof fill === 'number' && fill >= 0 && fill <= 1 ? fill : undefined;
  } catch {
    // A hand-broken file fills nothing: the pool is as its VMs make it.
    return undefined;
  }
}

export async function writePoolFill(serverDir: string, fraction: number): Promise<void> {
  await writeFileDurable(path.join(serverDir, POOL_FILL_FILE), `${JSON.stringify({ poolFill: fraction })}\n`);
}
