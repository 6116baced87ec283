/**
 * SAPI instances of deleted CNs that SAPI could not be told about yet, kept in
 * `<data-dir>/sapi-pending-deletes.json` (`{"instances": [{"uuid", "server"}, ...]}`: each
 * instance with the CN it must still belong to when it is deleted; a bare uuid, as earlier
 * versions wrote, has no server to check against), written durably before
 * the CN's directory goes: a SAPI that is down while CNs are deleted, or a daemon killed right
 * then, leaves nothing behind; the deletes are retried in the background and at the next start.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../../common/durable-file.js';
import { isUuid } from '../../common/uuid.js';

export const PENDING_DELETES_FILE = 'sapi-pending-deletes.json';

export class PendingDeletes {
  /** Instance uuid → the deleted CN it belongs to (undefined: written by an older version). */
  readonly instances = new Map<string, string | undefined>();
  private readonly file: string;
  private writing: Promise<void> = Promise.resolve();

  constructor(dataDir: string) {
    this.file = path.join(dataDir, PENDING_DELETES_FILE);
  }

  get size(): number {
    return this.instances.size;
  }

  /** Read what an earlier run left; a damaged file is reported and treated as empty. */
  async load(): Promise<string | undefined> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      return `cannot read ${this.file}: ${(err as Error).message}`;
    }
    try {
      const value = JSON.parse(text) as { instances?: unknown };
      if (!Array.isArray(value.instances)) throw new Error('no "instances" array');
      for (const entry of value.instances) {
        if (isUuid(entry)) this.instances.set(entry, undefined);
        else if (isUuid((entry as { uuid?: unknown })?.uuid)) {
          const server = (entry as { server?: unknown }).server;
          this.instances.set((entry as { uuid: string }).uuid, isUuid(server) ? server : undefined);
        }
      }
      return undefined;
    } catch (err) {
      return `${this.file} is not usable (${(err as Error).message}); ignoring it`;
    }
  }

  async add(entries: Iterable<[instance: string, server: string]>): Promise<void> {
    for (const [u, server] of entries) this.instances.set(u, server);
    await this.save();
  }

  async remove(uuids: Iterable<string>): Promise<void> {
    let changed = false;
    for (const u of uuids) changed = this.instances.delete(u) || changed;
    if (changed) await this.save();
  }

  /** One write at a time, each of the set as it is when the write starts. */
  private save(): Promise<void> {
    const next = this.writing.catch(() => undefined).then(async () => {
      if (this.instances.size === 0) await fsp.rm(this.file, { force: true });
      else {
        const instances = [...this.instances].map(([uuid, server]) => (server ? { uuid, server } : uuid));
        await writeFileDurable(this.file, `${JSON.stringify({ instances })}\n`);
      }
    });
    this.writing = next;
    return next;
  }
}
