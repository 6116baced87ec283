import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Replace `target` atomically and durably: a unique temp file in the same directory,
 * fsync, rename over the target, fsync of the directory. A crash at any moment leaves
 * either the old or the new content, never a torn file.
 *
 * The temp name starts with a dot and ends in `.tmp`, so no reader that matches
 * `<uuid>.json` mistakes it for a VM.
 */
export async function writeFileDurable(target: string, data: string | Uint8Array): Promise<void> {
  const dir = path.dirname(target);
  const tmp = path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, 'wx', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await fsp.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fh.close();
  try {
    await fsp.rename(tmp, target);
  } catch (err) {
    await fsp.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fsyncDir(dir);
}

/** Remove a file and make the removal durable. ENOENT is reported to the caller. */
export async function unlinkDurable(target: string): Promise<void> {
  await fsp.unlink(target);
  await fsyncDir(path.dirname(target));
}

export async function fsyncDir(dir: string): Promise<void> {
  const dh = await fsp.open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Temp files a crash left behind (by writeFileDurable's naming) in `dir`. */
export function isDurableTempName(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp');
}
