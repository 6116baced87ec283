/**
 * sleep: the real agent's test task (queue test_sleep): wait `timeout` milliseconds (5000 when
 * it is missing or falsy), then finish with nothing. The delay is what Node's setTimeout makes
 * of the value, as in the real task: a number or numeric string as is, anything else, or a
 * value outside 1 ms .. 2^31-1 ms, is 1 ms. The task time limit still applies.
 */
import { defineTask } from '../types.js';

const TIMEOUT_MAX = 2 ** 31 - 1;

/** `setTimeout(fn, timeout || 5000)` in Node: the delay it really waits. */
export function sleepDelay(timeout: unknown): number {
  const after = Number(timeout || 5000);
  return after >= 1 && after <= TIMEOUT_MAX ? after : 1;
}

export const sleep = defineTask<{ ms: number }>({
  name: 'sleep',
  queue: 'test_sleep',
  validate: (p) => ({ ms: sleepDelay(p.timeout) }),
  async run(ctx, p) {
    await ctx.sleep(p.ms);
    return {};
  },
});
