/**
 * `npm run bench`: the sink, then for each N a fresh daemon measured step by step (step.ts);
 * a table on stdout, the JSON results, and docs/performance.md with its chart. Exits non-zero
 * when a step failed, so CI notices.
 */
import { readFile, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { renderChart } from './chart.js';
import { cleanUpNow } from './cleanup.js';
import { DEFAULT_DRILL_JSON, type DrillReport } from './drill-report.js';
import { renderMarkdown, spliceGenerated } from './markdown.js';
import { parseOptions } from './options.js';
import { isPartialRun, readResults, reportToWrite } from './partial-run.js';
import { chartPathFor, PROJECT_ROOT } from './paths.js';
import { SinkProcess } from './sink/sink-process.js';
import { runMirrorStep } from './mirror-step.js';
import { runTimingStep } from './timing-step.js';
import { runAgentsStep } from './agents-step.js';
import { heartbeatIntervalMs, runStep } from './step.js';
import { renderTable } from './table.js';
import { closeTaskAgent } from './task-load.js';
import type { BenchOptions, BenchReport, HostInfo } from './types.js';

function hostInfo(): HostInfo {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryBytes: os.totalmem(),
    kernel: os.release(),
    node: process.version,
  };
}

export async function runBench(opts: BenchOptions, say: (msg: string) => void): Promise<BenchReport> {
  const startedAt = new Date().toISOString();
  const sink = await SinkProcess.start();
  const steps = [];
  const largest = Math.max(...opts.steps);
  let mirror: BenchReport['mirror'];
  let timing: BenchReport['timing'];
  let agents: BenchReport['agents'];
  try {
    say(`sink: CNAPI ${sink.urls.cnapi}, VMAPI ${sink.urls.vmapi}, NAPI ${sink.urls.napi} (pid ${sink.pid})`);
    for (const n of isPartialRun(opts) ? [] : opts.steps) {
      steps.push(
        await runStep(n, {
          sink,
          opts,
          say,
          profileThis: opts.profile && n === largest,
          resultsDir: path.dirname(opts.jsonPath),
        }),
      );
    }
    if ((opts.mirrorCns ?? 0) > 0 && !opts.agentsOnly && !opts.timingOnly) mirror = await runMirrorStep(opts.mirrorCns!, { sink, opts, say });
    if ((opts.agentsCns ?? 0) > 0 && !opts.mirrorOnly && !opts.timingOnly) agents = await runAgentsStep(opts.agentsCns!, { sink, opts, say });
    if ((opts.timingCns ?? 0) > 0 && !opts.mirrorOnly && !opts.agentsOnly) timing = await runTimingStep(opts.timingCns!, { sink, opts, say });
  } finally {
    await sink.stop();
    closeTaskAgent();
  }
  const { jsonPath: _j, docPath: _d, from: _f, ...options } = opts;
  return {
    version: 1,
    startedAt,
    finishedAt: new Date().toISOString(),
    host: hostInfo(),
    options,
    heartbeatIntervalMs: heartbeatIntervalMs(opts),
    steps,
    ...(mirror ? { mirror } : {}),
    ...(timing ? { timing } : {}),
    ...(agents ? { agents } : {}),
  };
}

export async function writeOutputs(report: BenchReport, opts: BenchOptions): Promise<string[]> {
  const written: string[] = [];
  await mkdir(path.dirname(opts.jsonPath), { recursive: true });
  await writeFile(opts.jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  written.push(opts.jsonPath);
  if (opts.docPath) {
    const docDir = path.dirname(opts.docPath);
    await mkdir(docDir, { recursive: true });
    const chartPath = chartPathFor(opts.docPath);
    await writeFile(chartPath, renderChart(report.steps, report.finishedAt));
    const analysis = await readFile(path.join(PROJECT_ROOT, 'tools', 'bench', 'analysis.md'), 'utf8').catch(() => undefined);
    const drill = await readFile(DEFAULT_DRILL_JSON, 'utf8').then(
      (t) => JSON.parse(t) as DrillReport,
      () => undefined,
    );
    const md = renderMarkdown({
      report,
      chartRef: toPosix(path.relative(docDir, chartPath)),
      jsonRef: toPosix(path.relative(docDir, opts.jsonPath)),
      ...(analysis !== undefined ? { analysis } : {}),
      ...(drill?.version === 1 ? { drill } : {}),
    });
    const doc = await readFile(opts.docPath, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    await writeFile(opts.docPath, spliceGenerated(doc, md, opts.docPath));
    written.push(opts.docPath, chartPath);
  }
  return written;
}

async function readReport(file: string): Promise<BenchReport> {
  const { report, why } = await readResults(file);
  if (!report) throw new Error(why);
  return report;
}

function toPosix(p: string): string {
  return p.split(path.sep).join('/');
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  // Interrupted: take the daemons and temp dirs down with us (the sink follows its IPC channel).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench: ${signal}: stopping the daemon and removing temp dirs\n`);
      cleanUpNow();
      process.exit(130);
    });
  }
  const say = (msg: string): void => {
    process.stderr.write(`bench: ${msg}\n`);
  };
  const report = opts.from ? await readReport(opts.from) : await runBench(opts, say);
  process.stdout.write(renderTable(report));
  for (const file of await writeOutputs(await reportToWrite(report, opts, say), opts)) say(`wrote ${path.relative(process.cwd(), file) || file}`);
  if (report.steps.some((s) => !s.ok) || (report.mirror && !report.mirror.ok) || (report.timing && !report.timing.ok)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
