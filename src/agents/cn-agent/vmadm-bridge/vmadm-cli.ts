/**
 * How a vmadm failure reaches a task on a real CN. cn-agent calls node-vmadm, which on
 * SmartOS runs the `vmadm` command (node-vmadm lib/index.sunos.js): for most commands it first
 * checks that the zone exists (else `VM does not exist`, restCode VmNotFound), then turns a
 * non-zero exit into an error of one of three shapes:
 *
 * - `exit-code` (delete, start, stop, reboot, kill, info, the snapshot commands):
 *   `vmadm exited with code: 1 signal: null`, vmadm's stderr logged ("error executing vmadm");
 *   only kill keeps the `ENOTRUNNING` code node-vmadm reads off a last stderr line
 *   `Cannot find running init PID for VM ...`, so an idempotent kill of a stopped VM is no
 *   error while an idempotent reboot of one still is;
 * - `stderr` (update, reprovision): the error is vmadm's whole stderr;
 * - `create`: `vmadm exited with code: 1: <last stderr line>\n...<stderr>`.
 *
 * node-vmadm runs vmadm with VMADM_DEBUG_LEVEL=debug, so VM.js's bunyan records go to stderr
 * ahead of the message vmadm prints last (smartos-live src/vm/node_modules/VM.js
 * ensureLogging, sbin/vmadm.js). Our stderr is the record VM.js writes first for the command
 * (create's "Creating VM, original payload", update's "Updating VM ... with initial
 * payload", reprovision's "Reprovisioning VM ...") and the message; a real CN's has more
 * debug records between them.
 * Commands vmadm treats as done (starting a running VM, stopping a stopped one) exit 0 and
 * are no error at all.
 */
import { isMockcloudError, messageOf } from '../../../common/errors.js';
import type { TaskLog } from '../task-log.js';

export class VmadmCliError extends Error {
  constructor(
    message: string,
    readonly restCode: string | undefined,
    /** What vmadm printed on stderr. */
    readonly stderr: string,
    /** node-vmadm's err.code (kill's ENOTRUNNING). */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'VmadmCliError';
  }
}

/** node-vmadm's error shapes (see the header). */
export type NodeVmadmShape = 'exit-code' | 'stderr' | 'create';

export interface CliCall {
  /** `vmadm` arguments, for the log line. */
  args: string[];
  /** How node-vmadm words this command's failure; `exit-code` unless said. */
  shape?: NodeVmadmShape;
  /** vmadm's prefix for this command's error message on stderr (e.g. `vmadm info`'s). */
  stderrPrefix?: string;
  /** kill: keep node-vmadm's ENOTRUNNING code. */
  keepErrCode?: boolean;
  /** The bunyan record VM.js writes first for this command (create, update). */
  opening?: VmjsRecord;
}

/** Where VM.js's bunyan records come from: the CN's hostname, node-vmadm's REQ_ID. */
export interface VmjsRecord {
  hostname: string;
  reqId: string;
  msg: string;
  /** The child logger's fields (update's `action` and `vm`) and the record's own. */
  fields?: Record<string, unknown>;
}

const INFO = 30;

/** One bunyan line as VM.js's logger (name `vmadm`, sbin/vmadm.js) writes it. */
function bunyanLine(rec: VmjsRecord, now: Date): string {
  return JSON.stringify({
    name: 'vmadm',
    hostname: rec.hostname,
    // vmadm's own pid: a short-lived process of the CN's, not ours.
    pid: 10000 + (now.getTime() % 50000),
    req_id: rec.reqId,
    ...rec.fields,
    level: INFO,
    msg: rec.msg,
    time: now.toISOString(),
    v: 0,
  });
}

/**
 * Run a store operation as `vmadm <args>` through node-vmadm: its failure becomes the
 * error node-vmadm gives, and vmadm's message is logged to the task log.
 */
export async function viaVmadm<T>(log: TaskLog, call: CliCall, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isMockcloudError(err) && err.restCode === 'VmNotFound') {
      throw new VmadmCliError('VM does not exist', 'VmNotFound', '');
    }
    const message = `${call.stderrPrefix ?? ''}${messageOf(err)}`;
    const stderrLines = [...(call.opening ? [bunyanLine(call.opening, new Date())] : []), message];
    const stderr = stderrLines.join('\n');
    const shape = call.shape ?? 'exit-code';
    if (shape === 'stderr') throw new VmadmCliError(stderr.trim(), undefined, stderr);
    const errCode = /Cannot find running init PID for VM/.test(message) ? 'ENOTRUNNING' : undefined;
    log.error(
      { code: 1, errCode, signal: null, cmdline: ['/usr/sbin/vmadm', ...call.args], stdout: '', stderrLines },
      'error executing vmadm',
    );
    if (shape === 'create') {
      // node-vmadm names the last line only when there is more than one.
      const last = stderrLines.length > 1 ? message : '';
      const lines = stderrLines.length > 1 ? stderr.trim().slice(-STDERR_TRUNCATE_LENGTH) : '';
      throw new VmadmCliError(`vmadm exited with code: 1: ${last}\n...${lines}`, undefined, stderr);
    }
    throw new VmadmCliError('vmadm exited with code: 1 signal: null', undefined, stderr, call.keepErrCode ? errCode : undefined);
  }
}

/** node-vmadm keeps this much of create's stderr in its error. */
const STDERR_TRUNCATE_LENGTH = 10000;
