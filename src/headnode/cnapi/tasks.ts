/**
 * CNAPI task records (the `cnapi_tasks` bucket) and `/tasks/:id/wait` waiters
 * (sdc-cnapi lib/models/server.js sendTaskRequest, lib/app.js waitForTask /
 * alertWaitingTasks, lib/endpoints/tasks.js). A record is written `active` before the task
 * is posted to cn-agent and rewritten once: `complete` with
 * `history: [{name:'finish', timestamp, event:<cn-agent body>}]`, or `failure` with
 * `history: [{name:'error', ..., event:{error:{message}}}, {name:'finish', ..., event:{}}]`.
 */
import { randomUUID } from 'node:crypto';

export type TaskStatus = 'active' | 'complete' | 'failure';

export interface TaskHistoryEntry {
  name: 'finish' | 'error';
  timestamp: string;
  event: unknown;
}

export interface TaskRecord {
  id: string;
  req_id: string;
  task: string;
  server_uuid: string;
  status: TaskStatus;
  timestamp: string;
  history?: TaskHistoryEntry[];
}

/** CNAPI's hourly cleaner deletes tasks older than 30 days. */
export const TASK_MAX_AGE_MS = 30 * 24 * 3600 * 1000;
/** Default and maximum of `/tasks/:id/wait?timeout=` (seconds), as CNAPI. */
export const TASK_WAIT_DEFAULT_S = 3600;

interface Waiter {
  /** A number unique among this registry's waiters (`/diagnostics` lists them). */
  id: number;
  resolve: (t: TaskRecord | undefined) => void;
  timer: NodeJS.Timeout;
}

export interface TaskRegistryOptions {
  /** Keep at most this many records (oldest finished ones go first). */
  maxRecords?: number;
  /** A record changed (created or finished): persist soon. */
  onChange?: () => void;
}

export class TaskRegistry {
  private readonly records = new Map<string, TaskRecord>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private nextWaiterId = 1;
  private readonly maxRecords: number;
  private readonly onChange: (() => void) | undefined;
  stats = { active: 0, complete: 0, failure: 0 };

  constructor(opts: TaskRegistryOptions = {}) {
    this.maxRecords = opts.maxRecords ?? 5_000;
    this.onChange = opts.onChange;
  }

  get size(): number {
    return this.records.size;
  }

  /** A new `active` record. With `persist: false` (machine_load) it is not stored at all. */
  create(task: string, serverUuid: string, reqId: string, persist = true): TaskRecord {
    const rec: TaskRecord = {
      id: randomUUID(),
      req_id: reqId,
      task,
      server_uuid: serverUuid,
      status: 'active',
      timestamp: new Date().toISOString(),
    };
    if (persist) {
      this.records.set(rec.id, rec);
      this.stats.active++;
      this.trim();
      this.onChange?.();
    }
    return rec;
  }

  complete(rec: TaskRecord, event: unknown): void {
    rec.status = 'complete';
    rec.history = [{ name: 'finish', timestamp: new Date().toISOString(), event }];
    this.finished(rec);
  }

  fail(rec: TaskRecord, message: string): void {
    rec.status = 'failure';
    const ts = new Date().toISOString();
    rec.history = [
      { name: 'error', timestamp: ts, event: { error: { message } } },
      { name: 'finish', timestamp: ts, event: {} },
    ];
    this.finished(rec);
  }

  get(id: string): TaskRecord | undefined {
    return this.records.get(id);
  }

  /**
   * Resolves with the record once it is finished, or with its current (active) state after
   * `timeoutMs`, as CNAPI's wait swallows its timeout. Undefined when there is no such task.
   */
  wait(id: string, timeoutMs: number): Promise<TaskRecord | undefined> {
    const rec = this.records.get(id);
    if (!rec || rec.status !== 'active') return Promise.resolve(rec);
    return new Promise((resolve) => {
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      const waiter: Waiter = {
        id: this.nextWaiterId++,
        resolve,
        timer: setTimeout(() => {
          set!.delete(waiter);
          if (set!.size === 0) this.waiters.delete(id);
          resolve(this.records.get(id));
        }, timeoutMs),
      };
      set.add(waiter);
    });
  }

  /** CNAPI's `taskCallbacks` as `/diagnostics` shows them: task id to its waiters' ids. */
  waitersByTask(): Record<string, { id: number }[]> {
    const out: Record<string, { id: number }[]> = {};
    for (const [id, set] of this.waiters) out[id] = [...set].map((w) => ({ id: w.id }));
    return out;
  }

  /** Release every waiter with the current state (shutdown). */
  releaseWaiters(): void {
    for (const [id, set] of this.waiters) {
      for (const w of set) {
        clearTimeout(w.timer);
        w.resolve(this.records.get(id));
      }
    }
    this.waiters.clear();
  }

  snapshot(): TaskRecord[] {
    return [...this.records.values()];
  }

  /**
   * Load persisted records. A task that was `active` when the headnode stopped can never
   * finish (its HTTP request to cn-agent died with the process): it is marked `failure`.
   */
  restore(records: unknown, now = Date.now()): void {
    this.records.clear();
    if (!Array.isArray(records)) return;
    for (const r of records as TaskRecord[]) {
      if (!r || typeof r.id !== 'string' || typeof r.timestamp !== 'string') continue;
      if (now - Date.parse(r.timestamp) > TASK_MAX_AGE_MS) continue;
      if (r.status === 'active') {
        r.status = 'failure';
        const ts = new Date(now).toISOString();
        r.history = [
          { name: 'error', timestamp: ts, event: { error: { message: 'headnode restarted while the task ran' } } },
          { name: 'finish', timestamp: ts, event: {} },
        ];
      }
      this.records.set(r.id, r);
    }
  }

  /** Drop records older than 30 days (CNAPI's task cleaner). */
  cleanup(now = Date.now()): number {
    let n = 0;
    for (const [id, r] of this.records) {
      if (r.status !== 'active' && now - Date.parse(r.timestamp) > TASK_MAX_AGE_MS) {
        this.records.delete(id);
        n++;
      }
    }
    if (n > 0) this.onChange?.();
    return n;
  }

  private finished(rec: TaskRecord): void {
    const stored = this.records.get(rec.id) === rec;
    if (stored) {
      this.stats.active--;
      this.stats[rec.status === 'complete' ? 'complete' : 'failure']++;
      this.onChange?.();
    }
    const set = this.waiters.get(rec.id);
    if (set) {
      this.waiters.delete(rec.id);
      for (const w of set) {
        clearTimeout(w.timer);
        w.resolve(rec);
      }
    }
  }

  /** Bound memory: drop the oldest finished records beyond maxRecords (Map keeps insertion order). */
  private trim(): void {
    if (this.records.size <= this.maxRecords) return;
    for (const [id, r] of this.records) {
      if (this.records.size <= this.maxRecords) break;
      if (r.status !== 'active') this.records.delete(id);
    }
  }
}
