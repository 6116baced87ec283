/** The plain-text table `npm run bench` prints: one row per figure, one column per N. */
import { FIGURES, fmt, fmtN } from './figures.js';
import { judgeTargets } from './targets.js';
import type { BenchReport } from './types.js';

export function renderTable(report: BenchReport): string {
  const steps = report.steps;
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
  return `${lines.join('\n')}\n`;
}

function grid(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)];
}
