/**
 * The task runner, in process (the real agent forks a child per task; a mock CN cannot afford
 * a process per task). It reproduces what a consumer can observe of a real run:
 *
 * - the event sequence recorded in `/history`: `progress {value:0}`, `start`, the
 *   `start:<step>` / `end:<step>` pairs of stepped tasks, further `progress`, optionally
 *   `error {error, details?}`, then `progress {value:100}` (if not yet there) and `finish`;
 * - the reply: 200 with the finish value, or 500 `{error, details?}`; `req_id` only when the
 *   params carry one (task.js stamps params.req_id, which CNAPI never sends);
 * - a time limit (3600 s by default): the reply is then 500
 *   "child task process timed out after <n> seconds" and the task is aborted (deadlines.ts:
 *   one scheduler entry for every task's limit, not a timer each);
 * - the time each phase takes on a real CN, from the timing profile (docs/timing.md): a
 *   stepped task's `start:<step>` and `end:<step>` that far apart, a task without steps that
 *   long before it acts, logged in the task's log. A waiting task holds no timer and no
 *   closure per phase: one scheduler entry while it waits, and its place among the fleet's
 *   working tasks given back (admission.ts);
 * - one task throwing fails that task only (500, history status `failed`).
 *
 * On top of the real agent it serialises tasks on one VM (a destroy waits for an in-flight
 * create) and the agents / sysinfo writers of one CN, and it has the fault-injection seam.
 */
