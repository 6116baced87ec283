/**
 * The daemon's one scheduler: every periodic job of every mock CN rides on it, so a wake-up it
 * loses track of costs the whole process CPU and memory.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Scheduler } from '../../src/runtime/scheduler.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Scheduler', () => {
  let scheduler: Scheduler | undefined;
  afterEach(() => {
    scheduler?.stop();
    vi.restoreAllMocks();
  });

  it('runs jobs in due order and never runs a cancelled one', async () => {
    scheduler = new Scheduler();
    scheduler.start();
    const ran: string[] = [];
    scheduler.schedule(30, () => void ran.push('c'));
    scheduler.schedule(10, () => void ran.push('a'));
    const cancelled = scheduler.schedule(15, () => void ran.push('x'));
    scheduler.schedule(20, () => void ran.push('b'));
    scheduler.cancel(cancelled);
    for (let i = 0; i < 100 && ran.length < 3; i++) await sleep(10);
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(scheduler.size).toBe(0);
  });

  it('keeps one wake-up armed through bursts of periodic jobs (no runaway timers)', async () => {
    scheduler = new Scheduler();
    const s = scheduler;
    s.start();
    const timers = vi.spyOn(globalThis, 'setTimeout');
    // 200 jobs due at once (several slices), each coming back every 40 ms: heartbeats in small.
    let runs = 0;
    const periodic = (): void => {
      runs++;
      s.schedule(Scheduler.jitter(40, 0.5), periodic);
    };
    for (let i = 0; i < 200; i++) s.schedule(0, periodic);
    await sleep(600);
    const armed = timers.mock.calls.length;
    // About fifteen rounds of 200 runs. A wake-up arms at most one timer, and timers have 1 ms
    // resolution, so well under one per run; a lost timer starts a chain of wake-ups of its own
    // that re-arms whenever it fires a little early, and the chains add up.
    expect(runs).toBeGreaterThanOrEqual(1000);
    expect(armed).toBeLessThan(runs / 2);
    expect(s.size).toBe(200);
  });

  it('runs a hot job (a heartbeat) ahead of every other job due, however many fell due before it', async () => {
    scheduler = new Scheduler();
    const s = scheduler;
    s.start();
    const ran: string[] = [];
    // A burst of task waits due at once (each some work), then a heartbeat due after them.
    const work = (): void => {
      const until = performance.now() + 0.05;
      while (performance.now() < until);
      ran.push('wait');
    };
    for (let i = 0; i < 2000; i++) s.schedule(0, work);
    s.schedule(2, () => void ran.push('heartbeat'), { hot: true });
    for (let i = 0; i < 400 && ran.length < 2001; i++) await sleep(5);
    expect(ran).toHaveLength(2001);
    // Every slice runs the hot jobs due first: the heartbeat goes with the next slice, not
    // after the 2,000 waits due before it.
    expect(ran.indexOf('heartbeat')).toBeLessThan(100);
    expect(s.lag()).toEqual({ hotMs: 0, otherMs: 0 });
  });
});
