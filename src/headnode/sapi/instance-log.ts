/**
 * The dev SAPI's instance writes, durably and cheaply: one JSON line per put or delete appended
 * to `<data-dir>/headnode/sapi-instances.jsonl` and fsynced before the write is answered,
 * group-committed (while one append runs, every further write joins the next). Rewriting the
 * whole SAPI document for each of 100,000 adoptions (10,000 CNs) would write gigabytes; this
 * writes each instance once. The log is folded into the document (`compact`) at start, at
 * stop and when it has grown past the live instances; replaying it is idempotent, so a crash
 * between the document write and the truncation loses nothing.
 */
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir } from '../../common/durable-file.js';
import type { SapiInstance } from './model.js';

export type InstanceOp = { op: 'put'; instance: SapiInstance } | { op: 'del'; uuid: string };

export class InstanceLog {
  /** Lines in the file (what compaction would fold away). */
  lines = 0;
  private fh: FileHandle | undefined;
  private buffer: string[] = [];
  /** Every write and compaction runs after the one before: never two at once. */
  private tail: Promise<void> = Promise.resolve();
  /** A write queued on the chain and not started yet: later appends join it. */
  private nextWrite: Promise<void> | undefined;

  constructor(readonly file: string) {}

  /** Apply every complete line of an existing log; a torn last line (a crash mid-append) is dropped. */
  async replay(apply: (op: InstanceOp) => void): Promise<number> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    let n = 0;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      let op: InstanceOp;
      try {
        op = JSON.parse(line) as InstanceOp;
      } catch {
        continue;
      }
      if (op.op === 'put' && op.instance && typeof op.instance.uuid === 'string') apply(op);
      else if (op.op === 'del' && typeof op.uuid === 'string') apply(op);
      n++;
    }
    this.lines = n;
    return n;
  }

  async open(): Promise<void> {
    await fsp.mkdir(path.dirname(this.file), { recursive: true });
    this.fh = await fsp.open(this.file, 'a');
    await fsyncDir(path.dirname(this.file));
  }

  /** Resolves once the op is on disk. */
  append(op: InstanceOp): Promise<void> {
    this.buffer.push(`${JSON.stringify(op)}\n`);
    return this.flush();
  }

  /** Everything appended so far on disk. */
  flush(): Promise<void> {
    if (this.nextWrite) return this.nextWrite;
    const p: Promise<void> = this.tail
      .catch(() => undefined)
      .then(() => {
        if (this.nextWrite === p) this.nextWrite = undefined;
        return this.write();
      });
    this.nextWrite = p;
    this.tail = p;
    return p;
  }

  /**
   * Fold the log into the document: after every write queued so far, `snapshot` writes the
   * document (holding every op applied to the state until then), then the log is emptied.
   * Ops appended meanwhile stay buffered and go into the emptied log by the next write.
   */
  compact(snapshot: () => Promise<void>): Promise<void> {
    const p = this.tail
      .catch(() => undefined)
      .then(async () => {
        await snapshot();
        await this.fh?.truncate(0);
        await this.fh?.sync();
        this.lines = 0;
      });
    this.nextWrite = undefined;
    this.tail = p;
    return p;
  }

  async close(): Promise<void> {
    await this.tail.catch(() => undefined);
    await this.fh?.close();
    this.fh = undefined;
  }

  private async write(): Promise<void> {
    if (this.buffer.length === 0) return;
    if (!this.fh) throw new Error('the SAPI instance log is not open');
    const text = this.buffer.join('');
    const n = this.buffer.length;
    this.buffer = [];
    await this.fh.appendFile(text);
    await this.fh.sync();
    this.lines += n;
  }
}
