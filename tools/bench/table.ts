/** The plain-text table `npm run bench` prints: one row per figure, one column per N. */
import { FIGURES, fmt, fmtN } from './figures.js';
import { agentsLines } from './agents-step.js';
import { judgeTargets, MIRROR_TARGETS, TIMING_TARGETS } from './targets.js';
import type { BenchReport, MirrorResult, TimingResult } from './types.js';

export function renderTable(report: BenchReport): string {
  const steps = report.steps;
  if (steps.length === 0 && (report.mirror || report.agents || report.timing)) {
    return `${[
      ...(report.mirror ? mirrorLines(report.mirror) : []),
      ...(report.agents ? agentsLines(report.agents) : []),
      ...(report.timing ? timingLines(report.timing) : []),
    ].join('\n')}\n`;
  }
  const header = ['figure', ...steps.map((s) => `N=${fmtN(s.n)}${s.ok ? '' : ' (!)'}`)];
  const rows = FIGURES.map((f) => [`${f.label}${f.unit ? ` (${f.unit})` : ''}`, ...steps.map((s) => fmt(f.get(s), f.digits))]);
  const lines = [...grid([header, ...rows]), ''];
  lines.push('targets (issue 7):');
  const t = judgeTargets(report).map((r) => [
    r.figure.replace(/`/g, ''),
    r.target,
    r.measured,
    r.atN === undefined ? '' : `N=${fmtN(r.atN)}`,
    r.verdict + (r.verdict !== 'not measured' && !r.atScale ? ' (not at 10,000)' : ''),
  ]);
  lines.push(...grid([['figure', 'target', 'measured', 'at', 'verdict'], ...t]));
  for (const s of steps) for (const e of s.errors) lines.push(`N=${fmtN(s.n)}: ${e}`);
  if (report.mirror) lines.push('', ...mirrorLines(report.mirror));
  if (report.agents) lines.push('', ...agentsLines(report.agents));
  if (report.timing) lines.push('', ...timingLines(report.timing));
  return `${lines.join('\n')}\n`;
}

/** The timing step: the idle fleet on smartos against instant, and the burst, with their targets. */
export function timingLines(t: TimingResult): string[] {
  const mib = (b: number | undefined): string => (b === undefined ? '-' : `${(b / 2 ** 20).toFixed(0)} MiB`);
  const verdict = (ok: boolean | undefined): string => (ok === undefined ? 'not measured' : ok ? 'met' : 'missed');
  const lines = [`timing (issue 26): ${fmtN(t.n)} CNs on smartos, burst of ${fmtN(t.burst)} machine_create${t.ok ? '' : ' (!)'}`];
  const a = t.idleInstant;
  const b = t.idleSmartos;
  if (a && b) {
    lines.push(
      `  idle: instant ${fmt(a.cpuPercent, 2)} % CPU, ${mib(a.rssBytes)}; smartos ${fmt(b.cpuPercent, 2)} % CPU, ${mib(b.rssBytes)}; ` +
        `CPU ratio ${fmt(t.idleCpuRatio, 3)} (target ≤ ${TIMING_TARGETS.idleCpuRatio}: ${verdict(t.idleCpuRatio === undefined ? undefined : t.idleCpuRatio <= TIMING_TARGETS.idleCpuRatio)}), ` +
        `RSS ${fmt(((b.rssBytes - a.rssBytes) / a.rssBytes) * 100, 1)} %`,
    );
    if (t.idleWindows && t.idleWindows.length > 2) {
      const pairs: string[] = [];
      for (let i = 0; i < t.idleWindows.length; i += 2) {
        pairs.push(t.idleWindows.slice(i, i + 2).map((w) => `${w.timing} ${fmt(w.cpuPercent, 2)} %`).join(' beside '));
      }
      lines.push(`  idle windows, side by side: ${pairs.join('; then ')}`);
    }
  }
  const r = t.burstResult;
  if (r) {
    lines.push(
      `  burst: ${fmtN(r.ok)} of ${fmtN(r.sent)} created in ${fmt(r.seconds, 1)} s (p50 ${fmt(r.p50Ms / 1000, 1)} s, p99 ${fmt(r.p99Ms / 1000, 1)} s), ` +
        `${fmtN(r.failed)} failed, ${fmtN(t.heldConnections ?? 0)} held open at once${r.timedOut ? ', stopped by its time bound' : ''}`,
      `  heartbeats: worst gap ${fmt(r.worstHeartbeatGapMs / 1000, 2)} s (target ≤ ${TIMING_TARGETS.worstGapMs / 1000} s: ${verdict(r.worstHeartbeatGapMs <= TIMING_TARGETS.worstGapMs && r.silentCns === 0)}), ${fmtN(r.silentCns)} silent CNs; ` +
        `event loop delayed up to ${fmt((r.worstLoopDelayMs ?? NaN) / 1000, 2)} s, heartbeats run up to ${fmt((r.worstHotLagMs ?? NaN) / 1000, 2)} s late; ` +
        `${fmtN(r.gapsOver6s ?? NaN)} of ${fmtN(r.gaps ?? NaN)} gaps over 6 s; the sink's own loop delayed up to ${fmt((r.sinkLoopDelayMaxMs ?? NaN) / 1000, 2)} s`,
      ...threadLine(r.heartbeatThread),
      `  of ${fmtN(r.heartbeatsLate?.count ?? NaN)} heartbeats, ${fmtN(r.heartbeatsLate?.over500ms ?? NaN)} went over 0.5 s late and ${fmtN(r.heartbeatsLate?.over1s ?? NaN)} over 1 s; ` +
        `of ${fmtN(r.cnapiPostsSlow?.count ?? NaN)} CNAPI POSTs, ${fmtN(r.cnapiPostsSlow?.over500ms ?? NaN)} were answered (read) after over 0.5 s and ${fmtN(r.cnapiPostsSlow?.over1s ?? NaN)} over 1 s`,
      `  memory: ${fmtN(r.peakInFlight)} tasks in flight at the peak, RSS ${mib(r.rssBeforeBytes)} before, ${mib(r.rssAtPeakBytes)} then: ` +
        `${fmt(r.rssPerInFlightTaskBytes / 1024, 1)} KB per task in flight, the ${fmtN(r.vmsMadeAtPeak ?? NaN)} VMs made by then included`,
    );
    const judged = r.rssPerInFlightTaskNoVmsBytes;
    if (judged !== undefined) {
      lines.push(
        `  without those VMs (${fmt((r.heapPerVmMadeBytes ?? NaN) / 1024, 1)} KB of heap each, as they keep it after the burst): ` +
          `${fmt(judged / 1024, 1)} KB per task in flight (target ≤ ${TIMING_TARGETS.rssPerInFlightTaskBytes / 1024} KB: ${verdict(judged <= TIMING_TARGETS.rssPerInFlightTaskBytes)})`,
      );
    }
    const p = r.perInFlightTaskBytes;
    if (p) {
      const kb = (b: number): string => `${fmt(b / 1024, 1)} KB`;
      lines.push(`  per task in flight: JS heap ${kb(p.heapTotal)} reserved (${kb(p.heapUsed)} in use, live or garbage), buffers ${kb(p.external)}, the rest ${kb(p.other)}`);
      if (r.rssAfterBytes !== undefined && r.heapUsedAfterBytes !== undefined && r.heapUsedBeforeBytes !== undefined && r.ok > 0) {
        lines.push(
          `  45 s after the burst (${fmtN(r.ok)} VMs made, none in flight): RSS ${mib(r.rssAfterBytes)}, JS heap in use ${mib(r.heapUsedBeforeBytes)} before, ${mib(r.heapUsedAfterBytes)} after: ` +
            `${kb((r.heapUsedAfterBytes - r.heapUsedBeforeBytes) / r.ok)} per VM made`,
        );
      }
    }
  }
  for (const e of t.errors) lines.push(`  timing: ${e}`);
  return lines;
}

/** The mirror step: capture and load, with the load's targets. */
export function mirrorLines(m: MirrorResult): string[] {
  const mib = (b: number | undefined): string => (b === undefined ? '-' : `${(b / 2 ** 20).toFixed(0)} MiB`);
  const verdict = (v: number | undefined, target: number): string => (v === undefined || !Number.isFinite(v) ? 'not measured' : v >= target ? 'met' : 'missed');
  const lines = [`mirror (issue 18): ${fmtN(m.n)} CNs x ${m.vmsPerCn} VMs${m.ok ? '' : ' (!)'}`];
  const c = m.capture;
  if (c) lines.push(`  capture: ${c.servers} servers, ${c.vms} VMs in ${c.seconds} s (${c.vmsPerSecond} VMs/s), peak RSS ${mib(c.maxRssBytes)}, file ${(c.fileBytes / 2 ** 20).toFixed(1)} MiB`);
  const l = m.load;
  if (l) {
    lines.push(`  load: ${l.serversCreated} CNs in ${l.serverSeconds} s (${l.serversPerSecond} CNs/s, target ≥ ${MIRROR_TARGETS.loadServersPerSecond}: ${verdict(l.serversPerSecond, MIRROR_TARGETS.loadServersPerSecond)}), ` +
      `${l.vmsCreated} VMs in ${l.vmSeconds} s (${l.vmsPerSecond} VMs/s, target ≥ ${MIRROR_TARGETS.loadVmsPerSecond}: ${verdict(l.vmsPerSecond, MIRROR_TARGETS.loadVmsPerSecond)}), ` +
      `${l.seconds} s in all, peak RSS ${mib(l.maxRssBytes)}, daemon RSS after ${mib(l.daemonRssBytes)}`);
  }
  for (const e of m.errors) lines.push(`  mirror: ${e}`);
  return lines;
}

function grid(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)];
}

/** The heartbeat thread's own loop in the burst: its lateness, and whether it waited for a CPU. */
function threadLine(t: NonNullable<TimingResult['burstResult']>['heartbeatThread']): string[] {
  if (!t) return [];
  const cpu = t.cpuSeconds !== undefined ? `, ${fmt(t.cpuSeconds, 1)} s on a CPU` : '';
  const wait =
    t.runqueueWaitSeconds !== undefined
      ? `, ${fmt(t.runqueueWaitSeconds, 1)} s runnable waiting for one (at most ${fmt((t.worstRunqueueWaitMs ?? NaN) / 1000, 2)} s in a second)`
      : '';
  return [`  heartbeat thread: its loop delayed up to ${fmt(t.loopDelayMaxMs / 1000, 2)} s${cpu}${wait}`];
}
