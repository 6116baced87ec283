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
});
