/**
 * A mock CN's reboot, as a SmartOS CN's (sdc-cn-agent's server_reboot task spawns
 * `shutdown -y -g 0 -i 6` and answers at once):
 *
 *   shutdown  its running VMs halt (shutting_down, then stopped; autoboot kept, unlike
 *             `vmadm stop`), then the CN goes down gracefully (its last status report shows
 *             the VMs stopped; then no heartbeat, no status, cn-agent not listening);
 *   down      for the boot time;
 *   boot      "Boot Time" in sysinfo.json becomes now, the CN comes up (cn-agent listens
 *             again, the CN registers its new sysinfo with CNAPI, then heartbeats and status
 *             resume) and the VMs whose autoboot is set start, in the order `zoneadm list`
 *             gives (the order they were created), each a gap after the one before (the
 *             timing profile's `cn.autoboot_gap`), booting side by side as the zones service
 *             and vmadmd start them.
 *
 * A CN back from a power loss (an offline or flap event ending, on a timing profile other
 * than instant) boots the same way (`powerOnAfterLoss`): silent for its boot time, a new
 * Boot Time, the zones that ran when the power went stopped, the autoboot ones started.
 *
 * Nothing here ticks: the caller's `wait` is the daemon's shared scheduler. A marker file in
 * the server dir spans shutdown and boot, so a daemon stopped (or killed) meanwhile finishes
 * the boot when it loads the CN again (`finishInterruptedReboot`): an acknowledged reboot
 * always ends with the CN booted.
 *
 * Where the CN has firmware (`MockCn.powerOn`: DHCP to booter, boot params, the kernel;
 * src/boot), the boot after the shutdown is its; it ends with `cameUp` here.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { INSTANT_BOOT_SECONDS } from '../timing/builtin.js';
import type { Timing } from '../timing/timing.js';
import type { Vm } from '../vmadm/types.js';
import { readSysinfoFile, RUNTIME_SYSINFO_KEYS } from './sysinfo-file.js';
import type { BootedOs, MockCn } from './types.js';

export interface PowerCycleLog {
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
}

export interface RebootOptions {
  /** How long the CN stays down between its shutdown and its boot. */
  bootMs: number;
  /** Resolves `ms` from now (the daemon's shared scheduler). */
  wait(ms: number): Promise<void>;
  log: PowerCycleLog;
  /** The time between starting two autoboot VMs (a fresh draw each call); none: all at once. */
  autobootGapMs?: () => number;
  /** The event that caused it, if one did (the boot report groups boots by it). */
  eventId?: string;
}

/**
 * How long `cn` takes to boot and the pace of its autoboot VMs: `--boot-seconds` when given,
 * else the timing profile's `cn.boot` for this CN (instant: 10 s, as before timing).
 */
export function bootTimingOf(
  cn: Pick<MockCn, 'uuid'>,
  timing: Timing | undefined,
  bootSeconds: number | undefined,
): { bootMs: number; autobootGapMs: () => number } {
  const where = { server: cn.uuid };
  const bootMs =
    bootSeconds !== undefined ? bootSeconds * 1000 : timing ? timing.ms('cn.boot', where) : INSTANT_BOOT_SECONDS * 1000;
  return { bootMs, autobootGapMs: () => autobootGapMs(cn, timing) };
}

/** One draw of the time between starting two of `cn`'s autoboot VMs (the timing's `cn.autoboot_gap`). */
export function autobootGapMs(cn: Pick<MockCn, 'uuid'>, timing: Timing | undefined): number {
  return timing?.ms('cn.autoboot_gap', { server: cn.uuid }) ?? 0;
}

/**
 * Whether a CN whose power comes back boots first (silent for its boot time): yes, but on the
 * instant profile, where power events bring a CN back at once as before timing.
 */
export function powerOnBoots(cn: Pick<MockCn, 'uuid'>, timing: Timing | undefined): boolean {
  return timing !== undefined && !timing.profileAt({ server: cn.uuid }).instant;
}

/** `<server dir>/rebooting.json`: present from the shutdown until the boot is done. */
export const REBOOT_MARKER_FILE = 'rebooting.json';

const underway = new WeakSet<MockCn>();

/**
 * Reboot `cn` in the background, starting after the caller's current turn (the reboot task's
 * answer goes out first, as the real task answers before the shutdown begins). False, and
 * nothing done, when the CN is already rebooting or down.
 */
export function startReboot(cn: MockCn, opts: RebootOptions): boolean {
  if (underway.has(cn) || cn.power === 'down') return false;
  underway.add(cn);
  void reboot(cn, opts)
    .catch((err: unknown) => opts.log.warn({ err, server: cn.uuid }, 'server reboot failed'))
    .finally(() => underway.delete(cn));
  return true;
}

