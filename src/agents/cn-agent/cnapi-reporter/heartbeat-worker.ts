/** The heartbeat thread's entry (a worker_threads Worker): see heartbeat-loop.ts. */
import { parentPort, workerData } from 'node:worker_threads';
import { HeartbeatLoop } from './heartbeat-loop.js';
import type { HeartbeatThreadData, ToHeartbeatThread } from './heartbeat-protocol.js';

const port = parentPort;
if (port) {
  const loop = new HeartbeatLoop(workerData as HeartbeatThreadData, (msg) => port.postMessage(msg));
  port.on('message', (batch: ToHeartbeatThread[]) => {
    for (const msg of batch) loop.handle(msg);
  });
  port.once('close', () => loop.stop());
}
