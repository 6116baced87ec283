/**
 * Each task's own bunyan log, `<cn>/logs/cn-agent/<ms timestamp>-<task>.log`, as the real
 * agent writes one per task. To keep thousands of concurrent tasks cheap the records are
 * buffered in memory and written with one append when the task ends: no file descriptor is
 * held while a task runs. The directory is created lazily, once per CN.
 */
import fs from 'node:fs';
import path from 'node:path';
import bunyan from 'bunyan';
import { recordLog, type HistoryEntry } from './history.js';
import type { TaskLog } from './types.js';

/** Records beyond this are counted, not kept (a task log is for reading, not a sink). */
const MAX_RECORDS = 2000;

class RecordBuffer {
  readonly lines: string[] = [];
  dropped = 0;
  write(rec: unknown): void {
    if (this.lines.length >= MAX_RECORDS) {
      this.dropped++;
      return;
    }
    this.lines.push(`${JSON.stringify(rec, safeReplacer())}\n`);
  }
}

export class TaskLogFile {
  readonly file: string;
  readonly bunyan: bunyan;
  private readonly buffer = new RecordBuffer();

  constructor(
    private readonly dir: string,
    fields: { task: string; req_id: string; server: string },
    startedAt: number,
  ) {
    this.file = path.join(dir, `${startedAt}-${fields.task}.log`);
    this.bunyan = bunyan.createLogger({
      name: `cn-agent-task`,
      level: 'debug',
      ...fields,
      streams: [{ type: 'raw', level: 'debug', stream: this.buffer as unknown as NodeJS.WritableStream }],
      serializers: bunyan.stdSerializers,
    });
  }

  /** The task-facing log: each call goes to this file and to the history entry's `log`. */
  taskLog(entry: HistoryEntry): TaskLog {
    const at = (level: 'trace' | 'debug' | 'info' | 'warn' | 'error') => (...args: unknown[]) => {
      recordLog(entry, level, args);
      (this.bunyan[level] as (...a: unknown[]) => void)(...args);
    };
    return { trace: at('trace'), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  }

  /** Write the buffered records (one append) and forget them. */
  async flush(createdDirs: Set<string>): Promise<void> {
    if (this.buffer.dropped > 0) {
      this.buffer.lines.push(
        `${JSON.stringify({ name: 'cn-agent-task', level: 40, msg: `${this.buffer.dropped} log records dropped`, time: new Date().toISOString(), v: 0 })}\n`,
      );
    }
    const text = this.buffer.lines.join('');
    this.buffer.lines.length = 0;
    // Synchronous on purpose: one small append to the page cache costs microseconds, far less
    // CPU than three thread-pool round trips (open, write, close) per task.
    if (!createdDirs.has(this.dir)) {
      if (!this.serverDirExists()) return;
      fs.mkdirSync(this.dir, { recursive: true, mode: 0o755 });
      createdDirs.add(this.dir);
    }
    try {
      fs.appendFileSync(this.file, text, { mode: 0o644 });
    } catch (err) {
      // The logs dir went away (removed by hand): make it again, but never resurrect a
      // removed server's directory.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !this.serverDirExists()) throw err;
      fs.mkdirSync(this.dir, { recursive: true, mode: 0o755 });
      fs.appendFileSync(this.file, text, { mode: 0o644 });
    }
  }

  /** `<server>/logs/cn-agent` → does `<server>` still exist? */
  private serverDirExists(): boolean {
    return fs.statSync(path.dirname(path.dirname(this.dir)), { throwIfNoEntry: false })?.isDirectory() ?? false;
  }
}

/** JSON.stringify replacer that survives cycles and bigints in logged objects. */
function safeReplacer(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (value !== null && typeof value === 'object') {
      if (seen.has(value)) return '[Circular]';
      seen.add(value);
    }
    return value;
  };
}
