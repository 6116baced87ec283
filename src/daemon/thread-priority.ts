/**
 * The daemon process's thread priorities (Linux). It belongs to the `mockcloud daemon`
 * process, as the heap policy does: tests run many daemons in one process and leave it alone.
 *
 * Heartbeats have a deadline (CNAPI's view of a CN's life) and tasks do not: a real cn-agent
 * runs each task in a child process of its own, so its heartbeater never waits behind one.
 * Here tasks, the APIs and the agents share the main thread, and the heartbeats have a thread
 * of their own (cnapi-reporter/heartbeat-thread.ts). On a host short of CPU (a burst of
 * thousands of tasks on 2 cores) the kernel shares the cores among runnable threads, and a
 * heartbeat thread that wakes every few ms waited its turn behind the main thread: 7,561 of
 * 990,650 heartbeats left over 0.5 s late in a 10,000-CN burst, none with the main thread 10
 * levels down (docs/timing.md, runs 19 and 20). The main thread only loses CPU to threads that
 * want it; on an idle host nothing changes.
 *
 * Linux keeps a nice value per thread, and setpriority(PRIO_PROCESS, 0) changes the calling
 * thread's alone; threads inherit it when they are made. So this runs on the main thread once
 * the heartbeat thread exists, and the threads made before it (V8's and libuv's helpers,
 * whose work is collections and file I/O for everything) keep theirs. Elsewhere (illumos
 * applies it to the whole process) nothing is changed.
 */
import os from 'node:os';
import type { Logger } from '../common/log.js';

export const DEFAULT_MAIN_THREAD_NICE = 10;
/** The lowest priority there is. */
export const MAX_NICE = 19;

/** Lower the calling (main) thread's priority by `levels`; what it did, for the log. */
export function lowerMainThreadPriority(levels: number, log: Logger): void {
  if (process.platform !== 'linux' || levels <= 0) return;
  try {
    const from = os.getPriority(0);
    const to = Math.min(MAX_NICE, from + levels);
    os.setPriority(0, to);
    log.info({ from, to }, 'main thread runs at a lower priority than the heartbeat thread');
  } catch (err) {
    // A sandbox that refuses it: heartbeats share the CPU as before.
    log.warn({ err }, 'could not lower the main thread priority');
  }
}
