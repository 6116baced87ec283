/**
 * How a mock CN that is off comes up: its firmware (MockCn.powerOn). One object for the fleet.
 *
 * booter path (a booter is configured, the CN is not headnode-like, it has an admin MAC):
 *   DHCP through the fleet's relay (dhcp-client.ts) until a lease; the boot file from booter's
 *   HTTP, else the boot params from CNAPI (boot-file.ts), retried with backoff; the kernel's
 *   time; then the OS is up with what the boot gave it (power-cycle.ts cameUp: "Live Image",
 *   "Boot Parameters", the admin address, a new "Boot Time"), registers and heartbeats.
 * direct path (no booter, `--no-booter`, a headnode): the kernel's time and up, as mockcloud
 *   did before booter (an offline or flap event's CN just comes back up).
 *
 * Until it is up the CN is `down` and stays so, retrying, as long as booter is silent: the
 * page and `mockcloud boot-report` show it booting. A marker in its server dir (power-cycle.ts)
 * makes the next daemon start boot it again if the daemon stops meanwhile. Every wait is on the
 * shared scheduler.
 */
import type { JsonHttpClient } from '../common/http-client.js';
import type { Logger } from '../common/log.js';
import { adminNicOf } from '../mockcn/sysinfo-file.js';
import { cameUp, markOff, type AutobootPace } from '../mockcn/power-cycle.js';
import type { BootCause, MockCn, PowerOnOptions } from '../mockcn/types.js';
import { doublingDelay } from '../runtime/backoff.js';
import type { Scheduler } from '../runtime/scheduler.js';
import { fetchBootFile } from './boot-file.js';
import { acquireLease, BootAbandoned, wait } from './dhcp-client.js';
import { BootRecords, type BootPath, type BootRecord } from './records.js';
import type { DhcpRelay } from './relay.js';
import type { BootTimings } from './timings.js';

export interface BootServiceOptions {
  scheduler: Scheduler;
  http: JsonHttpClient;
  log: Logger;
  timings: BootTimings;
  /** The relay to booter; absent: every CN boots the direct path. */
  relay?: DhcpRelay;
  /** Booter's HTTP root for the boot files; absent: the boot params come from CNAPI. */
  booterHttpUrl?: string;
  cnapiUrl?: string;
  /**
   * How long the kernel takes, from the boot file to the agents starting: the seam the timing
   * model fills (issue 26). The daemon gives its --boot-seconds for a reboot or a power loss.
   */
  kernelMs(cause: BootCause, cn: MockCn): number;
  /** The time between starting two of the CN's autoboot VMs once it is up (a fresh draw each call); absent: all at once. */
  autobootGapMs?(cn: MockCn): number;
}

export class BootService {
  readonly records = new BootRecords();
  private readonly booting = new Map<string, { promise: Promise<void>; abort: AbortController }>();
  private stopped = false;

  constructor(private readonly o: BootServiceOptions) {}

  get timings(): BootTimings {
    return this.o.timings;
  }

  /** Whether CNs boot through a booter at all. */
  get booter(): { dhcp: { ip: string; port: number }; http?: string; circuitId?: string } | undefined {
    const relay = this.o.relay;
    if (!relay) return undefined;
    return { dhcp: relay.booter, ...(this.o.booterHttpUrl ? { http: this.o.booterHttpUrl } : {}), ...(relay.circuitId ? { circuitId: relay.circuitId } : {}) };
  }

  get relayCounts(): DhcpRelay['counts'] | undefined {
    return this.o.relay?.counts;
  }

  /** The path a CN boots by: a headnode boots from its own disk, never by PXE. */
  pathFor(cn: MockCn): BootPath {
    if (!this.o.relay) return 'direct';
    if (cn.sysinfo['Boot Parameters']?.headnode === 'true') return 'direct';
    return adminNicOf(cn.sysinfo).mac ? 'booter' : 'direct';
  }

  /** Boot `cn` (it is off); the boot already under way when there is one. */
  powerOn(cn: MockCn, cause: BootCause, opts: PowerOnOptions = {}): Promise<void> {
    const running = this.booting.get(cn.uuid);
    if (running) return running.promise;
    if (this.stopped) return Promise.reject(new BootAbandoned('the daemon is stopping'));
    const abort = new AbortController();
    const record = this.records.begin(cn.uuid, cause, this.pathFor(cn), opts.eventId);
    const kernelMs = opts.kernelMs ?? this.o.kernelMs(cause, cn);
    const promise = this.run(cn, cause, record, kernelMs, abort.signal)
      .catch((err: unknown) => {
        if (err instanceof BootAbandoned) record.phase = 'abandoned';
        throw err;
      })
      .finally(() => {
        if (this.booting.get(cn.uuid)?.promise === promise) this.booting.delete(cn.uuid);
      });
    this.booting.set(cn.uuid, { promise, abort });
    return promise;
  }

