/**
 * A small in-process stand-in for the workflow API behind VMAPI: jobs with the wf-api
 * shape VMAPI's `/jobs` renders (`{name, uuid, execution, params, exec_after, created_at,
 * timeout, chain_results}`), run by one runner with bounded concurrency, each a chain of
 * named steps whose results and error land in `chain_results` as node-workflow records them
 * (a failed chain's `onerror` steps in `onerror_results`). Jobs of one VM are serialised as
 * on a real DC: by the CNAPI waitlist tickets their workflows take, not by the runner.
 *
 * With a timing (docs/timing.md `workflow.*`), a queued job waits for a runner to take it
 * (wf-runner looks every run_interval) and each step takes its own time besides what it waits
 * for, so `chain_results` shows each step's start and end as a real DC's job does.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../common/log.js';
import { Gate } from '../../common/gate.js';
import type { Pacing } from '../../timing/wait.js';

export type Execution = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

/** A step's error as node-workflow keeps it: a string, or `{name, message}` (restify errors whole). */
export type StepError = string | { name?: string; message?: string; restCode?: string; statusCode?: number };

export interface ChainResult {
  result: string;
  error: StepError;
  name: string;
  started_at: string;
  finished_at: string;
}

export interface JobRecord {
  uuid: string;
  name: string;
  execution: Execution;
  params: Record<string, unknown>;
  exec_after: string;
  created_at: string;
  timeout: number;
  chain_results: ChainResult[];
  onerror_results?: ChainResult[];
  /** When the job ended (not rendered by VMAPI, kept for waiters and cleanup). */
  elapsed?: number;
}

/** What a step sees: the job's params and a scratch space shared by the chain. */
export interface JobContext {
  job: JobRecord;
  params: Record<string, unknown>;
  /** Per-run state that is not part of the rendered job (task ids, the finished VM...). */
  state: Record<string, unknown>;
  log: Logger;
}

export interface Step {
  name: string;
  /** Resolves with the step's result message; throws to fail the job. */
  body: (ctx: JobContext) => Promise<string>;
}

export interface WorkflowDef {
  /** e.g. 'start-7.0.8' (the workflow's name-version, as wf-api shows it). */
  name: string;
  timeout: number;
  chain: Step[];
  /** Run after a failed chain step (errors here are recorded, never thrown). */
  onerror?: Step[];
}

/** Params VMAPI hides from job output (`sanitizeJobParams`). */
const SENSITIVE = ['dapi_url', 'napi_url', 'cnapi_url', 'vmapi_url', 'expects'];

export function renderJob(job: JobRecord): Record<string, unknown> {
  const params = { ...job.params };
  for (const k of SENSITIVE) delete params[k];
  return {
    name: job.name,
    uuid: job.uuid,
    execution: job.execution,
    params,
    exec_after: job.exec_after,
    created_at: job.created_at,
    timeout: job.timeout,
    chain_results: job.chain_results,
  };
}

export class JobRunner {
  private readonly jobs = new Map<string, JobRecord>();
  private readonly waiters = new Map<string, Set<(j: JobRecord) => void>>();
  private readonly log: Logger;
  /** Jobs running at once; the others wait their turn. */
  private readonly slots: Gate;
  private readonly maxRecords: number;
  private readonly onChange: () => void;
  private readonly pacing: Pacing | undefined;
  private stopped = false;
  stats = { succeeded: 0, failed: 0 };

  constructor(opts: { log: Logger; concurrency?: number; maxRecords?: number; onChange: () => void; pacing?: Pacing | undefined }) {
    this.log = opts.log;
    this.pacing = opts.pacing;
    this.slots = new Gate(opts.concurrency ?? 32);
    this.maxRecords = opts.maxRecords ?? 5_000;
    this.onChange = opts.onChange;
  }

  get(uuid: string): JobRecord | undefined {
    return this.jobs.get(uuid);
  }

  /** Jobs, newest first, optionally for one VM / one execution state / one task. */
  list(f: { vm_uuid?: string; execution?: string; task?: string } = {}): JobRecord[] {
    return [...this.jobs.values()]
      .filter(
        (j) =>
          (!f.vm_uuid || j.params.vm_uuid === f.vm_uuid) &&
          (!f.execution || j.execution === f.execution) &&
          (!f.task || j.params.task === f.task),
      )
      .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
  }

  /** Queue a job; it starts when a slot is free. */
  create(def: WorkflowDef, params: Record<string, unknown>): JobRecord {
    const now = new Date().toISOString();
    const job: JobRecord = {
      uuid: randomUUID(),
      name: def.name,
      execution: 'queued',
      params,
      exec_after: now,
      created_at: now,
      timeout: def.timeout,
      chain_results: [],
    };
    this.jobs.set(job.uuid, job);
    this.trim();
    this.onChange();
    void this.slots.run(() => this.execute(def, job));
    return job;
  }

