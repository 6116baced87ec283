/**
 * The daemon process's V8 heap policy. It belongs to the `mockcloud daemon` process, not to a
 * Daemon object (tests run many daemons in one process and keep V8's defaults).
 *
 * Three measured problems at 10,000 CNs (see tools/bench/analysis.md and docs/timing.md):
 *
 * - Allocation-site pretenuring. While thousands of CNs start, HTTP request objects wait in the
 *   shared agent's queue long enough for V8 to decide their allocation sites make long-lived
 *   objects, and from then on every heartbeat's request is allocated in old space: about 10 MB/s
 *   of garbage that only a full collection frees, so RSS swung by hundreds of MB.
 * - Old space grows up to 4x ahead of what is live under a burst of tasks (capHeapGrowth).
 * - A quiet heap is never compacted. A start or a bulk creation leaves hundreds of MB of garbage
 *   in old space; once steady heartbeats no longer grow old space, V8 sees no reason for a full
 *   collection and the process keeps that memory for good. So when old space has grown well past
 *   what the last full collection left and has stopped growing, we ask for one (a pause of a
 *   few hundred ms at 10,000 CNs, logged; heartbeats are seconds apart), but only while the
 *   daemon is not working through tasks: their bursts are V8's own collections' to keep up with.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../common/log.js';

const MB = 1024 * 1024;
/** Below this, garbage left in old space costs too little to pay for a pause. */
export const RECLAIM_FLOOR_BYTES = 64 * MB;
/** Old space at least this many times what the last full collection left. */
export const RECLAIM_GROWTH = 1.5;
/** "Stopped growing": less than this fraction more than one sample ago. */
export const QUIET_GROWTH = 0.05;
const SAMPLE_MS = 15_000;
const MIN_EXPECTED_PAUSE_MS = 50;
const MAX_EXPECTED_PAUSE_MS = 5000;

export interface ReclaimState {
  /** Old space left by the last collection we asked for (0: none yet). */
  afterLastCollection: number;
  /** Old space at the previous sample. */
  previous: number | undefined;
}

/** Whether to ask for a full collection now, given old space in use. */
export function shouldReclaim(state: ReclaimState, oldSpaceUsed: number): boolean {
  if (state.previous === undefined) return false;
  const grown = oldSpaceUsed >= Math.max(RECLAIM_FLOOR_BYTES, state.afterLastCollection * RECLAIM_GROWTH);
  const quiet = oldSpaceUsed <= state.previous * (1 + QUIET_GROWTH);
  return grown && quiet;
}

export function oldSpaceUsedBytes(): number {
  let used = 0;
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name === 'old_space' || space.space_name === 'large_object_space') used += space.space_used_size;
  }
  return used;
}

/** Turn pretenuring off. Call before the daemon starts its CNs. */
export function disablePretenuring(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}

/**
 * Old space may grow to this much more than its last full collection left before the next.
 * V8's own factor rises to 4x while collections are cheap next to the program's work, which is
 * the daemon's case: in a 10,000-CN burst of 20,000 creates old space reached 2 GB for 577 MB
 * live, and the RSS per task in flight was 160 KB. At 1.5x it was 86 KB and the idle fleet's
 * RSS a quarter less; V8's full collections in the burst, 30 instead of 4, paused 42 ms at most
 * (their marking runs beside the program), and the burst took no longer (docs/timing.md).
 * At 1.25x, once heartbeats had a thread of their own (a collection no longer holds them), it
 * was 61 KB (52 KB without the VMs the burst had made), and the burst again no slower.
 */
export const HEAP_GROWING_PERCENT = 25;

/** Cap old space's growth between full collections (HEAP_GROWING_PERCENT). Call at start. */
export function capHeapGrowth(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

/** Full collections in a row, at most, while each still shrinks the committed heap. */
const MAX_ROUNDS = 3;
const SHRINK_WORTH_ANOTHER_ROUND = 0.9;

/**
 * Node's full collection (without --expose-gc on the command line), repeated while it pays: one
 * collection compacts only the most fragmented pages: after a start with 50,000 VMs one left
 * 675 MB committed for 246 MB live, three in a row 470 MB (each a pause of about 250 ms there).
 */
function fullCollection(): () => void {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => {
    let committed = v8.getHeapStatistics().total_heap_size;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      gc();
      const now = v8.getHeapStatistics().total_heap_size;
      if (now > committed * SHRINK_WORTH_ANOTHER_ROUND) break;
      committed = now;
    }
  };
}