  /** CNAPI accepted the CN's first heartbeat since it came up: it is `running`. */
  heartbeat(cn: MockCn): void {
    const r = this.records.get(cn.uuid);
    if (r && r.upAt !== undefined && r.runningAt === undefined) {
      r.runningAt = Date.now();
      r.phase = 'running';
    }
  }

  /** The CN is gone: its boot stops. */
  forget(uuid: string): void {
    this.booting.get(uuid)?.abort.abort();
    this.records.forget(uuid);
  }

  /** Every boot under way stops (the CNs stay off; the next start boots them). */
  stop(): void {
    this.stopped = true;
    for (const b of this.booting.values()) b.abort.abort();
  }

  private async run(cn: MockCn, cause: BootCause, record: BootRecord, kernelMs: number, signal: AbortSignal): Promise<void> {
    const { log, scheduler } = this.o;
    if (record.path === 'direct' && (cause === 'offline' || cause === 'flap')) {
      // The direct path brings an event's CN straight back, as before booter.
      record.phase = 'registering';
      await cn.setPower('up');
      this.up(record);
      return;
    }
    // A reboot, a power loss, a creation and a CN found off at start are marked already.
    if (cause === 'offline' || cause === 'flap') await markOff(cn, cause);
    if (record.path === 'direct') {
      await wait(scheduler, kernelMs, signal);
      record.phase = 'registering';
      await cameUp(cn, log, undefined, this.autobootPace(cn, signal));
      this.up(record);
      return;
    }
    const mac = adminNicOf(cn.sysinfo).mac!.toLowerCase();
    const lease = await acquireLease({ relay: this.o.relay!, scheduler, timings: this.o.timings }, mac, signal, {
      sent: (retransmit) => {
        record.dhcpPackets++;
        if (retransmit) record.dhcpRetransmits++;
      },
      roundFailed: () => {
        record.dhcpFailedRounds++;
        record.lastError = 'no answer from booter';
      },
    });
    record.leasedAt = Date.now();
    record.ip = lease.ip;
    record.phase = 'boot-file';
    const file = await this.loadBootFile(cn, record, lease.file, signal);
    record.platform = file.platform;
    record.bootFileFrom = file.source;
    record.phase = 'kernel';
    await wait(scheduler, kernelMs, signal);
    record.phase = 'registering';
    await cameUp(cn, log, { platform: file.platform, kernelArgs: file.kernelArgs, mac, ip: lease.ip }, this.autobootPace(cn, signal));
    this.up(record);
    log.debug({ server: cn.uuid, ip: lease.ip, platform: file.platform, cause }, 'server booted from booter');
  }

  /** Autoboot VMs started at the timing's pace, as the zones service starts them one after another. */
  private autobootPace(cn: MockCn, signal: AbortSignal): AutobootPace {
    const gapOf = this.o.autobootGapMs;
    return { wait: (ms) => wait(this.o.scheduler, ms, signal), ...(gapOf ? { autobootGapMs: () => gapOf(cn) } : {}) };
  }

  private up(record: BootRecord): void {
    record.upAt = Date.now();
    // Standalone (no CNAPI): nothing heartbeats; up is as running as the CN gets.
    if (!this.o.cnapiUrl) {
      record.runningAt = record.upAt;
      record.phase = 'running';
    }
  }

  private async loadBootFile(cn: MockCn, record: BootRecord, file: string | undefined, signal: AbortSignal) {
    const t = this.o.timings;
    for (let attempt = 0; ; attempt++) {
      try {
        return await fetchBootFile(
          {
            http: this.o.http,
            timeoutMs: t.fetchTimeoutMs,
            ...(this.o.booterHttpUrl ? { booterHttpUrl: this.o.booterHttpUrl } : {}),
            ...(this.o.cnapiUrl ? { cnapiUrl: this.o.cnapiUrl } : {}),
          },
          cn.uuid,
          file,
        );
      } catch (err) {
        record.bootFileFailures++;
        record.lastError = (err as Error).message;
        await wait(this.o.scheduler, doublingDelay(t.retryMinMs, t.retryMaxMs, attempt), signal);
      }
    }
  }
}
