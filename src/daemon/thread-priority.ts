/**
 * The daemon process's thread priorities (Linux). It belongs to the `mockcloud daemon`
 * process, as the heap policy does: tests run many daemons in one process and leave it alone.
 *
 * Heartbeats have a deadline (CNAPI's view of a CN's life) and tasks do not: a real cn-agent
 * runs each task in a child process of its own, so its heartbeater never waits behind one.
 * Here tasks, the APIs and the agents share the main thread, and the heartbeats have a thread
 * of their own (cnapi-reporter/heartbeat-thread.ts). On a host short of CPU (a burst of
 * thousands of tasks on 2 cores) the kernel shares the cores among runnable threads, and the
 * heartbeat thread, which wakes every few ms, waited its turn: 7,561 of 990,650 heartbeats
 * left over 0.5 s late in a 10,000-CN burst with every thread level, 0 and 4 with the main
 * thread 10 levels down (docs/timing.md, runs 19-21). What it still waited for then were the
 * threads that work for the main thread: V8's collector threads and libuv's file I/O. So every
 * thread but the heartbeat thread goes down (`--main-thread-nice N`). A thread only loses CPU
 * to threads that want it; on an idle host nothing changes.
 *
 * Linux keeps a nice value per thread: setpriority(PRIO_PROCESS, tid) changes that thread's
 * alone, and threads made later take their maker's. Elsewhere (illumos applies it to the whole
 * process) nothing is changed.
 */
import { readdirSync } from 'node:fs';
import os from 'node:os';
import type { Logger } from '../common/log.js';

/**
 * Off unless asked. It costs tasks on a host shared with busy processes: a nop task's p99 went
 * from 5.9-6.7 ms to 9.6-10.3 ms at 10 levels in the quick bench (N=200, the harness and sink
 * beside the daemon), and the full bench's task targets have not been measured with it yet.
 * The 10,000-CN timing step runs with 10.
 */
export const DEFAULT_MAIN_THREAD_NICE = 0;
/** The lowest priority there is. */
export const MAX_NICE = 19;

/**
 * Lower every thread of this process but `keepTid` (the heartbeat thread) by `levels`, the
 * main thread first so that what it makes from then on starts there too.
 */
export function lowerPriorityBesides(keepTid: number | undefined, levels: number, log: Logger): void {
  if (process.platform !== 'linux' || levels <= 0 || keepTid === undefined) return;
  let tids: number[];
  try {
    tids = readdirSync('/proc/self/task').map(Number).filter((t) => t !== keepTid && t !== process.pid);
  } catch (err) {
    log.warn({ err }, 'could not list this process threads: priorities left as they are');
    return;
  }
  let lowered = 0;
  let to = 0;
  for (const tid of [process.pid, ...tids]) {
    try {
      to = Math.min(MAX_NICE, os.getPriority(tid) + levels);
      os.setPriority(tid, to);
      lowered++;
    } catch (err) {
      // A thread that ended since it was listed; a sandbox that refuses: that one stays.
      if (tid === process.pid) {
        log.warn({ err }, 'could not lower the main thread priority');
        return;
      }
    }
  }
  log.info({ threads: lowered, nice: to, heartbeatThread: keepTid }, 'threads other than the heartbeat thread run at a lower priority');
}
