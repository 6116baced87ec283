/**
 * The shapes shared by cn-agent's HTTP layer, its task runner and the tasks themselves.
 *
 * A task is defined once (tasks/*.ts) as a `TaskDefinition`: a name, a validator that types
 * the raw `params` at the edge (bad input fails the task before it does anything), the VMs it must be
 * serialised against, and `run`, which gets a `TaskContext` and returns the finish value.
 * Failing the way a real task's `fatal()` does is `throw new TaskError(message, details)`.
 */
import type { RemoteVm, RuleData } from '../firewaller/rules.js';
import type { JsonHttpClient } from '../../common/http-client.js';
import type { Logger } from '../../common/log.js';
import type { AgentRecord, MockCn } from '../../mockcn/types.js';
import type { StreamListeners } from './stream-listeners.js';
import type { TaskLog } from './task-log.js';
import type { UntilDetach } from './until-detach.js';
import type { Scheduler } from '../../runtime/scheduler.js';
import type { Timing } from '../../timing/timing.js';
import type { WaitHooks } from '../../vmadm/types.js';

/** Adopting a CN's agent instances into SAPI (src/agents/sapi-instances), for agent_install. */
export interface AgentInstanceAdopter {
  adopt(cn: MockCn, agents: readonly AgentRecord[]): Promise<{ adopted: string[]; present: string[]; noService: string[] }>;
}

/** What every task may use besides its CN: shared, never per CN. */
export interface TaskEnvironment {
  log: Logger;
  /** The daemon's one outbound client (and its keep-alive agent, for binary downloads). */
  http: JsonHttpClient;
  /** IMGAPI base URL for agent_install, image_ensure_present and image_get. */
  imgapiUrl?: string | undefined;
  cnapiUrl?: string | undefined;
  /** KBMAPI base URL for recovery_config; without it the KBMAPI update is skipped. */
  kbmapiUrl?: string | undefined;
  dataDir?: string | undefined;
  /** Where agent_install stages downloads (and command_execute its scripts); os.tmpdir() by default. */
  tmpDir?: string | undefined;
  /** The one-request listeners of the docker tasks (CnAgentServer provides it). */
  streams?: StreamListeners | undefined;
  /** The daemon's shared scheduler: tasks' waits and time limits, effects that outlive a task (server_reboot). */
  scheduler?: Scheduler | undefined;
  /** How long each phase takes (docs/timing.md); absent: nothing waits (instant). */
  timing?: Timing | undefined;
  /**
   * command_execute runs the script in a shell on this host (`--allow-execute`); otherwise
   * it answers that execution is not supported.
   */
  allowExecute?: boolean | undefined;
  /** How long a rebooting CN stays down (`--boot-seconds`); the timing profile's `cn.boot` otherwise. */
  bootSeconds?: number | undefined;
  /** RFD 82: agent_install adopts its new instance into SAPI; absent without a SAPI. */
  agentInstances?: AgentInstanceAdopter | undefined;
  /** The CN's firewaller store, for command_execute's `fwadm`; absent without a firewaller. */
  firewallState?: ((uuid: string) => { rules: RuleData[]; rvms: RemoteVm[] } | undefined) | undefined;
}

export type TaskParams = Record<string, unknown>;

/**
 * A task's finish value. An object gets the params' `req_id` (if any) added before it is sent;
 * an array (the zfs listings) or a string (machine_info's `vmadm info` text) is sent as it is,
 * JSON-encoded, as the real agent's `res.send(200, value)` does.
 */
export type TaskResult = Record<string, unknown> | unknown[] | string;

/** An image this CN has "installed" (imported): what image_get answers with. */
export interface InstalledImage {
  uuid: string;
  manifest: Record<string, unknown>;
}

/**
 * Small per-CN state the tasks keep beside the CN's files (in memory; see docs in tasks). A
 * capability with state of its own per CN (the ZFS changes in zfs/, the container files in
 * docker/, the migrations in migration/) keeps it itself, in a WeakMap keyed by this object,
 * so it lives and dies with the CN's slot and this contract names none of them.
 */
export interface CnTaskState {
  images: Map<string, InstalledImage>;
  overprovisionRatio?: string;
}

