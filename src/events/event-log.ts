/**
 * `<data-dir>/events.jsonl`: one JSON line per event started, per event ended and per mark,
 * so a test can line up what it saw in the APIs with what was done. Each line is on disk
 * (fsync) before the request that made it is answered: events are rare, and a kill -9 loses
 * no acknowledged line. Appends are serialized; a failed write rejects its caller.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { EventLogRecord } from './types.js';

export const EVENT_LOG_FILE = 'events.jsonl';

export class EventLog {
  readonly path: string;
  private file: fsp.FileHandle | undefined;
  private tail: Promise<void> = Promise.resolve();

  constructor(dataDir: string) {
    this.path = path.join(dataDir, EVENT_LOG_FILE);
  }

  async open(): Promise<void> {
    this.file ??= await fsp.open(this.path, 'a', 0o644);
  }

  append(record: EventLogRecord): Promise<void> {
    const line = `${JSON.stringify(record)}\n`;
    const next = this.tail.then(async () => {
      if (!this.file) await this.open();
      await this.file!.write(line);
      await this.file!.datasync();
    });
    // The chain goes on after a failure; the failure is this caller's.
    this.tail = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.tail;
    const f = this.file;
    this.file = undefined;
    await f?.close();
  }
}
