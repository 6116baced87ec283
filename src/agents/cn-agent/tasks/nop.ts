/**
 * nop: the test task CNAPI sends for `POST /servers/:uuid/nop`.
 */
import { defineTask, TaskError } from '../types.js';
import { invalid, optStringParam } from '../task-support/params.js';

/** nop: wait `sleep` seconds (CNAPI sends parseInt(sleep) || 0), then fail with `error` if set. */
export const nop = defineTask<{ sleepSeconds: number; error?: string }>({
  name: 'nop',
  queue: 'nop',
  validate: (p) => {
    let sleepSeconds = 0;
    const s = p.sleep;
    if (s !== undefined && s !== null && s !== '' && s !== false) {
      const n = typeof s === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(s) ? Number(s) : s;
      if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw invalid('params.sleep must be a number of seconds');
      sleepSeconds = n;
    }
    const error = optStringParam(p, 'error');
    return error ? { sleepSeconds, error } : { sleepSeconds };
  },
  async run(ctx, p) {
    if (p.sleepSeconds > 0) await ctx.sleep(p.sleepSeconds * 1000);
    if (p.error) throw new TaskError(p.error);
    return {};
  },
});