export interface TaskContext {
  readonly cn: MockCn;
  readonly task: string;
  /** The params exactly as they came; `run` also gets them validated and typed. */
  readonly rawParams: TaskParams;
  /** CNAPI's x-request-id (or our own id when it sent none). */
  readonly reqId: string;
  readonly env: TaskEnvironment;
  readonly log: TaskLog;
  /** Aborted when the task times out or the CN is detached; long waits must observe it. */
  readonly signal: AbortSignal;
  /** Where this CN's cn-agent listens, like the real task's `req.serverAddress`. */
  readonly serverAddress: { address: string; family: string; port: number };
  readonly state: CnTaskState;
  readonly untilDetach: UntilDetach;
  /** Emit a `progress` event. */
  progress(value: number): void;
  /**
   * Run one named step with `start:<name>` / `end:<name>` events, like Task.createSteps; the
   * step takes the time the timing profile gives `tasks.<task>.<name>` (with `bytes` moved).
   */
  step<T>(name: string, description: string, progress: number | undefined, fn: () => Promise<T>, bytes?: number): Promise<T>;
  /** Wait out the time of the task's phase `name` (`tasks.<task>.<name>`; `bytes` moved at its rate). */
  phase(name: string, bytes?: number): Promise<void>;
  /**
   * For vmadm's paced operations: the task gives its place among the daemon's working tasks
   * back while the VM only takes time, and takes it back after (admission.ts).
   */
  readonly waitHooks: WaitHooks;
  /** Serialise with other tasks on this VM for the duration of `fn`. */
  withVmLock<T>(vmUuid: string, fn: () => Promise<T>): Promise<T>;
  /** Wait `ms`, or reject when the task is aborted. */
  sleep(ms: number): Promise<void>;
  /**
   * Ask for a subtask, as the real Task.subTask does: the request is recorded in the task's
   * history entry (`{type: 'subtask', resource, task, msg, id}`); nothing answers it.
   */
  subtask?(resource: string, task: string, msg: Record<string, unknown>): void;
}

export interface TaskDefinition<P> {
  name: string;
  /** The real agent's queue name (informational, shown in logs). */
  queue: string;
  /** False for a queue with `log_params: false` (docker_build): params stay out of the task log. */
  logParams?: boolean;
  /** Check and type the params; throw `invalid(...)` (task-support/params.ts) on bad input: the task then fails with that message. */
  validate(params: TaskParams): P;
  /** VM uuids this task must not overlap with (held for the whole task). */
  vmLocks?(params: P): string[];
  /** Other exclusive keys (e.g. 'agents', 'sysinfo') held for the whole task. */
  locks?: readonly string[];
  /** The task may change VMs: send a status report soon after it ends. */
  changesVms?: boolean;
  run(ctx: TaskContext, params: P): Promise<TaskResult | undefined>;
}

/** A task definition with its params type erased, ready for the registry. */
export interface RegisteredTask {
  readonly name: string;
  readonly queue: string;
  readonly logParams?: boolean;
  readonly changesVms: boolean;
  prepare(params: TaskParams): PreparedTask;
}

export interface PreparedTask {
  /** Lock keys, VM uuids and named keys together. */
  readonly locks: string[];
  run(ctx: TaskContext): Promise<TaskResult | undefined>;
}

export function defineTask<P>(def: TaskDefinition<P>): RegisteredTask {
  return {
    name: def.name,
    queue: def.queue,
    logParams: def.logParams !== false,
    changesVms: def.changesVms === true,
    prepare(raw: TaskParams): PreparedTask {
      const params = def.validate(raw);
      const locks = [...(def.vmLocks?.(params).map((u) => `vm:${u}`) ?? []), ...(def.locks ?? [])];
      return { locks, run: (ctx) => def.run(ctx, params) };
    },
  };
}

/**
 * A task failing the way the real agent's `fatal(msg, details, finishValue)` does: an `error`
 * event `{error, details?}` then `finish`, and a 500 `{error, details?}` reply.
 */
export class TaskError extends Error {
  constructor(
    message: string,
    readonly details?: Record<string, unknown>,
    /** The finish value recorded in history (the reply is still the error). */
    readonly finishValue?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'TaskError';
  }
}
