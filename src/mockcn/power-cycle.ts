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
 *             resume) and the VMs whose autoboot is set start.
 *
 * Nothing here ticks: the caller's `wait` is the daemon's shared scheduler. A marker file in
 * the server dir spans shutdown and boot, so a daemon stopped (or killed) meanwhile finishes
 * the boot when it loads the CN again (`finishInterruptedReboot`): an acknowledged reboot
 * always ends with the CN booted.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import type { Vm } from '../vmadm/types.js';
import { readSysinfoFile, RUNTIME_SYSINFO_KEYS } from './sysinfo-file.js';
import type { MockCn } from './types.js';

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
  try {
    await opts.wait(opts.bootMs);
    await boot(cn, opts.log);
  } finally {
    // Whatever went wrong in the boot, the CN does not stay down.
    await cn.setPower('up');
  }
  await startAutobootVms(cn, opts.log);
  await fsp.rm(markerOf(cn), { force: true });
  opts.log.info({ server: cn.uuid, bootTime: cn.sysinfo['Boot Time'] }, 'server rebooted');
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
  await startAutobootVms(cn, log);
  await fsp.rm(markerOf(cn), { force: true });
  return true;
}

function markerOf(cn: MockCn): string {
  return path.join(cn.paths.dir, REBOOT_MARKER_FILE);
}

/** The zones go down with the host; each VM on its own, as the zones service halts them. */
async function haltRunningVms(cn: MockCn, log: PowerCycleLog): Promise<void> {
  const running = cn.vms.list({ include_dni: true }).filter((vm) => vm.state === 'running');
  await Promise.all(running.map((vm) => cn.vms.halt(vm.uuid).catch((err: unknown) => failed(log, cn, vm, 'halt', err))));
}

async function startAutobootVms(cn: MockCn, log: PowerCycleLog): Promise<void> {
  const due = cn.vms.list({ include_dni: true }).filter((vm) => vm.autoboot === true && vm.state === 'stopped');
  await Promise.all(due.map((vm) => cn.vms.start(vm.uuid).catch((err: unknown) => failed(log, cn, vm, 'autoboot', err))));
}

function failed(log: PowerCycleLog, cn: MockCn, vm: Vm, what: string, err: unknown): void {
  log.warn({ err, server: cn.uuid, vm: vm.uuid }, `server reboot: VM ${what} failed`);
}

/**
 * The kernel came up: sysinfo's "Boot Time" (epoch seconds, a string as sysinfo prints it)
 * becomes now, never earlier than or equal to the previous one, so every reboot shows.
 */
async function boot(cn: MockCn, log: PowerCycleLog): Promise<void> {
  const sysinfo: Record<string, unknown> = { ...(await readSysinfoFile(cn.paths.sysinfo, cn.uuid)) };
  const previous = Number.parseInt(String(sysinfo['Boot Time'] ?? ''), 10);
  const now = Math.floor(Date.now() / 1000);
  sysinfo['Boot Time'] = String(Number.isFinite(previous) && previous >= now ? previous + 1 : now);
  for (const key of RUNTIME_SYSINFO_KEYS) delete sysinfo[key];
  await writeFileDurable(cn.paths.sysinfo, `${JSON.stringify(sysinfo, null, 2)}\n`);
  try {
    await cn.reloadSysinfo();
  } catch (err) {
    log.warn({ err, server: cn.uuid }, 'new boot time written but not reloaded');
  }
}
