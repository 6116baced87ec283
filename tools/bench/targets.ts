/**
 * The targets of issue 7 and how each is judged against a run. Figures defined "at 10,000 CNs"
 * are judged on the 10,000 step; without one, on the largest step and marked as not at scale.
 */
import type { BenchReport, StepResult } from './types.js';
import { fmt, fmtN } from './figures.js';

export type Verdict = 'met' | 'missed' | 'not measured';

/**
 * Issue 26: 10,000 CNs on the smartos timing profile (timing-step.ts): the worst heartbeat gap
 * during a burst of machine_create, the RSS per task in flight, idle CPU within 5 % of instant.
 *
 * The RSS target is what a task in flight must hold, twice: a heap snapshot of 4,000 creates in
 * flight (docs/timing.md) shows 33-34 KB of live JS heap a task: its connection and restify's
 * request and response (about 5 KB), the task's async state (promises, closures, contexts:
 * about 7 KB), its log records and history entry (about 4 KB), the VM it provisions and its
 * params (the rest). V8 grows its heap ahead of what is live and collects the old generation
 * only now and then, so the RSS is that and the garbage between two collections: 64 KB.
 *
 * It is judged without the VMs the burst has already made at the plateau (a third of them by
 * then, at 10,000 CNs): those are the fleet's from then on, and a VM's cost has a target of its
 * own (the `vms` step). Each is taken out at the JS heap a VM made keeps once collected, less
 * than its RSS, so the figure judged errs high (timing-step.ts).
 */
export const TIMING_TARGETS = { worstGapMs: 6000, rssPerInFlightTaskBytes: 64 * 1024, idleCpuRatio: 1.05 };

/** Issue 18: `mockcloud mirror load` against the sink (the mirror step, mirror-step.ts). */
export const MIRROR_TARGETS = { loadServersPerSecond: 100, loadVmsPerSecond: 500 };

export interface TargetRow {
  figure: string;
  target: string;
  /** What the original mockcloud did (issue 7), for comparison. */
  original: string;
  measured: string;
  atN: number | undefined;
  /** The verdict, and whether the step it comes from is the scale the target names. */
  verdict: Verdict;
  atScale: boolean;
}

const SCALE = 10_000;

interface TargetDef {
  figure: string;
  target: string;
  original: string;
  /** Judge one step: the measured text and whether it meets the target (undefined = no figure). */
  judge: (s: StepResult, report: BenchReport) => { measured: string; met: boolean | undefined };
}

