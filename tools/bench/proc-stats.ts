/**
 * What the benchmark reads of the daemon process from /proc (Linux): resident memory and
 * CPU time. Read from outside so the daemon measures nothing about itself.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clockTicks: number | undefined;

/** Kernel clock ticks per second (USER_HZ), the unit of utime/stime in /proc/<pid>/stat. */
export function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5000 }).trim());
      clockTicks = Number.isFinite(n) && n > 0 ? n : 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** Whole-process resident set size in bytes (VmRSS of /proc/<pid>/status). */
export function readRssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** Parse utime + stime (in seconds) out of the text of /proc/<pid>/stat. */
export function parseCpuSeconds(statText: string, ticksPerSecond: number): number {
  // The command name (field 2) is in parentheses and may hold spaces: fields start after ')'.
  const rest = statText.slice(statText.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime is field 14, stime field 15.
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('cannot parse /proc/<pid>/stat');
  return (utime + stime) / ticksPerSecond;
}

/** CPU seconds (user + system) the process has used so far. */
export function readCpuSeconds(pid: number): number {
  return parseCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'), clockTicksPerSecond());
}

export interface CpuSample {
  cpuSeconds: number;
  /** performance.now() at the sample, ms. */
  atMs: number;
}

export function sampleCpu(pid: number): CpuSample {
  return { cpuSeconds: readCpuSeconds(pid), atMs: performance.now() };
}

/** CPU used between two samples, as % of one core. */
export function cpuPercent(from: CpuSample, to: CpuSample): number {
  const wallSeconds = (to.atMs - from.atMs) / 1000;
  return wallSeconds > 0 ? ((to.cpuSeconds - from.cpuSeconds) / wallSeconds) * 100 : 0;
}