async function reboot(cn: MockCn, opts: RebootOptions): Promise<void> {
  await opts.wait(0);
  opts.log.info({ server: cn.uuid, bootMs: opts.bootMs }, 'server rebooting');
  await writeFileDurable(markerOf(cn), `${JSON.stringify({ since: new Date().toISOString() })}\n`);
  await haltRunningVms(cn, opts.log);
  await cn.setPower('down', { graceful: true });
  const firmware = cn.powerOn?.('reboot', { kernelMs: opts.bootMs, ...(opts.eventId ? { eventId: opts.eventId } : {}) });
  if (firmware) {
    await firmware;
    return;
  }
  try {
    await opts.wait(opts.bootMs);
    await boot(cn, opts.log);
  } finally {
    // Whatever went wrong in the boot, the CN does not stay down.
    await cn.setPower('up');
  }
  await startAutobootVms(cn, opts);
  await fsp.rm(markerOf(cn), { force: true });
  opts.log.info({ server: cn.uuid, bootTime: cn.sysinfo['Boot Time'] }, 'server rebooted');
}

/**
 * A CN whose power comes back (it is down, held by an event): silent for its boot time, then
 * booted with a new Boot Time; its zones died with the power, so those it ran are stopped, and
 * the autoboot ones start as at any boot. Resolves once it is up and its autoboot VMs started.
 */
export async function powerOnAfterLoss(cn: MockCn, opts: RebootOptions): Promise<void> {
  if (underway.has(cn) || cn.power !== 'down') return;
  underway.add(cn);
  try {
    opts.log.info({ server: cn.uuid, bootMs: opts.bootMs }, 'server powered on, booting');
    await opts.wait(opts.bootMs);
    await boot(cn, opts.log);
    const died = cn.vms.list({ include_dni: true }).filter((vm) => vm.state === 'running');
    const store = cn.vms;
    if (store.crash) {
      await Promise.all(died.map((vm) => store.crash!(vm.uuid, 0).catch((err: unknown) => failed(opts.log, cn, vm, 'power loss', err))));
    }
  } finally {
    await cn.setPower('up');
    underway.delete(cn);
  }
  await startAutobootVms(cn, opts);
}

/**
 * A CN loaded with the marker of a reboot the daemon did not see through: boot it now (new
 * Boot Time, autoboot VMs started). Resolves false when there was nothing to finish.
 */
export async function finishInterruptedReboot(cn: MockCn, log: PowerCycleLog): Promise<boolean> {
  try {
    await fsp.access(markerOf(cn));
  } catch {
    return false;
  }
  log.info({ server: cn.uuid }, 'finishing a reboot interrupted by a daemon restart');
  await boot(cn, log);
  await startAutobootVms(cn, { log });
  await fsp.rm(markerOf(cn), { force: true });
  return true;
}

function markerOf(cn: Pick<MockCn, 'paths'>): string {
  return path.join(cn.paths.dir, REBOOT_MARKER_FILE);
}

/** The CN is off or booting: the marker that makes the next daemon start boot it. */
export async function markOff(cn: Pick<MockCn, 'paths'>, cause: string): Promise<void> {
  await writeFileDurable(markerOf(cn), `${JSON.stringify({ since: new Date().toISOString(), cause })}\n`);
}

/** Whether the CN was off or booting when its daemon stopped (the marker is there). */
export async function isMarkedOff(cn: Pick<MockCn, 'paths'>): Promise<boolean> {
  try {
    await fsp.access(markerOf(cn));
    return true;
  } catch {
    return false;
  }
}

/**
 * The OS came up from a boot: a new "Boot Time" (and what the boot gave it: platform, kernel
 * args, admin address), the CN up (it registers anew), its autoboot VMs started, the marker
 * gone.
 */
export async function cameUp(cn: MockCn, log: PowerCycleLog, booted?: BootedOs, pace?: AutobootPace): Promise<void> {
  await boot(cn, log, booted);
  await cn.setPower('up');
  await startAutobootVms(cn, { log, ...pace });
  await fsp.rm(markerOf(cn), { force: true });
}

/** A power loss: everything stops at once, the zones with it (no shutdown, no last status report). */
export async function losePower(cn: MockCn, log: PowerCycleLog): Promise<void> {
  await markOff(cn, 'power-loss');
  await cn.setPower('down', { graceful: false });
  const running = cn.vms.list({ include_dni: true }).filter((vm) => vm.state === 'running');
  await Promise.all(running.map((vm) => cn.vms.halt(vm.uuid).catch((err: unknown) => failed(log, cn, vm, 'stop', err))));
}

