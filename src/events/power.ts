/**
 * CNs taken offline by events (offline, flap), through the same power path a reboot takes
 * (MockCn.setPower, src/mockcn/power-cycle.ts): down, the CN's cn-agent socket refuses
 * connections and its heartbeats and status reports stop; up, it registers again and resumes.
 * An offline CN is also cut off the network (NetworkFaults.block), so its vm-agent and
 * net-agent reach nobody meanwhile. Holds are counted: a CN two events hold comes back when
 * both have ended. A CN already down for another reason (a reboot) is not taken.
 *
 * Back up, a CN boots as after any power loss (power-cycle.ts powerOnAfterLoss): silent for
 * its boot time, then a new Boot Time, its zones stopped and the autoboot ones started; on the
 * instant profile it is up at once, as before timing.
 */
import type { Logger } from '../common/log.js';
import { bootTimingOf, powerOnAfterLoss, powerOnBoots } from '../mockcn/power-cycle.js';
import type { MockCn } from '../mockcn/types.js';
import type { Scheduler } from '../runtime/scheduler.js';
import type { Timing } from '../timing/timing.js';
import type { NetworkFaults } from './network.js';

export class PowerHolds {
  private readonly holds = new Map<string, number>();

  constructor(
    private readonly network: NetworkFaults,
    private readonly log: Logger,
    private readonly boot: { scheduler: Scheduler; timing?: Timing | undefined; bootSeconds?: number | undefined } | undefined = undefined,
  ) {}

  /** Take the CN down (or count one more hold on it); false when it is down for another reason. */
  async take(cn: MockCn): Promise<boolean> {
    const n = this.holds.get(cn.uuid);
    if (n !== undefined) {
      this.holds.set(cn.uuid, n + 1);
      return true;
    }
    if (cn.power !== 'up') return false;
    this.holds.set(cn.uuid, 1);
    this.network.block(cn.uuid);
    // A power loss, not a shutdown: no last status report.
    await cn.setPower('down', { graceful: false });
    return true;
  }

  /**
   * Drop one hold; the last brings the CN up (if it is still hosted): it boots, through its
   * firmware where it has one (booter: in the background, it may take a while), else at once.
   */
  async give(cn: MockCn, stillHosted: boolean, why: { cause: 'offline' | 'flap'; eventId: string }): Promise<void> {
    const n = this.holds.get(cn.uuid);
    if (n === undefined) return;
    if (n > 1) {
      this.holds.set(cn.uuid, n - 1);
      return;
    }
    this.holds.delete(cn.uuid);
    try {
      if (stillHosted && cn.power === 'down') {
        const b = this.boot;
        const firmware = cn.powerOn?.(why.cause, {
          eventId: why.eventId,
          ...(b && powerOnBoots(cn, b.timing) ? { kernelMs: bootTimingOf(cn, b.timing, b.bootSeconds).bootMs } : {}),
        });
        if (firmware) void firmware.catch((err: unknown) => this.log.warn({ err, server: cn.uuid }, 'booting a server back online failed'));
        else if (b && powerOnBoots(cn, b.timing)) {
          // Reachable while it boots: what keeps it silent is that it is down.
          this.network.unblock(cn.uuid);
          await powerOnAfterLoss(cn, {
            ...bootTimingOf(cn, b.timing, b.bootSeconds),
            wait: (ms) => new Promise((resolve) => void b.scheduler.schedule(ms, resolve)),
            log: this.log,
            eventId: why.eventId,
          });
        } else await cn.setPower('up');
      }
    } catch (err) {
      this.log.warn({ err, server: cn.uuid }, 'bringing a server back online failed');
    } finally {
      this.network.unblock(cn.uuid);
    }
  }

  isHeld(uuid: string): boolean {
    return this.holds.has(uuid);
  }

  /** The daemon stops: forget the holds (the CNs load up at the next start). */
  forgetAll(): void {
    this.holds.clear();
  }
}
