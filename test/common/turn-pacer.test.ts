/**
 * The turn pacer: at most N callbacks per turn of the event loop, the rest in order in later
 * turns, so a burst of requests parsed in one poll phase cannot hold every timer back.
 */
import { describe, expect, it } from 'vitest';
import { TurnPacer } from '../../src/common/turn-pacer.js';

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('TurnPacer', () => {
  it('runs N callbacks in the turn they arrive, the rest a slice per turn, in order', async () => {
    const pacer = new TurnPacer(3);
    const ran: number[] = [];
    for (let i = 0; i < 8; i++) pacer.run(() => ran.push(i));
    expect(ran).toEqual([0, 1, 2]);
    expect(pacer.backlog).toBe(5);
    const perTurn: number[] = [];
    for (let t = 0; t < 5 && pacer.backlog > 0; t++) {
      const before = ran.length;
      await nextTurn();
      perTurn.push(ran.length - before);
    }
    expect(ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(3);
  });

  it('lets a timer fire between the slices of a long backlog', async () => {
    const pacer = new TurnPacer(10);
    let done = 0;
    let firedAt = -1;
    setTimeout(() => (firedAt = done), 0);
    for (let i = 0; i < 1000; i++) {
      pacer.run(() => {
        const t = Date.now();
        while (Date.now() - t < 1); // ~1 ms of work each
        done++;
      });
    }
    for (let t = 0; t < 200 && pacer.backlog > 0; t++) await nextTurn();
    expect(done).toBe(1000);
    // The timer fired long before the thousand were done (within a few slices).
    expect(firedAt).toBeGreaterThanOrEqual(0);
    expect(firedAt).toBeLessThan(200);
  });
});
