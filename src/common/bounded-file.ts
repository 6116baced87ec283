/**
 * Reading a small text file an operator hands the daemon or the CLI (a scenario, a profile, the
 * config file), with a size bound: such a file is a few KiB; one past the bound is refused with
 * its name and size before it is read (a wrong path to a disk image, a runaway generator), not
 * parsed into memory.
 */
import { promises as fsp } from 'node:fs';
import { MockcloudError } from './errors.js';

/** The bound of every such file: a thousand times the largest real one. */
export const MAX_SMALL_FILE_BYTES = 1024 * 1024;

/**
 * The file's text; a file over `maxBytes` is an InvalidArgument naming it. System errors
 * (ENOENT, EACCES) are thrown as they are, for the caller's own message.
 */
export async function readSmallTextFile(file: string, what: string, maxBytes = MAX_SMALL_FILE_BYTES): Promise<string> {
  const fh = await fsp.open(file, 'r');
  try {
    // Read one byte past the bound, whatever stat says (a FIFO, a file growing meanwhile).
    const buf = Buffer.allocUnsafe(Math.min(maxBytes + 1, Math.max(64 * 1024, (await fh.stat()).size + 1)));
    let size = 0;
    for (;;) {
      if (size === buf.length) break;
      const { bytesRead } = await fh.read(buf, size, buf.length - size, null);
      if (bytesRead === 0) break;
      size += bytesRead;
    }
    if (size > maxBytes) {
      throw new MockcloudError('InvalidArgument', `${file} is over ${formatBytes(maxBytes)}: too large for ${what}`);
    }
    if (size === buf.length) {
      // The buffer was sized from stat and the file grew: read the rest within the bound.
      return (await readGrown(fh, buf.subarray(0, size), file, what, maxBytes)).toString('utf8');
    }
    return buf.subarray(0, size).toString('utf8');
  } finally {
    await fh.close();
  }
}

async function readGrown(fh: fsp.FileHandle, head: Buffer, file: string, what: string, maxBytes: number): Promise<Buffer> {
  const chunks = [head];
  let size = head.length;
  const chunk = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) return Buffer.concat(chunks);
    size += bytesRead;
    if (size > maxBytes) throw new MockcloudError('InvalidArgument', `${file} is over ${formatBytes(maxBytes)}: too large for ${what}`);
    chunks.push(Buffer.from(chunk.subarray(0, bytesRead)));
  }
}

export function formatBytes(n: number): string {
  if (n >= 1024 ** 3 && n % 1024 ** 3 === 0) return `${n / 1024 ** 3} GiB`;
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}
