/**
 * The daemon process's heap policy: a full collection when old space has grown well past what
 * the last one left and has stopped growing (after a start or a bulk creation), never while it
 * is still growing and never for a small heap.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { HeapReclaimer, oldSpaceUsedBytes, RECLAIM_FLOOR_BYTES, shouldReclaim } from '../../src/daemon/heap-policy.js';

const MB = 1024 * 1024;

describe('heap policy', () => {
  it('collects once old space is large and quiet, not while it grows, not when small', () => {
    const fresh = { afterLastCollection: 0, previous: undefined };
    expect(shouldReclaim(fresh, 500 * MB)).toBe(false); // no earlier sample: growth unknown
    expect(shouldReclaim({ afterLastCollection: 0, previous: 300 * MB }, 500 * MB)).toBe(false); // still growing
    expect(shouldReclaim({ afterLastCollection: 0, previous: 500 * MB }, 510 * MB)).toBe(true); // grown, quiet
    expect(shouldReclaim({ afterLastCollection: 0, previous: 40 * MB }, 40 * MB)).toBe(RECLAIM_FLOOR_BYTES <= 40 * MB);
    expect(shouldReclaim({ afterLastCollection: 400 * MB, previous: 500 * MB }, 500 * MB)).toBe(false); // < 1.5x live
    expect(shouldReclaim({ afterLastCollection: 200 * MB, previous: 500 * MB }, 500 * MB)).toBe(true);
  });

  it('samples, collects when due, and judges the next growth from what the collection left', () => {
    const heap = [100 * MB, 500 * MB, 505 * MB, 150 * MB, 160 * MB, 170 * MB, 200 * MB, 240 * MB, 240 * MB];
    let i = 0;
    let collected = 0;
    const reclaimer = new HeapReclaimer({
      log: createQuietLogger(),
      oldSpaceUsed: () => heap[Math.min(i++, heap.length - 1)]!,
      collect: () => void collected++,
    });
    reclaimer.sample(); // 100: first sample
    reclaimer.sample(); // 500: growing
    reclaimer.sample(); // 505: quiet and large: collects, then reads 150
    expect(collected).toBe(1);
    reclaimer.sample(); // 160
    reclaimer.sample(); // 170
    reclaimer.sample(); // 200: < 1.5 x 150
    expect(collected).toBe(1);
    reclaimer.sample(); // 240: grown 1.5x but still growing (200 -> 240)
    expect(collected).toBe(1);
    reclaimer.sample(); // 240: quiet
    expect(collected).toBe(2);
    expect(reclaimer.collections).toBe(2);
  });

  it('holds a due collection while tasks are in flight, start or end, and makes it once none is', () => {
    // Old space large and level: due at every sample from the second on.
    const tasks = { inFlight: 0, startedOrEnded: 0 };
    let collected = 0;
    const reclaimer = new HeapReclaimer({
      log: createQuietLogger(),
      oldSpaceUsed: () => 500 * MB,
      collect: () => void collected++,
      tasks: () => ({ ...tasks }),
    });
    reclaimer.sample(); // first sample
    for (let round = 0; round < 3; round++) {
      tasks.startedOrEnded += 37; // a burst: tasks start and end between every two samples
      tasks.inFlight = 900;
      reclaimer.sample();
    }
    // Thousands in flight, waiting out their phases: none started or ended for a whole sample.
    reclaimer.sample();
    expect(collected).toBe(0);
    tasks.startedOrEnded += 900; // the last ones end
    tasks.inFlight = 0;
    reclaimer.sample();
    expect(collected).toBe(0);
    reclaimer.sample(); // none in flight, none started or ended since the last sample
    expect(collected).toBe(1);
  });

  it('calls a collection off when tasks start while it prepares', async () => {
    const tasks = { inFlight: 0, startedOrEnded: 0 };
    let collected = 0;
    let bursts = 0;
    const reclaimer = new HeapReclaimer({
      log: createQuietLogger(),
      oldSpaceUsed: () => 500 * MB,
      collect: () => void collected++,
      tasks: () => ({ ...tasks }),
      beforePause: async () => {
        // While the heartbeats sent ahead are answered, a burst arrives (the first time).
        if (bursts++ > 0) return;
        tasks.inFlight = 9000;
        tasks.startedOrEnded += 9000;
      },
    });
    await reclaimer.sample(); // first sample
    await reclaimer.sample(); // due: prepares, then finds the burst
    expect(collected).toBe(0);
    tasks.inFlight = 0;
    tasks.startedOrEnded += 9000;
    await reclaimer.sample(); // the burst ended since the last look
    await reclaimer.sample(); // quiet
    expect(collected).toBe(1);
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('awaits the daemon\'s preparation before a collection, with the pause it expects', async () => {
    const heap = [400 * MB, 400 * MB, 400 * MB, 200 * MB, 300 * MB, 300 * MB, 300 * MB, 150 * MB];
    let i = 0;
    const order: string[] = [];
    const expected: number[] = [];
    let clock = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const reclaimer = new HeapReclaimer({
      log: createQuietLogger(),
      oldSpaceUsed: () => heap[Math.min(i++, heap.length - 1)]!,
      collect: () => {
        order.push('collect');
        clock += 800; // the first collection of 400 MB takes 800 ms
      },
      beforePause: async (ms) => {
        expected.push(ms);
        await new Promise((r) => setImmediate(r));
        order.push('prepared');
      },
    });
    await reclaimer.sample(); // 400: first sample
    await reclaimer.sample(); // 400: large and quiet
    expect(order).toEqual(['prepared', 'collect']);
    // A first guess from old space, then the last pause scaled by old space (800 ms for 400 MB).
    expect(expected[0]).toBe(1200);
    await reclaimer.sample(); // 300 after 200: grown 1.5x, still growing
    await reclaimer.sample(); // 300: quiet
    expect(order).toEqual(['prepared', 'collect', 'prepared', 'collect']);
    expect(expected[1]).toBe(600);
  });

  it('really collects without --expose-gc on the command line', async () => {
    let ref: WeakRef<object> | undefined = new WeakRef({ payload: 'x'.repeat(1024) });
    // WeakRef targets stay alive until the current job ends.
    await new Promise((r) => setImmediate(r));
    const reclaimer = new HeapReclaimer({ log: createQuietLogger(), oldSpaceUsed: () => 1024 * MB });
    reclaimer.sample();
    reclaimer.sample(); // large and quiet: V8's full collection
    expect(reclaimer.collections).toBe(1);
    expect(ref.deref()).toBeUndefined();
    ref = undefined;
    expect(oldSpaceUsedBytes()).toBeGreaterThan(0);
  });
});
