/**
 * The gate behind the HTTP client's background lane and the dev VMAPI's job runner: bounded
 * turns in arrival order, a failure passes its turn on, and opening it lets everyone through.
 */
import { describe, expect, it } from 'vitest';
import { Gate } from '../../src/common/gate.js';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('Gate', () => {
  it('holds at most its limit, starts waiters in order, and a failure frees its turn', async () => {
    const gate = new Gate(2);
    const started: number[] = [];
    const work = Array.from({ length: 5 }, () => deferred());
    const runs = work.map((w, i) => gate.run(() => (started.push(i), w.promise)));
    await tick();
    expect(started).toEqual([0, 1]);
    expect(gate.waiting).toBe(3);
    work[1]!.reject(new Error('boom'));
    await expect(runs[1]).rejects.toThrow('boom');
    await tick();
    expect(started).toEqual([0, 1, 2]);
    work[0]!.resolve();
    work[2]!.resolve();
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    work[3]!.resolve();
    work[4]!.resolve();
    await Promise.all([runs[0], runs[2], runs[3], runs[4]]);
    expect(gate.waiting).toBe(0);
  });

  it('once opened, lets every waiter and every newcomer through at once', async () => {
    const gate = new Gate(1);
    const started: number[] = [];
    const block = deferred();
    void gate.run(() => (started.push(0), block.promise));
    const waiting = [1, 2].map((i) => gate.run(async () => void started.push(i)));
    await tick();
    expect(started).toEqual([0]);
    gate.open();
    await Promise.all(waiting);
    await gate.run(async () => void started.push(3));
    expect(started).toEqual([0, 1, 2, 3]);
    block.resolve();
  });
});
