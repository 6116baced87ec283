/** The plain-text table `npm run bench` prints: one row per figure, one column per N. */
import { FIGURES, fmt, fmtN } from './figures.js';
import { agentsLines } from './agents-step.js';
import { judgeTargets, MIRROR_TARGETS } from './targets.js';
import type { BenchReport, MirrorResult } from './types.js';

export function renderTable(report: BenchReport): string {
  const steps = report.steps;
  if (steps.length === 0 && (report.mirror || report.agents)) {
    return `${[...(report.mirror ? mirrorLines(report.mirror) : []), ...(report.agents ? agentsLines(report.agents) : [])].join('\n')}\n`;
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
  return `${lines.join('\n')}\n`;
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