export interface HeapReclaimerOptions {
  log: Logger;
  /**
   * Called with the pause a collection is expected to take, and awaited, before it starts:
   * the daemon sends ahead the heartbeats that would fall due during it (a full collection at
   * 10,000 CNs stops the process for about a second; heartbeats are 5 s apart and CNAPI's
   * callers watch their gaps).
   */
  beforePause?: (expectedMs: number) => Promise<Record<string, unknown> | void>;
  /**
   * The daemon's tasks: in flight now, and started plus ended ever. A collection is asked for
   * only with none in flight and none started or ended since the previous sample. In a burst of
   * thousands of tasks, waiting out their phases, old space can hold level for 15 s while V8's
   * own collections (concurrent marking, pauses of 30-50 ms at 10,000 CNs) keep up; a forced one
   * then stopped the process 1.2-1.4 s (three rounds of 340-470 ms), holding up every task and
   * the heartbeats of the whole fleet. Absent: the daemon counts as idle.
   */
  tasks?: () => { inFlight: number; startedOrEnded: number };
  /** Injected in tests; defaults to V8's. */
  collect?: () => void;
  oldSpaceUsed?: () => number;
  sampleMs?: number;
}

/** Samples old space every 15 s (one process-wide timer) and collects by `shouldReclaim`. */
export class HeapReclaimer {
  private timer: NodeJS.Timeout | undefined;
  private readonly state: ReclaimState = { afterLastCollection: 0, previous: undefined };
  private readonly collect: () => void;
  private readonly oldSpaceUsed: () => number;
  /** Full collections asked for so far. */
  collections = 0;
  private collecting = false;
  private last: { pauseMs: number; beforeBytes: number } | undefined;
  private tasksAtLastSample: number | undefined;

  constructor(private readonly opts: HeapReclaimerOptions) {
    this.collect = opts.collect ?? fullCollection();
    this.oldSpaceUsed = opts.oldSpaceUsed ?? oldSpaceUsedBytes;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sample(), this.opts.sampleMs ?? SAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One sample (public for tests). Without `beforePause` a due collection runs at once. */
  async sample(): Promise<void> {
    if (this.collecting) return;
    const used = this.oldSpaceUsed();
    if (this.working() || !shouldReclaim(this.state, used)) {
      this.state.previous = used;
      return;
    }
    this.collecting = true;
    try {
      const expectedMs = this.expectedPauseMs(used);
      let prepared: Record<string, unknown> | void = undefined;
      if (this.opts.beforePause) {
        prepared = await this.opts.beforePause(expectedMs).catch((err: unknown) => {
          this.opts.log.warn({ err }, 'preparing for a heap collection failed');
        });
      }
      // Preparing takes a while (seconds, while CNAPI answers the heartbeats sent ahead): work
      // that began meanwhile (a burst of tasks) calls the collection off until it is done.
      if (this.opts.beforePause && this.working()) {
        this.state.previous = this.oldSpaceUsed();
        return;
      }
      // What is collected is what old space holds now.
      const before = this.opts.beforePause ? this.oldSpaceUsed() : used;
      const started = performance.now();
      // Synchronous: the daemon stops for the whole collection.
      this.collect();
      const pauseMs = performance.now() - started;
      const after = this.oldSpaceUsed();
      this.collections++;
      this.state.afterLastCollection = after;
      this.state.previous = after;
      this.last = { pauseMs, beforeBytes: before };
      this.opts.log.info(
        {
          oldSpaceBeforeMB: Math.round(before / MB),
          oldSpaceAfterMB: Math.round(after / MB),
          heapCommittedMB: Math.round(v8.getHeapStatistics().total_heap_size / MB),
          pauseMs: Math.round(pauseMs),
          expectedPauseMs: Math.round(expectedMs),
          ...(prepared ?? {}),
        },
        'full heap collection: old space had grown and gone quiet',
      );
    } finally {
      this.collecting = false;
    }
  }

  /** Tasks in flight, or started or ended since the last look (see `tasks`). */
  private working(): boolean {
    const tasks = this.opts.tasks?.();
    if (tasks === undefined) return false;
    const moved = tasks.startedOrEnded !== this.tasksAtLastSample;
    this.tasksAtLastSample = tasks.startedOrEnded;
    return tasks.inFlight > 0 || moved;
  }

  /** The last pause scaled by old space, or a first guess (measured: ~2.6 ms per MB at 10,000 CNs). */
  private expectedPauseMs(oldSpaceBytes: number): number {
    const guess = this.last && this.last.beforeBytes > 0 ? (this.last.pauseMs * oldSpaceBytes) / this.last.beforeBytes : (3 * oldSpaceBytes) / MB;
    return Math.min(MAX_EXPECTED_PAUSE_MS, Math.max(MIN_EXPECTED_PAUSE_MS, guess));
  }
}
