/**
 * A mix's exact counts: largest remainder over the whole run, whatever the batches the CLI and
 * the daemon's --servers send it in.
 */
import { describe, expect, it } from 'vitest';
import { apportion, batchMixes, parseMix } from '../../src/daemon/fleet-mix.js';

describe('fleet mixes', () => {
  it('apportions exactly, ties to the profile named first', () => {
    const mix = parseMix('small:70,large:25,storage:5');
    expect(Object.fromEntries(apportion(100, mix))).toEqual({ small: 70, large: 25, storage: 5 });
    expect(Object.fromEntries(apportion(10, mix))).toEqual({ small: 7, large: 3, storage: 0 });
    expect(Object.fromEntries(apportion(1, mix))).toEqual({ small: 1, large: 0, storage: 0 });
    expect(Object.fromEntries(apportion(7, parseMix({ a: 1, b: 1, c: 1 })))).toEqual({ a: 3, b: 2, c: 2 });
    for (let n = 1; n <= 200; n++) {
      const counts = [...apportion(n, mix).values()];
      expect(counts.reduce((x, y) => x + y, 0)).toBe(n);
    }
  });

  it('splits a run into batches whose counts add up to the run\'s', () => {
    const mix = parseMix('small:70,large:25,storage:5');
    for (const [total, size] of [[1000, 32], [97, 32], [5, 2], [60, 7]] as const) {
      const sizes: number[] = [];
      for (let left = total; left > 0; left -= size) sizes.push(Math.min(size, left));
      const batches = batchMixes(total, mix, sizes);
      batches.forEach((b, i) => expect(b.reduce((x, [, c]) => x + c, 0)).toBe(sizes[i]));
      const sum: Record<string, number> = {};
      for (const b of batches) for (const [name, c] of b) sum[name] = (sum[name] ?? 0) + c;
      expect(sum).toEqual(Object.fromEntries([...apportion(total, mix)].filter(([, c]) => c > 0)));
    }
  });

  it('refuses what is not a mix', () => {
    expect(() => parseMix('small')).toThrow(/"small" is not NAME:WEIGHT/);
    expect(() => parseMix('small:-1')).toThrow(/weight of small must be a number ≥ 0/);
    expect(() => parseMix('small:0,large:0')).toThrow(/every weight is 0/);
    expect(() => parseMix('small:1,small:2')).toThrow(/named twice/);
    expect(() => parseMix('')).toThrow(/names no profile/);
    expect(() => parseMix(['small'])).toThrow(/must be a string/);
  });
});
