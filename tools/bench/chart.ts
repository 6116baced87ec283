/**
 * The performance chart: daemon RSS and idle CPU against N, as an SVG written here with no
 * dependency. Two panels side by side, N on a log scale, each with its target drawn dashed:
 * RSS at 0 CNs + 50 KB per CN, and 50 % of one core.
 */
import type { StepResult } from './types.js';

interface Series {
  points: { x: number; y: number }[];
  target?: (x: number) => number;
}

interface PanelSpec {
  title: string;
  yLabel: string;
  series: Series;
  x0: number;
}

const W = 820;
const H = 340;
const PANEL_W = 360;
const PLOT = { left: 58, right: 16, top: 40, bottom: 52 };

export function renderChart(steps: readonly StepResult[], generatedAt: string): string {
  const measured = steps.filter((s) => s.idle !== undefined).sort((a, b) => a.n - b.n);
  const base = measured[0]?.baseline?.rssBytes ?? 0;
  const rss: Series = {
    points: measured.map((s) => ({ x: s.n, y: s.idle!.rssBytes / 2 ** 20 })),
    target: (n) => (base + n * 50 * 1024) / 2 ** 20,
  };
  const cpu: Series = {
    points: measured.map((s) => ({ x: s.n, y: s.idle!.cpuPercent })),
    target: () => 50,
  };
  const panels: PanelSpec[] = [
    { title: 'Daemon RSS, idle', yLabel: 'MB', series: rss, x0: 20 },
    { title: 'Daemon CPU, idle', yLabel: '% of one core', series: cpu, x0: 20 + PANEL_W + 60 },
  ];
  const body = panels.map((p) => panel(p)).join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>mockcloud: daemon RSS and CPU against the number of mock CNs (${esc(generatedAt)})</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    body,
    `<g transform="translate(${W / 2 - 170},${H - 12})">`,
    `<line x1="0" y1="-4" x2="24" y2="-4" stroke="#1f6feb" stroke-width="2.5"/><text x="30" y="0">measured</text>`,
    `<line x1="110" y1="-4" x2="134" y2="-4" stroke="#d1242f" stroke-width="1.5" stroke-dasharray="6 4"/><text x="140" y="0">target (issue 7)</text>`,
    `<text x="250" y="0" fill="#555">N = mock CNs (log scale)</text>`,
    '</g>',
    '</svg>',
    '',
  ].join('\n');
}

function panel(p: PanelSpec): string {
  const pw = PANEL_W - PLOT.left - PLOT.right;
  const ph = H - PLOT.top - PLOT.bottom;
  const xs = p.series.points.map((pt) => pt.x);
  let xMin = Math.min(...xs, 100);
  let xMax = Math.max(...xs, 10_000);
  if (!(xMin > 0)) xMin = 100;
  if (xMax <= xMin) xMax = xMin * 10;
  const lx = (x: number): number => ((Math.log10(x) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin))) * pw;
  const ys = p.series.points.map((pt) => pt.y);
  const targetYs = p.series.target ? [p.series.target(xMin), p.series.target(xMax)] : [];
  const yMax = niceCeil(Math.max(1, ...ys, ...targetYs) * 1.08);
  const ly = (y: number): number => ph - (Math.max(0, y) / yMax) * ph;
  const out: string[] = [];
  out.push(`<g transform="translate(${p.x0 + PLOT.left},${PLOT.top})">`);
  out.push(`<text x="${pw / 2}" y="-16" text-anchor="middle" font-size="14" font-weight="bold">${esc(p.title)}</text>`);
  out.push(`<text transform="translate(-44,${ph / 2}) rotate(-90)" text-anchor="middle" fill="#555">${esc(p.yLabel)}</text>`);
  // y grid and ticks
  for (let i = 0; i <= 5; i++) {
    const v = (yMax / 5) * i;
    const y = ly(v);
    out.push(`<line x1="0" y1="${f(y)}" x2="${pw}" y2="${f(y)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="-6" y="${f(y + 4)}" text-anchor="end" fill="#555">${tick(v)}</text>`);
  }
  // x ticks at decades and measured N
  const decades: number[] = [];
  for (let d = Math.ceil(Math.log10(xMin)); d <= Math.floor(Math.log10(xMax)); d++) decades.push(10 ** d);
  for (const x of new Set([...decades, ...xs])) {
    const px = lx(x);
    out.push(`<line x1="${f(px)}" y1="${ph}" x2="${f(px)}" y2="${ph + 4}" stroke="#555"/>`);
    out.push(`<text x="${f(px)}" y="${ph + 17}" text-anchor="middle" fill="#555">${x.toLocaleString('en-US')}</text>`);
  }
  out.push(`<line x1="0" y1="${ph}" x2="${pw}" y2="${ph}" stroke="#555"/><line x1="0" y1="0" x2="0" y2="${ph}" stroke="#555"/>`);
  // target, sampled along the log axis so a linear-in-N target shows as the curve it is
  if (p.series.target) {
    const pts: string[] = [];
    for (let i = 0; i <= 40; i++) {
      const x = 10 ** (Math.log10(xMin) + ((Math.log10(xMax) - Math.log10(xMin)) * i) / 40);
      pts.push(`${f(lx(x))},${f(ly(p.series.target(x)))}`);
    }
    out.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="#d1242f" stroke-width="1.5" stroke-dasharray="6 4"/>`);
  }
  // measured
  if (p.series.points.length > 1) {
    const pts = p.series.points.map((pt) => `${f(lx(pt.x))},${f(ly(pt.y))}`).join(' ');
    out.push(`<polyline points="${pts}" fill="none" stroke="#1f6feb" stroke-width="2.5"/>`);
  }
  for (const pt of p.series.points) {
    out.push(`<circle cx="${f(lx(pt.x))}" cy="${f(ly(pt.y))}" r="4" fill="#1f6feb"/>`);
    out.push(`<text x="${f(lx(pt.x))}" y="${f(ly(pt.y) - 9)}" text-anchor="middle" font-size="11">${tick(pt.y)}</text>`);
  }
  out.push('</g>');
  return out.join('\n');
}

/** The smallest 1, 2 or 5 × 10^k at or above v. */
function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function tick(v: number): string {
  return v >= 100 ? Math.round(v).toLocaleString('en-US') : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function f(n: number): string {
  return (Math.round(n * 10) / 10).toString();
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
