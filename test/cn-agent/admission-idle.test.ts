/**
 * Task admission with tasks waiting out a phase's time (docs/timing.md): a waiting task gives
 * its place among the fleet's working tasks back, so more tasks than the bound are in flight;
 * coming back it waits for a place ahead of new tasks, so no more than the bound work at once.
 */
import { describe, expect, it } from 'vitest';
import { TaskAdmission } from '../../src/agents/cn-agent/admission.js';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('task admission and waiting tasks', () => {
  it('lets waiting tasks give their place back, and takes it back within the bound, ahead of new tasks', async () => {
    const a = new TaskAdmission({ maxInFlight: 2, maxPerCn: 4, maxQueued: 10 });
    const t1 = await a.acquire('cn1');
    const t2 = await a.acquire('cn2');
    t1.idle();
    t2.idle();
    expect(a.stats()).toMatchObject({ inFlight: 0, idle: 2 });
    const t3 = await a.acquire('cn1');
    const t4 = await a.acquire('cn2');
    expect(a.stats()).toMatchObject({ inFlight: 2, idle: 2 });
    let back1 = false;
    const b1 = t1.busy().then(() => (back1 = true));
    const t5p = a.acquire('cn3');
    let t5: (typeof t1) | undefined;
    void t5p.then((r) => (t5 = r));
    await turn();
    await turn();
    expect(back1).toBe(false); // two working: it waits
    t3();
    await b1;
    expect(back1).toBe(true);
    expect(t5).toBeUndefined(); // the task in flight came first
    expect(a.stats()).toMatchObject({ inFlight: 2, idle: 1 });
    t4();
    await t5p;
    expect(a.stats()).toMatchObject({ inFlight: 2, idle: 1 });
    t1();
    t2(); // released while idle
    t5!();
    expect(a.stats()).toMatchObject({ inFlight: 0, idle: 0 });
  });

  it('keeps the per-CN bound for waiting tasks', async () => {
    const a = new TaskAdmission({ maxInFlight: 8, maxPerCn: 1, maxQueued: 10 });
    const t1 = await a.acquire('cn1');
    t1.idle();
    let second = false;
    const p = a.acquire('cn1').then((r) => {
      second = true;
      return r;
    });
    await turn();
    await turn();
    expect(second).toBe(false);
    t1();
    (await p)();
    expect(second).toBe(true);
  });

  it('starts a few tasks per turn while heartbeats run late, and every task in the end; 32 a turn otherwise', async () => {
    let late = true;
    const a = new TaskAdmission({ maxInFlight: 100, maxPerCn: 100, maxQueued: 100 }, () => late);
    const startsPerTurn = async (count: number): Promise<number[]> => {
      const turns: number[] = [];
      let now = 0;
      const started = Array.from({ length: count }, (_, i) => a.acquire(`cn${i}`).then((release) => {
        turns[now] = (turns[now] ?? 0) + 1;
        return release;
      }));
      // Those started at once (in this turn) count apart from those the next turns start.
      await Promise.resolve();
      await Promise.resolve();
      now++;
      for (let i = 0; i < 50 && turns.reduce((x, y) => x + (y ?? 0), 0) < count; i++) {
        await turn();
        now++;
      }
      for (const release of await Promise.all(started)) release();
      return turns.map((n) => n ?? 0);
    };
    const whileLate = await startsPerTurn(20);
    expect(whileLate.reduce((x, y) => x + y, 0)).toBe(20);
    expect(Math.max(...whileLate)).toBeLessThanOrEqual(4);
    late = false;
    await turn();
    const onTime = await startsPerTurn(40);
    expect(Math.max(...onTime)).toBeGreaterThan(4);
  });
});
