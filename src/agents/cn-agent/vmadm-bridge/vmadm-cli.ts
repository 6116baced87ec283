/**
 * How a vmadm failure reaches a task on a real CN. cn-agent calls node-vmadm, which on
 * SmartOS runs the `vmadm` command (node-vmadm lib/index.sunos.js): for start, stop,
 * update, info and the snapshot commands it first checks that the zone exists (else `VM
 * does not exist`, restCode VmNotFound), then a non-zero exit becomes
 * `vmadm exited with code: 1 signal: null`, vmadm's own message going to stderr, which
 * node-vmadm logs ("error executing vmadm"); for update the error is vmadm's message
 * itself. Commands vmadm treats as done (starting a running VM, stopping a stopped one)
 * exit 0 and are no error at all.
 */
import { isMockcloudError, messageOf } from '../../../common/errors.js';
import type { TaskLog } from '../task-log.js';

export class VmadmCliError extends Error {
  constructor(
    message: string,
    readonly restCode: string | undefined,
    /** What vmadm printed on stderr. */
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'VmadmCliError';
  }
}

export interface CliCall {
  /** `vmadm` arguments, for the log line. */
  args: string[];
  /** vmadm's prefix for this command's error message on stderr (e.g. `vmadm info`'s). */
  stderrPrefix?: string;
  /** node-vmadm's update: the error is vmadm's stderr, not the exit code. */
  stderrIsMessage?: boolean;
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
    const stderr = `${call.stderrPrefix ?? ''}${messageOf(err)}`;
    if (call.stderrIsMessage) throw new VmadmCliError(stderr, undefined, stderr);
    log.error(
      { code: 1, signal: null, cmdline: ['/usr/sbin/vmadm', ...call.args], stdout: '', stderrLines: [stderr] },
      'error executing vmadm',
    );
    throw new VmadmCliError('vmadm exited with code: 1 signal: null', undefined, stderr);
  }
}
