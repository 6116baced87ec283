/**
 * What the machine_* tasks share: turning a vmadm (VmStore) failure into the task error the
 * real agent reports (`'<op> error: <message>'`, with `details.restCode` when vmadm gave one,
 * which CNAPI maps, e.g. VmNotFound → 404), and the VM load that ends most tasks.
 */
import { isMockcloudError, messageOf } from '../../../common/errors.js';
import type { Vm } from '../../../vmadm/types.js';
import { TaskError, type TaskContext } from '../types.js';
import { nodeVmadm } from './node-vmadm.js';

/** restCodes vmadm sets on purpose (not the generic catalogue codes). */
const MEANINGFUL_REST_CODES = new Set(['VmNotFound', 'SnapshotNotFound']);

export function restCodeOf(err: unknown): string | undefined {
  if (!isMockcloudError(err)) {
    // node-vmadm's errors (vmadm-cli.ts) carry a plain `restCode` when they have one.
    const rc = typeof err === 'object' && err !== null ? (err as { restCode?: unknown }).restCode : undefined;
    return typeof rc === 'string' ? rc : undefined;
  }
  if (err.restCode !== err.code || MEANINGFUL_REST_CODES.has(err.restCode)) return err.restCode;
  return undefined;
}

/** `<what> error: <message>` with `{restCode}` details when known, like the real tasks. */
export function vmadmError(what: string, err: unknown): TaskError {
  const restCode = restCodeOf(err);
  return new TaskError(`${what} error: ${messageOf(err)}`, restCode ? { restCode } : undefined);
}

export function isVmNotFound(err: unknown): boolean {
  return restCodeOf(err) === 'VmNotFound' || / No such zone$/.test(messageOf(err));
}

/** The VM as it is now, as node-vmadm loads it (a DNI VM only with the params' include_dni). */
export async function loadVm(ctx: TaskContext, uuid: string, what = 'vmadm.load'): Promise<Vm> {
  try {
    return await nodeVmadm(ctx).load(uuid);
  } catch (err) {
    throw vmadmError(what, err);
  }
}

/** Run a store operation, reporting its failure the real way. */
export async function vmadmCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw vmadmError(what, err);
  }
}

/**
 * What `idempotent` machine_reboot and machine_kill ignore: node-vmadm's err.code ENOTRUNNING
 * (or ESRCH), which only its kill sets (vmadm-cli.ts). So an idempotent kill of a stopped VM
 * succeeds and an idempotent reboot of one fails, as on a real CN.
 */
export function isNotRunning(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ENOTRUNNING' || code === 'ESRCH';
}
