/** The heartbeat thread's entry (a worker_threads Worker): see heartbeat-loop.ts. */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { HeartbeatLoop } from './heartbeat-loop.js';
import { threadId, threadSchedTimes } from '../../../common/thread-schedstat.js';
import type { FromHeartbeatThread, HeartbeatThreadData, ToHeartbeatThread } from './heartbeat-protocol.js';

const LOOP_RESOLUTION_MS = 20;
const port = parentPort;
if (port) {
  // The daemon may set this thread's priority apart from the others' (daemon/thread-priority.ts).
  const started: FromHeartbeatThread = { op: 'started', tid: threadId() };
  port.postMessage(started);
  const loop = new HeartbeatLoop(workerData as HeartbeatThreadData, (msg) => port.postMessage(msg));
  port.on('message', (batch: ToHeartbeatThread[]) => {
    for (const msg of batch) loop.handle(msg);
  });
  // Whether a late heartbeat was this thread's own turn or the host's: what the daemon's
  // /status shows beside the main thread's loop delay.
  const delay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  delay.enable();
  const late = (ns: number): number => Math.max(0, Math.round(ns / 1e6 - LOOP_RESOLUTION_MS));
  let sched = threadSchedTimes();
  const report = setInterval(() => {
    if (delay.count === 0) return;
    const now = threadSchedTimes();
    const msg: FromHeartbeatThread = {
      op: 'loop',
      delayMaxMs: late(delay.max),
      delayP99Ms: late(delay.percentile(99)),
      ...(now && sched ? { cpuMs: (now.runNs - sched.runNs) / 1e6, runqueueWaitMs: (now.waitNs - sched.waitNs) / 1e6 } : {}),
    };
    port.postMessage(msg);
    delay.reset();
    sched = now;
  }, 1000);
  report.unref();
  port.once('close', () => {
    clearInterval(report);
    delay.disable();
    loop.stop();
  });
}
