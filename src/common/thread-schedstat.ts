/**
 * The calling thread's time on a CPU and waiting for one, from Linux's
 * /proc/thread-self/schedstat (elsewhere, or without schedstats: undefined). The wait is what
 * tells a thread that had too much to do from one the host kept off its cores.
 */
import { readFileSync } from 'node:fs';

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
