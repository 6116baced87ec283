/**
 * The main thread's side of the heartbeat thread (heartbeat-loop.ts): one worker_threads
 * Worker for the whole fleet. Commands are batched into one postMessage per turn of the main
 * event loop; what the thread sends back goes to the reporter's handlers.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../../common/log.js';
import type { FromHeartbeatThread, HeartbeatResult, HeartbeatThreadData, HeartbeatThreadLoop, ToHeartbeatThread } from './heartbeat-protocol.js';

export interface HeartbeatThreadHandlers {
  results(results: HeartbeatResult[]): void;
  ended(uuid: string): void;
  send(uuid: string, seq: number, lateMs: number): void;
  aheadSent(id: number, sent: number): void;
  aheadAnswered(id: number): void;
  /** The thread runs; its kernel thread id where there is one. */
  started(tid: number | undefined): void;
  /** Once a second, how the thread's own event loop ran. */
  loop(figures: HeartbeatThreadLoop): void;
  /** The thread ended without being closed (it threw): its heartbeats are the main thread's again. */
  lost(err: unknown): void;
}

/**
 * The worker's script, compiled. Run from the TypeScript sources (the test runner), this
 * module is src/…/heartbeat-thread.ts and the worker is taken from the build (dist/src/…),
 * which `npm test` makes first: Node cannot start a worker from a .ts file.
 */
function workerScript(): URL {
  const here = new URL('./heartbeat-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(here))) return here;
  const file = fileURLToPath(here);
  const tail = path.join('src', 'agents', 'cn-agent', 'cnapi-reporter', 'heartbeat-worker.js');
  const built = file.endsWith(tail) ? path.join(file.slice(0, -tail.length), 'dist', tail) : file;
  if (existsSync(built)) return pathToFileURL(built);
  throw new Error(`the heartbeat thread's script is not built (${built}): run npm run build`);
}

export class HeartbeatThread {
  private readonly worker: Worker;
  private outbox: ToHeartbeatThread[] = [];
  private flushing: NodeJS.Immediate | undefined;
  private closed = false;

  constructor(data: HeartbeatThreadData, handlers: HeartbeatThreadHandlers, log: Logger) {
    this.worker = new Worker(workerScript(), { workerData: data, name: 'heartbeats' });
    this.worker.on('message', (msg: FromHeartbeatThread) => {
      switch (msg.op) {
        case 'results':
          handlers.results(msg.results);
          return;
        case 'ended':
          handlers.ended(msg.uuid);
          return;
        case 'send':
          handlers.send(msg.uuid, msg.seq, msg.lateMs);
          return;
        case 'aheadSent':
          handlers.aheadSent(msg.id, msg.sent);
          return;
        case 'aheadAnswered':
          handlers.aheadAnswered(msg.id);
          return;
        case 'started':
          handlers.started(msg.tid);
          return;
        case 'loop': {
          const { op: _op, ...figures } = msg;
          handlers.loop(figures);
          return;
        }
      }
    });
    let failure: unknown;
    this.worker.on('error', (err) => {
      failure = err;
      log.error({ err }, 'the heartbeat thread failed');
    });
    this.worker.on('exit', (code) => {
      if (this.closed) return;
      this.closed = true;
      handlers.lost(failure ?? new Error(`the heartbeat thread exited (code ${code})`));
    });
    // It must not keep a daemon that is done from exiting.
    this.worker.unref();
  }

  tell(msg: ToHeartbeatThread): void {
    if (this.closed) return;
    this.outbox.push(msg);
    this.flushing ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushing = undefined;
    if (this.outbox.length === 0 || this.closed) return;
    const batch = this.outbox;
    this.outbox = [];
    this.worker.postMessage(batch);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.flushing) clearImmediate(this.flushing);
    this.flush();
    this.closed = true;
    await this.worker.terminate();
  }
}

/** The heartbeat thread's loop figures since they were last read: its worst second, and its CPU time and wait for one in all. */
export interface HeartbeatThreadFigures {
  seconds: number;
  delayMaxMs: number;
  delayP99Ms: number;
  cpuMs?: number;
  runqueueWaitMs?: number;
  /** The most it waited for a CPU in any one second. */
  worstRunqueueWaitMs?: number;
}

export class HeartbeatThreadWatch {
  private figures: HeartbeatThreadFigures = HeartbeatThreadWatch.empty();

  private static empty(): HeartbeatThreadFigures {
    return { seconds: 0, delayMaxMs: 0, delayP99Ms: 0 };
  }

  add(l: HeartbeatThreadLoop): void {
    const f = this.figures;
    f.seconds++;
    f.delayMaxMs = Math.max(f.delayMaxMs, l.delayMaxMs);
    f.delayP99Ms = Math.max(f.delayP99Ms, l.delayP99Ms);
    if (l.cpuMs !== undefined && l.runqueueWaitMs !== undefined) {
      f.cpuMs = (f.cpuMs ?? 0) + l.cpuMs;
      f.runqueueWaitMs = (f.runqueueWaitMs ?? 0) + l.runqueueWaitMs;
      f.worstRunqueueWaitMs = Math.max(f.worstRunqueueWaitMs ?? 0, l.runqueueWaitMs);
    }
  }

  /** What came since the last read (undefined: nothing did), and start again. */
  read(): HeartbeatThreadFigures | undefined {
    const f = this.figures;
    this.figures = HeartbeatThreadWatch.empty();
    if (f.seconds === 0) return undefined;
    // Rounded once, as read: summing rounded seconds would add up their rounding.
    for (const k of ['cpuMs', 'runqueueWaitMs', 'worstRunqueueWaitMs'] as const) if (f[k] !== undefined) f[k] = Math.round(f[k]);
    return f;
  }
}
