/**
 * The calling thread's id and its time on a CPU and waiting for one, from Linux's
 * /proc/thread-self/schedstat (elsewhere, or without schedstats: undefined). The wait is what
 * tells a thread that had too much to do from one the host kept off its cores.
 */
import { readFileSync, readlinkSync } from 'node:fs';

export interface ThreadSchedTimes {
  /** Nanoseconds on a CPU since the thread began. */
  runNs: number;
  /** Nanoseconds runnable but waiting for a CPU. */
  waitNs: number;
}

let unavailable = process.platform !== 'linux';

export function threadSchedTimes(): ThreadSchedTimes | undefined {
  if (unavailable) return undefined;
  try {
    const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    const runNs = Number(run);
    const waitNs = Number(wait);
    if (Number.isFinite(runNs) && Number.isFinite(waitNs)) return { runNs, waitNs };
  } catch {
    // Not mounted, or a kernel without it: not asked again.
  }
  unavailable = true;
  return undefined;
}

/** The calling thread's kernel id (Linux: /proc/thread-self is `<pid>/task/<tid>`); undefined elsewhere. */
export function threadId(): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isSafeInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}