const TARGETS: readonly TargetDef[] = [
  {
    figure: 'CNs in one daemon',
    target: '10,000, every one heartbeating every 5 s (no gap over 11 s)',
    original: 'one process per agent kind, a process per task',
    judge: (s, r) => {
      if (!s.idle || !s.start) return { measured: '—', met: undefined };
      const gap = s.idle.worstHeartbeatGapMs;
      const realTimings = r.heartbeatIntervalMs === 5000;
      return {
        measured: `${fmtN(s.start.heartbeating)} of ${fmtN(s.n)} heartbeating, worst gap ${fmt(gap / 1000, 1)} s${realTimings ? '' : ` (heartbeat every ${r.heartbeatIntervalMs / 1000} s)`}`,
        met: s.n >= SCALE && s.start.heartbeating >= s.n && s.idle.silentCns === 0 && gap <= 11_000 && realTimings,
      };
    },
  },
  {
    figure: 'RSS per idle CN',
    target: '≤ 50 KB',
    original: '≈ 430 KB (KWOK: 60–100 KB per node)',
    judge: (s) => figure(s.idle?.rssPerCnBytes, (v) => `${fmt(v / 1024, 1)} KB`, (v) => v <= 50 * 1024),
  },
  {
    figure: 'daemon CPU, idle',
    target: '≤ 50 % of one core at 10,000 CNs',
    original: '9.5 % at 100 CNs (≈ 9.5 cores at 10,000)',
    judge: (s) => figure(s.idle?.cpuPercent, (v) => `${fmt(v, 1)} %`, (v) => v <= 50),
  },
  {
    figure: 'start to all registered',
    target: '≤ 30 s for 10,000',
    original: '—',
    judge: (s) => figure(s.start?.secondsToAllRegistered, (v) => `${fmt(v, 1)} s (all heartbeated: ${fmt(s.start?.secondsToAllHeartbeated, 1)} s)`, (v) => v <= 30),
  },
  {
    figure: '`create-servers`',
    target: '≥ 200 CNs per second',
    original: '≈ 0.9 CNs/s (1.1 s each, serially)',
    judge: (s) => figure(s.createServers?.perSecond, (v) => `${fmt(v, 0)} CNs/s`, (v) => v >= 200),
  },
  {
    figure: '`nop` task p99',
    target: '≤ 10 ms at 10,000 CNs',
    original: '281 ms',
    judge: (s) => figure(s.tasks?.nop.p99Ms, (v) => `${fmt(v, 2)} ms (p50 ${fmt(s.tasks?.nop.p50Ms, 2)} ms)${loaded(s, 'nop')}`, (v) => v <= 10),
  },
  {
    figure: '`machine_create` p99',
    target: '≤ 30 ms at 10,000 CNs, with the durable write',
    original: '701 ms',
    judge: (s) =>
      figure(
        s.tasks?.machineCreate.p99Ms,
        (v) => `${fmt(v, 2)} ms (p50 ${fmt(s.tasks?.machineCreate.p50Ms, 2)} ms)${loaded(s, 'machineCreate')}`,
        (v) => v <= 30,
      ),
  },
  {
    figure: 'heartbeats during a task burst',
    target: 'no gap over 6 s with 5,000 tasks sent at once at 10,000 CNs',
    original: '16.7 s gaps (5,000 machine_load over 50 CNs, before task admission)',
    judge: (s, r) => {
      const b = s.burst;
      if (!b) return { measured: '—', met: undefined };
      return {
        measured: `worst gap ${fmt(b.worstHeartbeatGapMs / 1000, 2)} s over ${fmtN(b.tasks)} tasks at once: ${fmtN(b.answered)} answered (p99 ${fmt(b.p99Ms, 0)} ms), ${fmtN(b.refused)} refused (503), ${fmtN(b.failed)} failed`,
        met: b.tasks >= 5000 && b.failed === 0 && b.silentCns === 0 && b.worstHeartbeatGapMs <= 6000 && r.heartbeatIntervalMs === 5000,
      };
    },
  },
  {
    figure: 'memory per VM',
    target: '≤ 8 KB; 100,000 VMs across the fleet',
    original: '—',
    judge: (s) =>
      figure(
        s.vms?.bytesPerVm,
        (v) => `${fmt(v / 1024, 2)} KB over ${fmtN(s.vms?.created ?? 0)} VMs`,
        (v) => v <= 8 * 1024 && (s.vms?.created ?? 0) >= 100_000,
      ),
  },
];

/** ", one at a time; with 8 in flight p99 …" — the loaded run, shown beside the verdict's figure. */
function loaded(s: StepResult, kind: 'nop' | 'machineCreate'): string {
  const l = s.tasksUnderLoad;
  const one = s.tasks?.concurrency === 1 ? ', one at a time' : s.tasks ? `, ${s.tasks.concurrency} in flight` : '';
  if (!l) return one;
  return `${one}; ${l.concurrency} in flight: p99 ${fmt(l[kind].p99Ms, 2)} ms, ${fmt(l[kind].perSecond, 0)}/s`;
}

function figure(
  v: number | undefined,
  show: (v: number) => string,
  ok: (v: number) => boolean,
): { measured: string; met: boolean | undefined } {
  if (v === undefined || !Number.isFinite(v)) return { measured: '—', met: undefined };
  return { measured: show(v), met: ok(v) };
}

/** The step a target is judged on: N = 10,000 if measured, else the largest N that got figures. */
function stepForTargets(report: BenchReport): StepResult | undefined {
  const withFigures = report.steps.filter((s) => s.idle !== undefined);
  return withFigures.find((s) => s.n === SCALE) ?? withFigures.sort((a, b) => b.n - a.n)[0];
}

export function judgeTargets(report: BenchReport): TargetRow[] {
  const step = stepForTargets(report);
  return TARGETS.map((t) => {
    if (!step) {
      return { figure: t.figure, target: t.target, original: t.original, measured: '—', atN: undefined, verdict: 'not measured', atScale: false };
    }
    const j = t.judge(step, report);
    const atScale = step.n >= SCALE;
    const verdict: Verdict = j.met === undefined ? 'not measured' : j.met ? 'met' : 'missed';
    return { figure: t.figure, target: t.target, original: t.original, measured: j.measured, atN: step.n, verdict, atScale };
  });
}