/** The zones go down with the host; each VM on its own, as the zones service halts them. */
async function haltRunningVms(cn: MockCn, log: PowerCycleLog): Promise<void> {
  const running = cn.vms.list({ include_dni: true }).filter((vm) => vm.state === 'running');
  await Promise.all(running.map((vm) => cn.vms.halt(vm.uuid).catch((err: unknown) => failed(log, cn, vm, 'halt', err))));
}

/** The pace of a CN's autoboot VMs as it comes up: the wait, and the gap between two starts. */
export type AutobootPace = Pick<RebootOptions, 'wait' | 'autobootGapMs'>;

/** The autoboot VMs in creation order, each started a gap after the one before, booting side by side. */
async function startAutobootVms(cn: MockCn, opts: { log: PowerCycleLog } & Partial<AutobootPace>): Promise<void> {
  const due = cn.vms
    .list({ include_dni: true })
    .filter((vm) => vm.autoboot === true && vm.state === 'stopped')
    .sort((a, b) => String(a.create_timestamp ?? '').localeCompare(String(b.create_timestamp ?? '')));
  const starts: Promise<unknown>[] = [];
  for (const [i, vm] of due.entries()) {
    const gap = i > 0 && opts.autobootGapMs && opts.wait ? opts.autobootGapMs() : 0;
    if (gap > 0) await opts.wait!(gap);
    starts.push(cn.vms.start(vm.uuid).catch((err: unknown) => failed(opts.log, cn, vm, 'autoboot', err)));
  }
  await Promise.all(starts);
}

function failed(log: PowerCycleLog, cn: MockCn, vm: Vm, what: string, err: unknown): void {
  log.warn({ err, server: cn.uuid, vm: vm.uuid }, `server reboot: VM ${what} failed`);
}

/**
 * The kernel came up: sysinfo's "Boot Time" (epoch seconds, a string as sysinfo prints it)
 * becomes now, never earlier than or equal to the previous one, so every reboot shows; and
 * what the boot gave the OS (applyBootedOs).
 */
async function boot(cn: MockCn, log: PowerCycleLog, booted?: BootedOs): Promise<void> {
  const sysinfo: Record<string, unknown> = { ...(await readSysinfoFile(cn.paths.sysinfo, cn.uuid)) };
  const previous = Number.parseInt(String(sysinfo['Boot Time'] ?? ''), 10);
  const now = Math.floor(Date.now() / 1000);
  sysinfo['Boot Time'] = String(Number.isFinite(previous) && previous >= now ? previous + 1 : now);
  if (booted) applyBootedOs(sysinfo, booted);
  for (const key of RUNTIME_SYSINFO_KEYS) delete sysinfo[key];
  await writeFileDurable(cn.paths.sysinfo, `${JSON.stringify(sysinfo, null, 2)}\n`);
  try {
    await cn.reloadSysinfo();
  } catch (err) {
    log.warn({ err, server: cn.uuid }, 'new boot time written but not reloaded');
  }
}

/**
 * What a PXE boot decides of the OS, in sysinfo as SmartOS prints it after such a boot: "Live
 * Image" is the platform booted, "Boot Parameters" the kernel's `-B` args, the admin NIC's
 * address the lease's, its NIC tags the `<tag>_nic=<its MAC>` args (booter's), and the
 * hostname the `hostname` arg when CNAPI gives one.
 */
export function applyBootedOs(sysinfo: Record<string, unknown>, booted: BootedOs): void {
  sysinfo['Live Image'] = booted.platform;
  const previous = (sysinfo['Boot Parameters'] ?? {}) as Record<string, unknown>;
  const params: Record<string, string> = {};
  for (const k of ['boot_args', 'bootargs']) if (typeof previous[k] === 'string') params[k] = previous[k];
  sysinfo['Boot Parameters'] = { ...booted.kernelArgs, ...params };
  const hostname = booted.kernelArgs.hostname;
  if (hostname && /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(hostname)) sysinfo.Hostname = hostname;
  const nics = (sysinfo['Network Interfaces'] ?? {}) as Record<string, { 'MAC Address'?: unknown; 'NIC Names'?: unknown; ip4addr?: unknown }>;
  const admin = Object.values(nics).find((n) => typeof n['MAC Address'] === 'string' && n['MAC Address'].toLowerCase() === booted.mac);
  if (!admin) return;
  admin.ip4addr = booted.ip;
  sysinfo['Admin IP'] = booted.ip;
  const tags = Object.entries(booted.kernelArgs)
    .filter(([k, v]) => k.endsWith('_nic') && v.toLowerCase() === booted.mac)
    .map(([k]) => k.slice(0, -'_nic'.length));
  if (tags.length > 0) {
    admin['NIC Names'] = tags;
    sysinfo['Admin NIC Tag'] = tags.includes('admin') ? 'admin' : tags[0];
  }
}
