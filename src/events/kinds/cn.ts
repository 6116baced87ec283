/**
 * Events on whole CNs: offline, flap, partition, reboot, slow-heartbeat.
 */
import { bootTimingOf, cameUp, losePower, startReboot } from '../../mockcn/power-cycle.js';
import type { MockCn } from '../../mockcn/types.js';
import type { Applied, EventContext } from './context.js';

/** Down for the event's duration (or until DELETE), then up: CNAPI sees `unknown`, then `running`. */
export async function offline(ctx: EventContext<'offline'>): Promise<Applied> {
  const held = await takeAll(ctx, ctx.servers);
  return { undo: (stopping) => giveAll(ctx, held, stopping) };
}

/** Down for downMs, up for the rest of each periodMs, until the event ends (up at the end). */
export async function flap(ctx: EventContext<'flap'>): Promise<Applied> {
  const { periodMs, downMs } = ctx.req.params;
  let held: MockCn[] = [];
  const cycle = async (): Promise<void> => {
    held = await takeAll(ctx, ctx.servers, false);
    if (ctx.signal.aborted) {
      // The event ended while the CNs went down: its undo saw none of them held.
      const up = held;
      held = [];
      await giveAll(ctx, up, false);
      return;
    }
    ctx.schedule(downMs, async () => {
      const up = held;
      held = [];
      await giveAll(ctx, up, false);
      ctx.schedule(periodMs - downMs, cycle);
    });
  };
  await cycle();
  return {
    undo: (stopping) => {
      const up = held;
      held = [];
      return giveAll(ctx, up, stopping);
    },
  };
}

/** Nothing the CN sends gets through (held until the end or its timeout); it keeps running. */
export async function partition(ctx: EventContext<'partition'>): Promise<Applied> {
  for (const cn of ctx.servers) ctx.network.block(cn.uuid);
  return {
    undo: () => {
      for (const cn of ctx.servers) ctx.network.unblock(cn.uuid);
    },
  };
}

/** The server_reboot task's path: halt, down for the boot time, boot, autoboot VMs start. */
export async function reboot(ctx: EventContext<'reboot'>): Promise<Applied> {
  const { scheduler, log } = ctx.host;
  for (const cn of ctx.servers) {
    const boot = bootTimingOf(cn, ctx.host.timing, ctx.host.bootSeconds);
    const started = startReboot(cn, {
      ...boot,
      ...(ctx.req.params.bootMs !== undefined ? { bootMs: ctx.req.params.bootMs } : {}),
      eventId: ctx.id,
      wait: (ms) => new Promise((resolve) => void scheduler.schedule(ms, resolve)),
      log,
    });
    if (!started) ctx.skipped.push({ uuid: cn.uuid, reason: 'already down or rebooting' });
  }
  return { finished: Promise.resolve() };
}

/**
 * The power goes at once on every target (no shutdown, no last word; its VMs die), comes back
 * after offMs (each CN at a random moment of spreadMs, drawn from the event's seed), and each
 * CN boots as a powered-on server does: by booter where it has firmware (src/boot). The event is
 * done once power is back everywhere; ending it earlier brings the power back to the rest now.
 */
export async function powerLoss(ctx: EventContext<'power-loss'>): Promise<Applied> {
  const { offMs = 0, spreadMs = 0, bootMs } = ctx.req.params;
  const { scheduler, log } = ctx.host;
  const random = ctx.eventRandom('power-loss');
  const lost: MockCn[] = [];
  await Promise.all(
    ctx.servers.map(async (cn) => {
      if (cn.power !== 'up' || ctx.power.isHeld(cn.uuid)) {
        ctx.skipped.push({ uuid: cn.uuid, reason: 'already down (rebooting or offline)' });
        return;
      }
      try {
        await losePower(cn, log);
        lost.push(cn);
      } catch (err) {
        log.warn({ err, server: cn.uuid, event: ctx.id }, 'cutting a server\'s power failed');
        ctx.skipped.push({ uuid: cn.uuid, reason: (err as Error).message });
      }
    }),
  );
  const restore = (cn: MockCn): void => {
    if (ctx.host.fleet.get(cn.uuid) !== cn) return;
    const kernelMs = bootMs ?? bootTimingOf(cn, ctx.host.timing, ctx.host.bootSeconds).bootMs;
    const boot =
      cn.powerOn?.('power-loss', { eventId: ctx.id, kernelMs }) ??
      new Promise<void>((resolve) => void scheduler.schedule(kernelMs, resolve)).then(() => cameUp(cn, log));
    void boot.catch((err: unknown) => log.warn({ err, server: cn.uuid, event: ctx.id }, 'booting a server after a power loss failed'));
  };
  const pending = new Map<MockCn, ReturnType<typeof scheduler.schedule>>();
  let allBack: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (allBack = resolve));
  const back = (cn: MockCn): void => {
    pending.delete(cn);
    restore(cn);
    if (pending.size === 0) allBack();
  };
  for (const cn of lost) pending.set(cn, scheduler.schedule(offMs + (spreadMs > 0 ? random.next() * spreadMs : 0), () => back(cn)));
  if (pending.size === 0) allBack();
  return {
    finished,
    undo: (stopping) => {
      // The daemon stopping leaves them off: their marker boots them at the next start.
      for (const [cn, job] of [...pending]) {
        scheduler.cancel(job);
        if (stopping) pending.delete(cn);
        else back(cn);
      }
      allBack();
    },
  };
}

/** Each heartbeat goes out lateMs after its interval (CNAPI's lifetime is 11 s). */
export async function slowHeartbeat(ctx: EventContext<'slow-heartbeat'>): Promise<Applied> {
  for (const cn of ctx.servers) ctx.conditions.set(cn, ctx.id, { heartbeatLateMs: ctx.req.params.lateMs });
  return {
    undo: () => {
      for (const cn of ctx.servers) ctx.conditions.clear(cn, ctx.id);
    },
  };
}

async function takeAll(ctx: EventContext, cns: readonly MockCn[], noteSkipped = true): Promise<MockCn[]> {
  const held: MockCn[] = [];
  await Promise.all(
    cns.map(async (cn) => {
      try {
        if (await ctx.power.take(cn)) held.push(cn);
        else if (noteSkipped) ctx.skipped.push({ uuid: cn.uuid, reason: 'already down (rebooting)' });
      } catch (err) {
        ctx.host.log.warn({ err, server: cn.uuid, event: ctx.id }, 'taking a server offline failed');
        if (noteSkipped) ctx.skipped.push({ uuid: cn.uuid, reason: (err as Error).message });
      }
    }),
  );
  return held;
}

async function giveAll(ctx: EventContext, held: readonly MockCn[], stopping: boolean): Promise<void> {
  if (stopping) return;
  const why = { cause: ctx.req.type === 'flap' ? ('flap' as const) : ('offline' as const), eventId: ctx.id };
  await Promise.all(held.map((cn) => ctx.power.give(cn, ctx.host.fleet.get(cn.uuid) === cn, why)));
}
