/**
 * `<data-dir>/events.jsonl`: one JSON line per event started, per event ended and per mark,
 * so a test can line up what it saw in the APIs with what was done. Each line is on disk
 * (fsync) before the request that made it is answered: events are rare, and a kill -9 loses
 * no acknowledged line. Appends are serialized; a failed write rejects its caller.
 */
import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { EventLogRecord } from './types.js';

/** Why an event a run left open is ended at the next start (the run ended without ending it: a kill -9). */
export const RESTART_REASON = 'daemon-restart';

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

  /**
   * Events an earlier run started and never ended (it was killed): they are not active any
   * more (events live in memory), so each gets its end line now, reason `daemon-restart`. A
   * last line cut short by the kill is ended with a newline first, so the next line is whole.
   * Reads the file once, a line at a time, holding only the starts not yet ended.
   */
  async closeLeftOpen(): Promise<number> {
    const open = new Map<string, EventLogRecord>();
    let endsInNewline = true;
    try {
      const stat = await fsp.stat(this.path);
      if (stat.size === 0) return 0;
      const fh = await fsp.open(this.path, 'r');
      try {
        const last = Buffer.alloc(1);
        await fh.read(last, 0, 1, stat.size - 1);
        endsInNewline = last[0] === 0x0a;
      } finally {
        await fh.close();
      }
      const lines = readline.createInterface({ input: createReadStream(this.path), crlfDelay: Infinity });
      for await (const line of lines) {
        // Event lines are small; anything else is not one of ours to pair.
        if (line.length === 0 || line.length > 1024 * 1024) continue;
        let rec: EventLogRecord;
        try {
          rec = JSON.parse(line) as EventLogRecord;
        } catch {
          continue;
        }
        if (typeof rec?.id !== 'string') continue;
        if (rec.phase === 'start') open.set(rec.id, rec);
        else if (rec.phase === 'end') open.delete(rec.id);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    if (!endsInNewline) await this.appendText('\n');
    const now = new Date().toISOString();
    for (const rec of open.values()) {
      await this.append({
        time: now,
        id: rec.id!,
        phase: 'end',
        ...(rec.type ? { type: rec.type } : {}),
        ...(rec.servers ? { servers: rec.servers } : {}),
        ...(rec.params !== undefined ? { params: rec.params } : {}),
        seed: rec.seed ?? null,
        ...(rec.source ? { source: rec.source } : {}),
        reason: RESTART_REASON,
      });
    }
    return open.size;
  }

  append(record: EventLogRecord): Promise<void> {
    return this.appendText(`${JSON.stringify(record)}\n`);
  }

  private appendText(line: string): Promise<void> {
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
