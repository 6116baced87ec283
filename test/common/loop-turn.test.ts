/**
 * The start of the loop turn that reads answers: what the CNAPI reporter counts a heartbeat's
 * end from when a busy turn reads its answer late.
 */
import { describe, expect, it } from 'vitest';
import { noteAnswerRead, turnReadStartedAt } from '../../src/common/loop-turn.js';

const busy = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the rest of a busy turn's callbacks
  }
};

describe('loop turn', () => {
  it('keeps the moment the turn read its first answer for every later answer of that turn, and forgets it after', async () => {
    expect(turnReadStartedAt()).toBeUndefined();
    const before = performance.now();
    noteAnswerRead(); // the turn's first answer
    const first = turnReadStartedAt()!;
    expect(first).toBeGreaterThanOrEqual(before);
    busy(30);
    noteAnswerRead(); // read 30 ms later in the same turn
    expect(turnReadStartedAt()).toBe(first);
    await new Promise((r) => setImmediate(r));
    expect(turnReadStartedAt()).toBeUndefined(); // the next turn starts afresh
    noteAnswerRead();
    expect(turnReadStartedAt()!).toBeGreaterThanOrEqual(first + 30);
    await new Promise((r) => setImmediate(r));
  });
});