import { isMockcloudError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { phasesOf } from '../../timing/catalogue.js';
import { waitOn, type Wait } from '../../timing/wait.js';
import { abortableSleep, reasonOf } from './abortable.js';
import type { CnSlot } from './cn-slot.js';
import { Deadlines } from './deadlines.js';
import { FaultInjector } from './faults.js';
import { finishEntry, recordEvent, recordException, recordSubtask } from './history.js';
import { TaskLogBuffer, type TaskLogWriter } from './task-log.js';
import { isPlainObject } from './task-support/params.js';
import {
  TaskError,
  type PreparedTask,
  type RegisteredTask,
  type TaskContext,
  type TaskEnvironment,
  type TaskParams,
  type TaskResult,
} from './types.js';

export const DEFAULT_TASK_TIMEOUT_SECONDS = 3600;

export interface TaskOutcome {
  statusCode: 200 | 500;
  body: unknown;
}

export interface RunRequest {
  slot: CnSlot;
  task: RegisteredTask;
  prepared: PreparedTask;
  /** The params as they came: an object, or whatever else the body held (the task then fails). */
  params: unknown;
  /** The HTTP request id (CNAPI's x-request-id). */
  reqId: string;
  /** Aborts when the caller closed its connection (ends a hung task; see faults.ts hang). */
  clientGone?: AbortSignal;
  /** The task's place among the fleet's working tasks: given back while it only waits (admission.ts). */
  place?: { idle(): void; busy(): Promise<void> };
}

/** Task outcomes for `mockcloud status`. */
export interface TaskCounters {
  started: number;
  /** 200 replies. */
  succeeded: number;
  /** 500 replies from a task error (fatal), injected faults included. */
  failed: number;
  /** 500 replies from a task that threw unexpectedly. */
  crashed: number;
  timedOut: number;
  /** Cut short because the CN was detached or the daemon stopped. */
  aborted: number;
}

/** How a task ended, as the metrics name it (TaskCounters' kinds). */
export type TaskEnd = 'succeeded' | 'failed' | 'crashed' | 'timed_out' | 'aborted';

const COUNTER_OF: Record<TaskEnd, Exclude<keyof TaskCounters, 'started'>> = {
  succeeded: 'succeeded',
  failed: 'failed',
  crashed: 'crashed',
  timed_out: 'timedOut',
  aborted: 'aborted',
};

export interface TaskRunnerOptions {
  log: Logger;
  /** Told once per task as its reply is settled: how it ended and how long it took (ms). */
  onTaskEnd?: (task: string, end: TaskEnd, ms: number) => void;
  env: TaskEnvironment;
  timeoutSeconds?: number;
  faults?: FaultInjector;
  /** Where task logs go besides `/history` (none: history only). */
  taskLog?: TaskLogWriter;
}

type Settled = { kind: 'ok'; result: TaskResult | undefined } | { kind: 'error'; err: unknown };

export class TaskRunner {
  readonly faults: FaultInjector;
  readonly counters: TaskCounters = { started: 0, succeeded: 0, failed: 0, crashed: 0, timedOut: 0, aborted: 0 };
  readonly timeoutSeconds: number;
  private readonly log: Logger;
  private readonly env: TaskEnvironment;
  private running = 0;
  private readonly taskLogWriter: TaskLogWriter | undefined;
  private readonly onTaskEnd: TaskRunnerOptions['onTaskEnd'];
  private readonly deadlines: Deadlines;
  /** Waits on the shared scheduler (a bare runner without one, in tests: timers). */
  private readonly wait: Wait;

  constructor(opts: TaskRunnerOptions) {
    this.log = opts.log;
    this.onTaskEnd = opts.onTaskEnd;
    this.env = opts.env;
    this.timeoutSeconds = opts.timeoutSeconds ?? DEFAULT_TASK_TIMEOUT_SECONDS;
    this.faults = opts.faults ?? new FaultInjector();
    this.taskLogWriter = opts.taskLog;
    this.deadlines = new Deadlines(this.timeoutSeconds * 1000, opts.env.scheduler);
    const scheduler = opts.env.scheduler;
    this.wait = scheduler ? waitOn(scheduler) : (ms, signal) => abortableSleep(ms, signal ?? new AbortController().signal);
  }

  /** Forget every deadline (cn-agent stops; its tasks are aborted). */
  stop(): void {
    this.deadlines.stop();
  }

  get tasksInFlight(): number {
    return this.running;
  }

  /** Run one task for one CN; resolves with the reply once the task ends (or times out). */
  run(r: RunRequest): Promise<TaskOutcome> {
    const { slot, task } = r;
    const cn = slot.cn;
    const startedAt = Date.now();
    const t0 = performance.now();
    const entry = slot.history.start(task.name, r.params, new Date(startedAt));
    const logFile = new TaskLogBuffer({ task: task.name, req_id: r.reqId, server: cn.uuid });
    const log = logFile.taskLog(entry);
    const controller = new AbortController();
    const signal = controller.signal;
    const rawParams: TaskParams = isPlainObject(r.params) ? r.params : {};
    // Real tasks stamp params.req_id on their events and finish value (task.js event()): CNAPI
    // never sends one, so a real agent's answers carry none, and neither do ours.
    const reqId = rawParams.req_id;
    let progress = -1;
    const timing = this.env.timing;
    const wait = this.wait;
    const vmUuid = typeof rawParams.uuid === 'string' ? rawParams.uuid : undefined;
    /**
     * Wait out the time `phase` takes on this CN (0 on an instant profile: no wait at all),
     * its place among the working tasks given back meanwhile.
     */
    const pace = async (phase: string, bytes?: number): Promise<void> => {
      if (!timing) return;
      const brand = typeof rawParams.brand === 'string' ? rawParams.brand : vmUuid ? cn.vms.get(vmUuid, { include_dni: true })?.brand : undefined;
      const ms = timing.ms(`tasks.${task.name}.${phase}`, { server: cn.uuid, vm: vmUuid, brand, bytes });
      if (ms <= 0) return;
      log.info(`timing ${timing.profileAt({ server: cn.uuid, vm: vmUuid }).name}: ${phase} takes ${ms} ms`);
      r.place?.idle();
      try {
        await wait(ms, signal);
      } finally {
        await r.place?.busy();
      }
    };

    const event = (name: string, payload: Record<string, unknown>): Record<string, unknown> => {
      const withId = reqId === undefined ? { ...payload } : { ...payload, req_id: reqId };
      recordEvent(entry, name, withId);
      return withId;
    };
    const ctx: TaskContext = {
      cn,
      task: task.name,
      rawParams,
      reqId: r.reqId,
      env: this.env,
      log,
      signal,
      serverAddress: slot.serverAddress,
      state: slot.state,
      untilDetach: slot.untilDetach,
      progress(value: number) {
        progress = value;
        event('progress', { value });
      },
      async step<T>(name: string, description: string, stepProgress: number | undefined, fn: () => Promise<T>, bytes?: number) {
        recordEvent(entry, `start:${name}`, { timestamp: new Date().toISOString(), description });
        const endStep = () => {
          if (stepProgress !== undefined) ctx.progress(stepProgress);
          recordEvent(entry, `end:${name}`, { timestamp: new Date().toISOString() });
        };
        let out: T;
        try {
          await pace(name, bytes);
          out = await fn();
        } catch (err) {
          endStep();
          throw err;
        }
        endStep();
        return out;
      },
      async withVmLock<T>(vmUuid: string, fn: () => Promise<T>) {
        const release = await slot.locks.acquire([`vm:${vmUuid}`], signal);
        try {
          return await fn();
        } finally {
          release();
        }
      },
      sleep: (ms: number) => wait(ms, signal),
      phase: (name: string, bytes?: number) => pace(name, bytes),
      waitHooks: {
        beforeWait: () => r.place?.idle(),
        afterWait: async () => {
          await r.place?.busy();
        },
      },
      subtask: (resource, subtask, msg) => recordSubtask(entry, resource, subtask, msg),
    };

    this.running++;
    this.counters.started++;
    // Like the agent's request log: in the task's file, not in its history entry.
    if (task.logParams === false) logFile.bunyan.info('Not logging task params for %s (log_params=false)', task.name);
    else logFile.bunyan.info({ params: entry.params }, '%s task params', task.name);

    let settle!: (o: TaskOutcome, end: TaskEnd) => void;
    let replied = false;
    const outcome = new Promise<TaskOutcome>((resolve) => {
      settle = (o, end) => {
        if (replied) return;
        replied = true;
        // Counted here, once, as the metrics are told: /status and /metrics cannot disagree.
        this.counters[COUNTER_OF[end]]++;
        resolve(o);
        this.onTaskEnd?.(task.name, end, performance.now() - t0);
      };
    });

    const deadline = this.deadlines.add(() => {
      if (replied) return;
      const body = event('error', { error: `child task process timed out after ${this.timeoutSeconds} seconds` });
      event('finish', {});
      finishEntry(entry, 'failed');
      log.error('task timed out after %d seconds', this.timeoutSeconds);
      settle({ statusCode: 500, body }, 'timed_out');
      controller.abort(new Error(`task timed out after ${this.timeoutSeconds} seconds`));
    });

    const onAbort = () => {
      if (replied) return;
      const body = event('error', { error: `task aborted: ${reasonOf(signal).message}` });
      event('finish', {});
      finishEntry(entry, 'failed');
      settle({ statusCode: 500, body }, 'aborted');
    };
    signal.addEventListener('abort', onAbort, { once: true });

    const execute = async (): Promise<Settled> => {
      let release: (() => void) | undefined;
      try {
        release = await slot.locks.acquire(r.prepared.locks, signal);
        ctx.progress(0);
        event('start', {});
        const fault = this.faults.effectFor(cn.uuid, task.name);
        if (fault) {
          log.warn({ fault }, 'injected fault');
          if (fault.delayMs > 0) await ctx.sleep(fault.delayMs);
          if (fault.hang) await hangUntil(fault.hang, signal, r.clientGone, controller);
          if (fault.error !== undefined) throw new TaskError(fault.error);
        }
        if (phasesOf(task.name).includes('run')) await pace('run');
        return { kind: 'ok', result: await r.prepared.run(ctx) };
      } catch (err) {
        return { kind: 'error', err };
      } finally {
        release?.();
      }
    };

    const done = execute()
      .then(async (res) => {
        deadline.cancel();
        signal.removeEventListener('abort', onAbort);
        try {
          if (!replied) settle(...this.finish(res, ctx, entry, event, () => progress));
          else if (res.kind === 'error' && !signal.aborted) log.warn({ err: res.err }, 'task failed after its reply');
        } catch (err) {
          // Never leave a request hanging, whatever went wrong in recording the outcome.
          this.log.error({ err, server: cn.uuid, task: task.name }, 'cannot record task outcome');
          finishEntry(entry, 'failed');
          settle({ statusCode: 500, body: event('error', { error: `task ${task.name} failed: ${(err as Error).message}` }) }, 'crashed');
        }
        this.running--;
        slot.running.delete(controller);
        if (task.changesVms) {
          try {
            cn.markStatusDirty();
          } catch (err) {
            this.log.warn({ err, server: cn.uuid }, 'markStatusDirty failed');
          }
        }
        this.taskLogWriter?.append(logFile.take());
      })
      .catch((err: unknown) => {
        this.log.error({ err, server: cn.uuid, task: task.name }, 'task bookkeeping failed');
      });
    slot.running.set(controller, done);
    return outcome;
  }

  private finish(
    res: Settled,
    ctx: TaskContext,
    entry: Parameters<typeof finishEntry>[0],
    event: (name: string, payload: Record<string, unknown>) => Record<string, unknown>,
    progress: () => number,
  ): [TaskOutcome, TaskEnd] {
    const toHundred = () => {
      if (progress() < 100) ctx.progress(100);
    };
    if (res.kind === 'ok') {
      toHundred();
      finishEntry(entry, 'finished');
      const value = res.result ?? {};
      if (Array.isArray(value) || typeof value === 'string') {
        recordEvent(entry, 'finish', value);
        return [{ statusCode: 200, body: value }, 'succeeded'];
      }
      return [{ statusCode: 200, body: event('finish', value) }, 'succeeded'];
    }
    const err = res.err;
    if (err instanceof TaskError) {
      const payload: Record<string, unknown> = { error: err.message };
      if (err.details) payload.details = err.details;
      const body = event('error', payload);
      toHundred();
      event('finish', err.finishValue ?? {});
      finishEntry(entry, 'finished');
      ctx.log.error(err.message);
      return [{ statusCode: 500, body }, 'failed'];
    }
    // A task that threw: a bug or an unexpected store error. It fails alone.
    const e = err instanceof Error ? err : new Error(String(err));
    recordException(entry, e);
    ctx.log.error({ err: e }, 'task threw');
    this.log.warn({ err: e, server: ctx.cn.uuid, task: ctx.task }, 'task threw');
    const payload: Record<string, unknown> = { error: e.message };
    if (isMockcloudError(e) && e.restCode !== 'InternalError') payload.details = { restCode: e.restCode };
    const body = event('error', payload);
    event('finish', {});
    finishEntry(entry, 'failed');
    return [{ statusCode: 500, body }, 'crashed'];
  }
}

/**
 * A hung task (a task-fault event's `hang`): no answer until the event ends (then the task
 * goes on as if it had only been slow), the task is aborted (time limit, CN down), or the
 * caller closes its connection (the task is aborted: nobody is left to answer).
 */
function hangUntil(end: AbortSignal, task: AbortSignal, clientGone: AbortSignal | undefined, controller: AbortController): Promise<void> {
  if (end.aborted) return Promise.resolve();
  if (task.aborted) return Promise.reject(reasonOf(task));
  return new Promise<void>((resolve, reject) => {
    const cleanup = (): void => {
      end.removeEventListener('abort', onEnd);
      task.removeEventListener('abort', onTask);
      clientGone?.removeEventListener('abort', onGone);
    };
    const onEnd = (): void => {
      cleanup();
      resolve();
    };
    const onTask = (): void => {
      cleanup();
      reject(reasonOf(task));
    };
    const onGone = (): void => {
      cleanup();
      controller.abort(new Error('the client went away while the task hung'));
      reject(reasonOf(task));
    };
    end.addEventListener('abort', onEnd, { once: true });
    task.addEventListener('abort', onTask, { once: true });
    if (clientGone?.aborted) onGone();
    else clientGone?.addEventListener('abort', onGone, { once: true });
  });
}
