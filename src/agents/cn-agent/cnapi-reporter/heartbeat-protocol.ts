/**
 * What the reporter (main thread) and the heartbeat thread tell each other. The thread owns
 * every threaded CN's heartbeat loop (POST, its answer, the interval, the next POST); the
 * main thread owns everything else a heartbeat depends on and tells the thread when it changes.
 * Messages go in batches, one postMessage per turn of the sender's event loop.
 */

/** Main thread → heartbeat thread. */
export type ToHeartbeatThread =
  /** Start a CN's heartbeats: the first `delayMs` from now (held: not before a release). */
  | { op: 'begin'; uuid: string; userAgent: string; delayMs: number; lateMs: number; held: boolean }
  /** Stop them; the thread answers `ended` once the CN's heartbeat on its way is answered. */
  | { op: 'end'; uuid: string }
  /** A registration or its agents POST is queued or under way: due heartbeats wait for its end. */
  | { op: 'hold'; uuid: string }
  /** They go now; the User-Agent may have changed with the CN's agents. */
  | { op: 'release'; uuid: string; userAgent: string }
  /** A slow-heartbeat event's lateness changed: the next heartbeat moves by the difference. */
  | { op: 'late'; uuid: string; lateMs: number }
  /** While fault events hold or fail outbound requests, every heartbeat is sent by the main thread. */
  | { op: 'gate'; on: boolean }
  /** The main thread answers a `send`. */
  | { op: 'sent'; uuid: string; seq: number }
  /** Send now every heartbeat due within `withinMs` (ahead of a pause of the main thread). */
  | { op: 'ahead'; id: number; withinMs: number };

/** One heartbeat the thread sent, as the main thread counts it. */
export interface HeartbeatResult {
  uuid: string;
  /** Epoch ms of the answer (or the failure). */
  at: number;
  /** The answer's status code; 0: none (a timeout, a reset). */
  statusCode: number;
  /** CNAPI's error code or the transport error's message, when not 2xx. */
  code?: string;
  message?: string;
  /** How long after it was due it went; -1 for the first since begin. */
  lateMs: number;
  /** From the POST to its end. */
  ms: number;
}

/** Heartbeat thread → main thread. */
export type FromHeartbeatThread =
  | { op: 'results'; results: HeartbeatResult[] }
  | { op: 'ended'; uuid: string }
  /** Gated: the main thread sends this one (its fault seam applies) and answers `sent`. */
  | { op: 'send'; uuid: string; seq: number; lateMs: number }
  | { op: 'aheadSent'; id: number; sent: number }
  | { op: 'aheadAnswered'; id: number }
  /** Once, as it starts: its thread id, where the OS has one to tell (Linux). */
  | { op: 'started'; tid: number | undefined }
  /** Once a second, about that second: see HeartbeatThreadLoop. */
  | ({ op: 'loop' } & HeartbeatThreadLoop);

/** How the thread's own event loop ran over a second. */
export interface HeartbeatThreadLoop {
  /** How late its turns were (beyond the 20 ms sampling): its worst and its 99th percentile. */
  delayMaxMs: number;
  delayP99Ms: number;
  /** Its time on a CPU, and runnable but waiting for one (Linux only). */
  cpuMs?: number;
  runqueueWaitMs?: number;
}

/** What the thread is started with. */
export interface HeartbeatThreadData {
  cnapiUrl: string;
  intervalMs: number;
  requestTimeoutMs: number;
}
