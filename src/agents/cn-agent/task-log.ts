/**
 * Task logs. A real cn-agent writes one bunyan file per task; a mock CN fleet cannot afford a
 * new file per task (100,000 VM creations would leave 100,000 files, and creating a file is
 * the most expensive thing a task does here), so every task's records go to one shared,
 * size-rotated bunyan file, `<data-dir>/logs/cn-agent-tasks.log` (and `.1`), each record
 * carrying `server`, `task` and `req_id`. A task's records are kept in memory while it runs
 * and appended together when it ends, so they stay contiguous; the same records also go to the
 * task's `/history` entry.
 */
import fs from 'node:fs';
import path from 'node:path';
import bunyan from 'bunyan';
import { recordLog, type HistoryEntry } from './history.js';

/** The log a task writes: bunyan-style calls, kept in its log file and its history entry. */
export interface TaskLog {
  trace(...args: unknown[]): void;
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/** Records beyond this are counted, not kept (a task log is for reading, not a sink). */
const MAX_RECORDS = 2000;

/**
 * A task's records as bunyan hands them over, turned into JSON lines only when the task ends:
 * a record holds references (its first one the task's params, which the history entry keeps
 * anyway), where its JSON line held a copy of them as text, 2-4 KB a create, for as long as the
 * task was in flight. So what a record logs is written as it is when the task ends.
 */
class RecordBuffer {
  readonly records: unknown[] = [];
  dropped = 0;
  write(rec: unknown): void {
    if (this.records.length >= MAX_RECORDS) {
      this.dropped++;
      return;
    }
    this.records.push(rec);
  }
}

function jsonLine(rec: unknown): string {
  try {
    return `${JSON.stringify(rec, safeReplacer())}\n`;
  } catch (err) {
    // Logging never fails a task: a record that cannot be written is replaced by a note.
    const r = rec as { time?: unknown; level?: unknown };
    return `${JSON.stringify({ name: 'cn-agent-task', level: r.level, time: r.time, v: 0, msg: `log record not written: ${(err as Error).message}` })}\n`;
  }
}

/** One task's log: records kept in memory until the task ends. */
export class TaskLogBuffer {
  readonly bunyan: bunyan;
  private readonly buffer = new RecordBuffer();

  constructor(fields: { task: string; req_id: string; server: string }) {
    this.bunyan = bunyan.createLogger({
      name: 'cn-agent-task',
      level: 'debug',
      ...fields,
      streams: [{ type: 'raw', level: 'debug', stream: this.buffer as unknown as NodeJS.WritableStream }],
      serializers: bunyan.stdSerializers,
    });
  }

  /** The task-facing log: each call goes to the task log and to the history entry's `log`. */
  taskLog(entry: HistoryEntry): TaskLog {
    const at = (level: 'trace' | 'debug' | 'info' | 'warn' | 'error') => (...args: unknown[]) => {
      recordLog(entry, level, args);
      (this.bunyan[level] as (...a: unknown[]) => void)(...args);
    };
    return { trace: at('trace'), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  }

  /** The buffered records as bunyan lines (and forget them). */
  take(): string {
    const lines = this.buffer.records.map(jsonLine);
    if (this.buffer.dropped > 0) {
      lines.push(`${JSON.stringify({ name: 'cn-agent-task', level: 40, msg: `${this.buffer.dropped} log records dropped`, time: new Date().toISOString(), v: 0 })}\n`);
      this.buffer.dropped = 0;
    }
    this.buffer.records.length = 0;
    return lines.join('');
  }
}

export const DEFAULT_TASK_LOG_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The shared task log file: one append stream for every CN's tasks. When it passes
 * `maxBytes` it is renamed to `<file>.1` (replacing the previous one) and a new file starts.
 */
export class TaskLogWriter {
  private stream: fs.WriteStream | undefined;
  private bytes = 0;

  constructor(
    readonly file: string,
    private readonly onError: (err: Error) => void,
    private readonly maxBytes = DEFAULT_TASK_LOG_MAX_BYTES,
  ) {}

  append(text: string): void {
    if (text.length === 0) return;
    if (!this.stream) {
      try {
        this.open();
      } catch (err) {
        this.onError(err as Error); // a log that cannot be written never fails a task
        return;
      }
    }
    this.stream!.write(text);
    this.bytes += Buffer.byteLength(text);
    if (this.bytes >= this.maxBytes) this.rotate();
  }

  /** Flush what was appended and close the file (a later append opens it again). */
  async close(): Promise<void> {
    await this.end();
  }

  private open(): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o755 });
    this.bytes = fs.statSync(this.file, { throwIfNoEntry: false })?.size ?? 0;
    // Opened here, not lazily by the stream: a rotation right after must rename this file.
    const fd = fs.openSync(this.file, 'a', 0o644);
    const stream = fs.createWriteStream(this.file, { fd, flags: 'a' });
    stream.on('error', (err) => {
      this.onError(err);
      if (this.stream === stream) this.stream = undefined;
    });
    this.stream = stream;
  }

  private rotate(): void {
    const old = this.stream;
    this.stream = undefined;
    this.bytes = 0;
    // The rename is safe while the old stream still writes: its fd follows the file.
    try {
      fs.renameSync(this.file, `${this.file}.1`);
    } catch (err) {
      this.onError(err as Error);
    }
    old?.end();
  }

  private end(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    if (!stream) return Promise.resolve();
    return new Promise((resolve) => stream.end(() => resolve()));
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