  /** Resolves when the job has ended (or at once if it has). */
  wait(uuid: string): Promise<JobRecord | undefined> {
    const job = this.jobs.get(uuid);
    if (!job || isFinished(job.execution)) return Promise.resolve(job);
    return new Promise((resolve) => {
      let set = this.waiters.get(uuid);
      if (!set) this.waiters.set(uuid, (set = new Set()));
      set.add(resolve);
    });
  }

  snapshot(): JobRecord[] {
    return [...this.jobs.values()];
  }

  /** Reload jobs; ones that were queued or running when the headnode stopped are failed. */
  restore(list: unknown): void {
    this.jobs.clear();
    if (!Array.isArray(list)) return;
    for (const j of list as JobRecord[]) {
      if (!j || typeof j.uuid !== 'string') continue;
      if (!isFinished(j.execution)) {
        const ts = new Date().toISOString();
        j.execution = 'failed';
        j.chain_results = [
          ...(j.chain_results ?? []),
          {
            result: '',
            error: { name: 'Error', message: 'headnode restarted while the job ran' },
            name: 'headnode.restart',
            started_at: ts,
            finished_at: ts,
          },
        ];
      }
      this.jobs.set(j.uuid, j);
    }
  }

  /** Stop taking new work; jobs in flight finish on their own (their HTTP calls end with the peers). */
  stop(): void {
    this.stopped = true;
    // Queued jobs start now and fail at their first step (execute checks `stopped`).
    this.slots.open();
  }

  private async execute(def: WorkflowDef, job: JobRecord): Promise<void> {
    const log = this.log.child({ job_uuid: job.uuid, workflow: def.name });
    const ctx: JobContext = { job, params: job.params, state: {}, log };
    await this.pace('workflow.pickup');
    job.execution = 'running';
    this.onChange();
    const started = Date.now();
    let failed = false;
    for (const step of def.chain) {
      if (this.stopped) {
        failed = true;
        job.chain_results.push(result(step.name, '', new Error('headnode stopped')));
        break;
      }
      const at = new Date().toISOString();
      try {
        await this.pace('workflow.step');
        const msg = await step.body(ctx);
        job.chain_results.push({ result: msg, error: '', name: step.name, started_at: at, finished_at: new Date().toISOString() });
      } catch (err) {
        failed = true;
        log.warn({ err, step: step.name }, 'job step failed');
        job.chain_results.push({ ...result(step.name, '', err), started_at: at });
        break;
      }
      this.onChange();
    }
    if (failed && def.onerror) {
      job.onerror_results = [];
      for (const step of def.onerror) {
        const at = new Date().toISOString();
        try {
          await this.pace('workflow.step');
          const msg = await step.body(ctx);
          job.onerror_results.push({ result: msg, error: '', name: step.name, started_at: at, finished_at: new Date().toISOString() });
        } catch (err) {
          log.warn({ err, step: step.name }, 'job onerror step failed');
          job.onerror_results.push({ ...result(step.name, '', err), started_at: at });
        }
      }
    }
    job.execution = failed ? 'failed' : 'succeeded';
    job.elapsed = (Date.now() - started) / 1000;
    this.stats[failed ? 'failed' : 'succeeded']++;
    this.onChange();
    const set = this.waiters.get(job.uuid);
    if (set) {
      this.waiters.delete(job.uuid);
      for (const w of set) w(job);
    }
  }

  /** Wait out what the timing gives `key` (nothing without one, or once stopping). */
  private async pace(key: string): Promise<void> {
    if (!this.pacing || this.stopped) return;
    const ms = this.pacing.ms(key);
    if (ms > 0) await this.pacing.wait(ms);
  }

  private trim(): void {
    if (this.jobs.size <= this.maxRecords) return;
    for (const [id, j] of this.jobs) {
      if (this.jobs.size <= this.maxRecords) break;
      if (isFinished(j.execution)) this.jobs.delete(id);
    }
  }
}

function isFinished(e: Execution): boolean {
  return e === 'succeeded' || e === 'failed' || e === 'canceled';
}

/**
 * node-workflow's record of a failed step: strings as they are, restify-style errors (with a
 * status) whole, other errors as `{name, message}`.
 */
function result(name: string, msg: string, err: unknown): ChainResult {
  const ts = new Date().toISOString();
  let error: StepError;
  if (typeof err === 'string') error = err;
  else if (err instanceof StepFailure) error = err.recorded;
  else if (err instanceof Error) error = { name: err.name, message: err.message };
  else error = JSON.stringify(err);
  return { result: msg, error, name, started_at: ts, finished_at: ts };
}

/** A step failing with exactly what node-workflow would record (`cb('text')` or a peer's error). */
export class StepFailure extends Error {
  constructor(readonly recorded: StepError) {
    super(typeof recorded === 'string' ? recorded : (recorded.message ?? 'step failed'));
  }
}
