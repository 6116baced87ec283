/**
 * Each CN's last boot, as `mockcloud boot-report` and the fleet page show it: why and how it
 * booted (booter or direct), its DHCP (packets, retransmits, failed rounds), when it got its
 * lease, which platform it came up on and where the boot params came from, when it came up and
 * when CNAPI accepted its first heartbeat (it is `running` then). The summary of a set of boots
 * (a storm): p50/p99 time to lease and to running, and the CNs not back.
 *
 * One small object per CN, replaced at its next boot; times on the wall clock (epoch ms).
 */
import type { BootCause } from '../mockcn/types.js';

export type BootPath = 'booter' | 'direct';
export type BootPhase = 'dhcp' | 'boot-file' | 'kernel' | 'registering' | 'running' | 'abandoned';

export interface BootRecord {
  uuid: string;
  cause: BootCause;
  /** The event that caused it (a power-loss, reboot, offline or flap event), if one did. */
  eventId?: string;
  path: BootPath;
  phase: BootPhase;
  startedAt: number;
  /** DHCP packets sent, of which retransmissions; DHCP rounds that ended without a lease. */
  dhcpPackets: number;
  dhcpRetransmits: number;
  dhcpFailedRounds: number;
  leasedAt?: number;
  ip?: string;
  bootFileFrom?: 'booter-http' | 'cnapi';
  /** Loading the boot file failed this many times (retried with backoff). */
  bootFileFailures: number;
  platform?: string;
  upAt?: number;
  runningAt?: number;
  lastError?: string;
}

export interface BootView {
  uuid: string;
  cause: BootCause;
  eventId: string | null;
  path: BootPath;
  phase: BootPhase;
  startedAt: string;
  dhcpPackets: number;
  dhcpRetransmits: number;
  dhcpFailedRounds: number;
  ip: string | null;
  /** ms from the boot's start. */
  leaseMs: number | null;
  upMs: number | null;
  runningMs: number | null;
  platform: string | null;
  bootFileFrom: string | null;
  bootFileFailures: number;
  lastError: string | null;
}

export interface BootSummary {
  boots: number;
  running: number;
  /** Not running yet: still booting, or abandoned (the daemon stopped, the CN removed). */
  notBack: number;
  notBackServers: string[];
  byPath: Record<BootPath, number>;
  dhcpPackets: number;
  dhcpRetransmits: number;
  leaseMs: { p50: number | null; p99: number | null; max: number | null };
  runningMs: { p50: number | null; p99: number | null; max: number | null };
  /** From the first boot's start to the last CN's running (null while some are not back). */
  allRunningMs: number | null;
}

/** How many servers `notBackServers` names at most. */
const NOT_BACK_LISTED = 50;

export class BootRecords {
  private readonly last = new Map<string, BootRecord>();

  begin(uuid: string, cause: BootCause, path: BootPath, eventId?: string): BootRecord {
    const r: BootRecord = {
      uuid,
      cause,
      path,
      phase: path === 'booter' ? 'dhcp' : 'kernel',
      startedAt: Date.now(),
      dhcpPackets: 0,
      dhcpRetransmits: 0,
      dhcpFailedRounds: 0,
      bootFileFailures: 0,
      ...(eventId ? { eventId } : {}),
    };
    this.last.set(uuid, r);
    return r;
  }

  get(uuid: string): BootRecord | undefined {
    return this.last.get(uuid);
  }

  forget(uuid: string): void {
    this.last.delete(uuid);
  }

  list(): BootRecord[] {
    return [...this.last.values()];
  }

  /** CNs whose boot has not come up yet. */
  get booting(): number {
    let n = 0;
    for (const r of this.last.values()) if (r.upAt === undefined && r.phase !== 'abandoned') n++;
    return n;
  }
}

export function bootView(r: BootRecord): BootView {
  const since = (t: number | undefined): number | null => (t === undefined ? null : t - r.startedAt);
  return {
    uuid: r.uuid,
    cause: r.cause,
    eventId: r.eventId ?? null,
    path: r.path,
    phase: r.phase,
    startedAt: new Date(r.startedAt).toISOString(),
    dhcpPackets: r.dhcpPackets,
    dhcpRetransmits: r.dhcpRetransmits,
    dhcpFailedRounds: r.dhcpFailedRounds,
    ip: r.ip ?? null,
    leaseMs: since(r.leasedAt),
    upMs: since(r.upAt),
    runningMs: since(r.runningAt),
    platform: r.platform ?? null,
    bootFileFrom: r.bootFileFrom ?? null,
    bootFileFailures: r.bootFileFailures,
    lastError: r.lastError ?? null,
  };
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function spread(values: number[]): { p50: number | null; p99: number | null; max: number | null } {
  const s = [...values].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99), max: s.length > 0 ? s[s.length - 1]! : null };
}

export function summarize(records: readonly BootRecord[]): BootSummary {
  const lease: number[] = [];
  const running: number[] = [];
  const notBack: string[] = [];
  const byPath: Record<BootPath, number> = { booter: 0, direct: 0 };
  let packets = 0;
  let retransmits = 0;
  let first = Infinity;
  let lastRunning = -Infinity;
  for (const r of records) {
    byPath[r.path]++;
    packets += r.dhcpPackets;
    retransmits += r.dhcpRetransmits;
    first = Math.min(first, r.startedAt);
    if (r.leasedAt !== undefined) lease.push(r.leasedAt - r.startedAt);
    if (r.runningAt !== undefined) {
      running.push(r.runningAt - r.startedAt);
      lastRunning = Math.max(lastRunning, r.runningAt);
    } else notBack.push(r.uuid);
  }
  return {
    boots: records.length,
    running: running.length,
    notBack: notBack.length,
    notBackServers: notBack.sort().slice(0, NOT_BACK_LISTED),
    byPath,
    dhcpPackets: packets,
    dhcpRetransmits: retransmits,
    leaseMs: spread(lease),
    runningMs: spread(running),
    allRunningMs: records.length > 0 && notBack.length === 0 ? lastRunning - first : null,
  };
}
