/**
 * A run of one step alone (`--timing-only`, `--mirror-only`, `--agents-only`) measures no fleet
 * steps. Written as it is, it would replace the last full run's results and document with an
 * empty table, so it is written into them instead: its section replaces theirs and the rest
 * (the fleet figures, the header, the chart) stays that run's. Each section it brings records
 * when it was measured, because the document's date is the full run's.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BenchOptions, BenchReport, SectionName } from './types.js';

const SECTIONS: SectionName[] = ['mirror', 'agents', 'timing'];

export function isPartialRun(opts: Pick<BenchOptions, 'mirrorOnly' | 'agentsOnly' | 'timingOnly'>): boolean {
  return Boolean(opts.mirrorOnly || opts.agentsOnly || opts.timingOnly);
}

/** The fresh run's sections laid over the previous report; the previous report alone decides the rest. */
export function mergePartial(previous: BenchReport, fresh: BenchReport): BenchReport {
  const sectionsMeasuredAt = { ...previous.sectionsMeasuredAt };
  for (const name of SECTIONS) if (fresh[name] !== undefined) sectionsMeasuredAt[name] = fresh.finishedAt;
  return {
    ...previous,
    ...(fresh.mirror ? { mirror: fresh.mirror } : {}),
    ...(fresh.agents ? { agents: fresh.agents } : {}),
    ...(fresh.timing ? { timing: fresh.timing } : {}),
    sectionsMeasuredAt,
  };
}

/**
 * The benchmark results in `file`, or why there are none: what `--from` renders, and what a
 * step run alone is written into (when there are none, it is written on its own).
 */
export async function readResults(file: string): Promise<{ report?: BenchReport; why?: string }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { why: code === 'ENOENT' ? `${file} does not exist` : `${file} could not be read (${code ?? (err as Error).message})` };
  }
  let report: BenchReport;
  try {
    report = JSON.parse(text) as BenchReport;
  } catch {
    return { why: `${file} is not JSON` };
  }
  if (report?.version !== 1 || !Array.isArray(report.steps)) return { why: `${file} is not a benchmark results file` };
  return { report };
}

/** What a run writes: itself, or, for a step run alone, itself laid over the results at --json. */
export async function reportToWrite(report: BenchReport, opts: Pick<BenchOptions, 'from' | 'jsonPath' | 'mirrorOnly' | 'agentsOnly' | 'timingOnly'>, say: (msg: string) => void): Promise<BenchReport> {
  if (opts.from || !isPartialRun(opts)) return report;
  const previous = await readResults(opts.jsonPath);
  if (!previous.report) {
    say(`${previous.why}: writing this run's results on their own`);
    return report;
  }
  const json = path.relative(process.cwd(), opts.jsonPath) || opts.jsonPath;
  say(`writing this run's section into ${json} (the run of ${previous.report.finishedAt}); the fleet figures and the document's header stay that run's`);
  return mergePartial(previous.report, report);
}
