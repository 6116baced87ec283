/**
 * Resource events: zpool-fill (the pool's allocation climbs to a percentage over a time, in
 * steps on the shared scheduler; CNAPI's disk figures and unreserved disk follow through the
 * status reports) and memory-pressure (available memory capped while the event lasts).
 */
import { buildStatusSample } from '../../agents/cn-agent/cnapi-reporter/status-sample.js';
import { writePoolFill } from '../../mockcn/pool-fill.js';
import { sysinfoHardware } from '../../mockcn/sysinfo-file.js';
import type { Applied, EventContext } from './context.js';

const MiB = 1024 * 1024;
/** A ramp moves in at most this many steps, each at least MIN_STEP_MS apart. */
const RAMP_STEPS = 20;
const MIN_STEP_MS = 250;

export async function zpoolFill(ctx: EventContext<'zpool-fill'>): Promise<Applied> {
  const { percent, overMs } = ctx.req.params;
  const goal = percent / 100;
  const from = new Map(ctx.servers.map((cn) => [cn.uuid, poolFillOf(cn)]));
  const setAll = (progress: number): void => {
    for (const cn of ctx.servers) {
      const start = from.get(cn.uuid)!;
      ctx.conditions.setPoolFill(cn, start + (goal - start) * progress);
    }
  };
  /** The fill reached is on disk: it outlives the event and the daemon. */
  const persist = (): Promise<unknown> =>
    Promise.all(
      ctx.servers.map((cn) =>
        writePoolFill(cn.paths.dir, cn.conditions?.poolFill ?? goal).catch((err: unknown) =>
          ctx.host.log.warn({ err, server: cn.uuid }, 'cannot record the pool fill'),
        ),
      ),
    );
  if (overMs === 0) {
    setAll(1);
    await persist();
    return { finished: Promise.resolve() };
  }
  let complete = false;
  const stepMs = Math.max(MIN_STEP_MS, Math.ceil(overMs / RAMP_STEPS));
  const startedAt = Date.now();
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const step = (): void => {
    const progress = Math.min(1, (Date.now() - startedAt) / overMs);
    setAll(progress);
    if (progress >= 1) {
      complete = true;
      void persist().then(done);
    } else ctx.schedule(Math.min(stepMs, overMs - (Date.now() - startedAt)), step);
  };
  ctx.schedule(Math.min(stepMs, overMs), step);
  // DELETE during the ramp stops it where it is: the data written stays written.
  return {
    finished,
    undo: async () => {
      if (!complete) await persist();
    },
  };
}

/** How full the pool is now, as the status report computes it (0-1). */
function poolFillOf(cn: EventContext['servers'][number]): number {
  const d = buildStatusSample(cn).diskinfo;
  return d.pool_size_bytes > 0 ? d.pool_alloc_bytes / d.pool_size_bytes : 0;
}

export async function memoryPressure(ctx: EventContext<'memory-pressure'>): Promise<Applied> {
  const p = ctx.req.params;
  for (const cn of ctx.servers) {
    const available =
      'availableMiB' in p ? p.availableMiB * MiB : Math.floor(sysinfoHardware(cn.sysinfo).memoryBytes * (1 - p.percentUsed / 100));
    ctx.conditions.set(cn, ctx.id, { availableMemoryBytes: available });
  }
  return {
    undo: () => {
      for (const cn of ctx.servers) ctx.conditions.clear(cn, ctx.id);
    },
  };
}
