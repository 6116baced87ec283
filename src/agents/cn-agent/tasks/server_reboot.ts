import { bootTimingOf, startReboot } from '../../../mockcn/power-cycle.js';
import { defineTask, type TaskContext } from '../types.js';

/**
 * server_reboot: as on a SmartOS CN, the task starts the reboot and finishes at once (the
 * real one spawns `shutdown -i 6` detached and answers `{}`). The reboot then runs as a real
 * one does (src/mockcn/power-cycle.ts): running VMs halt, the CN goes down (no heartbeats,
 * no status, cn-agent refuses connections) for the boot time, then comes up with a new
 * "Boot Time", registers again and starts its autoboot VMs. A second request while the CN
 * shuts down changes nothing, as a second `shutdown` would not. The boot takes `--boot-seconds`
 * when given, else the timing profile's `cn.boot`.
 */
export const serverReboot = defineTask<Record<string, never>>({
  name: 'server_reboot',
  queue: 'server_tasks',
  validate: () => ({}),
  async run(ctx) {
    const boot = bootTimingOf(ctx.cn, ctx.env.timing, ctx.env.bootSeconds);
    const started = startReboot(ctx.cn, { ...boot, wait: waiter(ctx), log: ctx.env.log });
    ctx.log.info(started ? 'spawned the rebooter' : 'a reboot is already under way');
    return {};
  },
});

/**
 * Waits on the daemon's shared scheduler. A cn-agent server built without one (a bare
 * server in tests) boots without waiting: no timer of its own.
 */
function waiter(ctx: TaskContext): (ms: number) => Promise<void> {
  const scheduler = ctx.env.scheduler;
  if (!scheduler) return () => new Promise((resolve) => setImmediate(resolve));
  return (ms) => new Promise((resolve) => void scheduler.schedule(ms, resolve));
}
