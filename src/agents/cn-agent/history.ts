/**
 * The task history `GET /history` serves: per CN, the 16 most recent tasks, each entry added
 * when its task is dispatched and updated in place as it runs, in the real agent's shape
 * (cn-agent lib/task_agent/task_runner.js):
 *
 *   {started_at, task, pid, params, status: 'active'|'finished'|'failed', errorCount,
 *    messages: [{type:'event', name, event, timestamp} | {type:'exception', error, timestamp}
 *               | {type:'subtask', resource, task, msg, id, timestamp}],
 *    log: [{timestamp, message: [...], level, type:'message'}], finished_at?}
 *
 * `pid` is the daemon's pid: tasks run in process, there is no child per task.
 */
export const HISTORY_SIZE = 16;
/** Per entry, so a chatty task cannot grow a CN's memory without bound. */
export const MAX_LOG_ENTRIES = 200;
export const MAX_MESSAGES = 200;
const MAX_STRING = 1000;
/**
 * Params are kept whole, as the real runner keeps them, but no deeper than this: a body may
 * nest thousands of levels (JSON.parse takes it), and JSON.stringify of such a copy would
 * overflow the stack for every later reader of `/history` and the task log.
 */
export const MAX_PARAMS_DEPTH = 64;

export type HistoryStatus = 'active' | 'finished' | 'failed';

export interface HistoryEventMessage {
  type: 'event';
  name: string;
  event: unknown;
  timestamp: string;
}

export interface HistoryExceptionMessage {
  type: 'exception';
  error: { message: string; stack?: string };
  timestamp: string;
}

/** A task's request for a subtask (Task.subTask), recorded as the real runner records it. */
export interface HistorySubtaskMessage {
  type: 'subtask';
  resource: string;
  task: string;
  msg: Record<string, unknown>;
  id: string;
  timestamp: string;
}

export type HistoryMessage = HistoryEventMessage | HistoryExceptionMessage | HistorySubtaskMessage;

export interface HistoryLogEntry {
  timestamp: string;
  message: unknown[];
  level: string;
  type: 'message';
}

export interface HistoryEntry {
  started_at: string;
  task: string;
  pid: number;
  /** As the request gave them (an object unless the body held something else). */
  params: unknown;
  status: HistoryStatus;
  errorCount: number;
  messages: HistoryMessage[];
  log: HistoryLogEntry[];
  finished_at?: string;
}

export class TaskHistory {
  private readonly items: HistoryEntry[] = [];

  /** The entries, oldest first, as `GET /history` sends them. */
  get entries(): readonly HistoryEntry[] {
    return this.items;
  }

  /** Forget every entry: the real agent keeps its history in memory, so a reboot loses it. */
  clear(): void {
    this.items.length = 0;
  }

  start(task: string, params: unknown, now = new Date()): HistoryEntry {
    const entry: HistoryEntry = {
      started_at: now.toISOString(),
      task,
      pid: process.pid,
      params: depthBounded(params),
      status: 'active',
      errorCount: 0,
      messages: [],
      log: [],
    };
    this.items.push(entry);
    if (this.items.length > HISTORY_SIZE) this.items.splice(0, this.items.length - HISTORY_SIZE);
    return entry;
  }
}

export function recordEvent(entry: HistoryEntry, name: string, event: unknown): void {
  if (name === 'error') entry.errorCount++;
  if (entry.messages.length >= MAX_MESSAGES) return;
  entry.messages.push({ type: 'event', name, event, timestamp: new Date().toISOString() });
}

export function recordSubtask(entry: HistoryEntry, resource: string, task: string, msg: Record<string, unknown>): void {
  if (entry.messages.length >= MAX_MESSAGES) return;
  const id = Math.floor(Math.random() * 0xffffffff).toString(16);
  entry.messages.push({ type: 'subtask', resource, task, msg, id, timestamp: new Date().toISOString() });
}

export function recordException(entry: HistoryEntry, err: Error): void {
  if (entry.messages.length >= MAX_MESSAGES) return;
  const error: { message: string; stack?: string } = { message: err.message };
  if (err.stack) error.stack = err.stack;
  entry.messages.push({ type: 'exception', error, timestamp: new Date().toISOString() });
}

export function recordLog(entry: HistoryEntry, level: string, args: unknown[]): void {
  if (entry.log.length >= MAX_LOG_ENTRIES) return;
  entry.log.push({
    timestamp: new Date().toISOString(),
    message: args.map((a) => truncated(a, 0)),
    level,
    type: 'message',
  });
}

export function finishEntry(entry: HistoryEntry, status: HistoryStatus, now = new Date()): void {
  entry.status = status;
  entry.finished_at = now.toISOString();
}

/** A copy of `value` with whatever nests deeper than MAX_PARAMS_DEPTH replaced by a marker. */
export function depthBounded(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_PARAMS_DEPTH) return '[nested too deep]';
  if (Array.isArray(value)) return value.map((v) => depthBounded(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = depthBounded(v, depth + 1);
  return out;
}

/** A JSON-safe copy with long strings cut, as the real runner does for logged messages. */
function truncated(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return value.length > MAX_STRING ? value.slice(0, MAX_STRING) : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth > 6) return '[object]';
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => truncated(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = truncated(v, depth + 1);
  return out;
}
