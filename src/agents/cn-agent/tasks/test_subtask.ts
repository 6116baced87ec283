/**
 * test_subtask: the real agent's test of subtasks. It asks for a `nop` subtask on the
 * `provisioner-v2` resource with `{random, sleep}` and finishes when the subtask answers. The
 * real agent never answers a subtask (its runner only records the request in the task's
 * history), so the task stays active until the task time limit ends it with "child task
 * process timed out after <n> seconds" (or the CN goes away), as on a real CN.
 */
import { defineTask } from '../types.js';

export const testSubtask = defineTask<{ sleep: unknown }>({
  name: 'test_subtask',
  queue: 'test_subtask',
  validate: (p) => ({ sleep: p.sleep }),
  async run(ctx, p) {
    const msg: Record<string, unknown> = { random: Math.floor((Math.random() * 1000) % 1000) };
    if (p.sleep !== undefined) msg.sleep = p.sleep;
    ctx.subtask?.('provisioner-v2', 'nop', msg);
    await new Promise<never>((_, reject) => {
      const onAbort = (): void => reject(ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('aborted'));
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
    return {};
  },
});
