/**
 * The figures the benchmark reports for each N, in the order the table and the document show
 * them, with how to read each out of a step result and how to print it.
 */
import type { StepResult } from './types.js';

export interface Figure {
  key: string;
  label: string;
  unit: string;
  get: (s: StepResult) => number | undefined;
  digits: number;
}

const KB = 1024;
const MB = 1024 * 1024;

export const FIGURES: readonly Figure[] = [
  { key: 'rss', label: 'daemon RSS, idle', unit: 'MB', get: (s) => div(s.idle?.rssBytes, MB), digits: 1 },
  { key: 'rss0', label: 'daemon RSS with 0 CNs', unit: 'MB', get: (s) => div(s.baseline?.rssBytes, MB), digits: 1 },
  { key: 'rssPerCn', label: 'RSS per idle CN', unit: 'KB', get: (s) => div(s.idle?.rssPerCnBytes, KB), digits: 1 },
  { key: 'heap', label: 'JS heap used, idle', unit: 'MB', get: (s) => div(s.idle?.heapUsedBytes, MB), digits: 1 },
  { key: 'cpu', label: 'daemon CPU, idle', unit: '% of a core', get: (s) => s.idle?.cpuPercent, digits: 1 },
  { key: 'startRegistered', label: 'start → all registered', unit: 's', get: (s) => s.start?.secondsToAllRegistered, digits: 2 },
  { key: 'startHeartbeated', label: 'start → all heartbeated', unit: 's', get: (s) => s.start?.secondsToAllHeartbeated, digits: 2 },
  { key: 'hbRate', label: 'heartbeats delivered', unit: '/s', get: (s) => s.idle?.heartbeatsPerSecond, digits: 1 },
  { key: 'hbExpected', label: 'heartbeats if all on time', unit: '/s', get: (s) => s.idle?.expectedHeartbeatsPerSecond, digits: 1 },
  { key: 'statusRate', label: 'status reports delivered', unit: '/s', get: (s) => s.idle?.statusReportsPerSecond, digits: 2 },
  { key: 'worstGap', label: 'worst heartbeat gap', unit: 's', get: (s) => div(s.idle?.worstHeartbeatGapMs, 1000), digits: 2 },
  { key: 'nopP50', label: 'nop p50', unit: 'ms', get: (s) => s.tasks?.nop.p50Ms, digits: 2 },
  { key: 'nopP99', label: 'nop p99', unit: 'ms', get: (s) => s.tasks?.nop.p99Ms, digits: 2 },
  { key: 'mcP50', label: 'machine_create p50', unit: 'ms', get: (s) => s.tasks?.machineCreate.p50Ms, digits: 2 },
  { key: 'mcP99', label: 'machine_create p99', unit: 'ms', get: (s) => s.tasks?.machineCreate.p99Ms, digits: 2 },
  { key: 'nopP99Load', label: 'nop p99, loaded', unit: 'ms', get: (s) => s.tasksUnderLoad?.nop.p99Ms, digits: 2 },
  { key: 'nopRateLoad', label: 'nop throughput, loaded', unit: '/s', get: (s) => s.tasksUnderLoad?.nop.perSecond, digits: 0 },
  { key: 'mcP99Load', label: 'machine_create p99, loaded', unit: 'ms', get: (s) => s.tasksUnderLoad?.machineCreate.p99Ms, digits: 2 },
  { key: 'burstGap', label: 'worst heartbeat gap, task burst', unit: 's', get: (s) => div(s.burst?.worstHeartbeatGapMs, 1000), digits: 2 },
  { key: 'burstP99', label: 'task burst p99', unit: 'ms', get: (s) => s.burst?.p99Ms, digits: 0 },
  { key: 'burstRefused', label: 'task burst refused (503)', unit: '', get: (s) => s.burst?.refused, digits: 0 },
  { key: 'vmRate', label: 'VM creation', unit: 'VMs/s', get: (s) => s.vms?.perSecond, digits: 1 },
  { key: 'vms', label: 'VMs created', unit: '', get: (s) => s.vms?.created, digits: 0 },
  { key: 'perVm', label: 'memory per VM', unit: 'KB', get: (s) => div(s.vms?.bytesPerVm, KB), digits: 2 },
  { key: 'rssVms', label: 'daemon RSS with the VMs, idle', unit: 'MB', get: (s) => div(s.vms?.rssAfterRestartBytes, MB), digits: 1 },
  { key: 'heapVms', label: 'JS heap used with the VMs, idle', unit: 'MB', get: (s) => div(s.vms?.heapUsedAfterRestartBytes, MB), digits: 1 },
  { key: 'cpuVms', label: 'daemon CPU with the VMs, idle', unit: '% of a core', get: (s) => s.vms?.cpuPercentWithVms, digits: 1 },
  { key: 'createRate', label: 'create-servers', unit: 'CNs/s', get: (s) => s.createServers?.perSecond, digits: 1 },
  { key: 'nics', label: 'admin NICs allocated', unit: '', get: (s) => s.createServers?.nicAllocations, digits: 0 },
];

function div(v: number | undefined, by: number): number | undefined {
  return v === undefined ? undefined : v / by;
}

/** 12,345.6 style; '—' when not measured. */
export function fmt(v: number | undefined, digits: number): string {
  if (v === undefined || !Number.isFinite(v)) return '—';
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function fmtN(n: number): string {
  return n.toLocaleString('en-US');
}
