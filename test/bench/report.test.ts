/**
 * The benchmark's arithmetic and outputs from known inputs: percentiles, /proc parsing, the
 * verdicts against the issue-7 targets, the table, the Markdown document, the SVG chart and the
 * profile summaries; a re-render of an existing document.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { renderChart } from '../../tools/bench/chart.js';
import { GENERATED_BEGIN, GENERATED_END, renderMarkdown } from '../../tools/bench/markdown.js';
import { parseSteps } from '../../tools/bench/options.js';
import { reportToWrite } from '../../tools/bench/partial-run.js';
import { cpuPercent, parseCpuSeconds } from '../../tools/bench/proc-stats.js';
import { summarizeHeapSnapshot, summarizeProfile } from '../../tools/bench/profile.js';
import { percentile, summarize } from '../../tools/bench/stats.js';
import { mirrorLines, renderTable } from '../../tools/bench/table.js';
import { judgeTargets } from '../../tools/bench/targets.js';
import { since, tail } from '../../tools/bench/timing-step.js';
import type { BenchReport, StepResult } from '../../tools/bench/types.js';

const execFileP = promisify(execFile);
/** The built benchmark (`npm run build`), as `npm run bench` runs it. */
const BENCH_MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/tools/bench/main.js');

const KB = 1024;
const MB = 1024 * 1024;

function step(n: number, over: { rssPerCnKb: number; cpu: number; nopP99: number; gapMs?: number; perVmKb?: number }): StepResult {
  const baseline = 60 * MB;
  const rssPerCn = over.rssPerCnKb * KB;
  return {
    n,
    ok: true,
    errors: [],
    seconds: 10,
    baseline: { rssBytes: baseline, cpuPercent: 0.5 },
    createServers: { requested: n, created: n, failed: 0, seconds: n / 400, perSecond: 400, nicAllocations: n },
    start: { secondsToAllRegistered: 12, secondsToAllHeartbeated: 16, registered: n, heartbeating: n },
    idle: {
      rssBytes: baseline + n * rssPerCn,
      rssPerCnBytes: rssPerCn,
      cpuPercent: over.cpu,
      windowSeconds: 30,
      heartbeatsPerSecond: n / 5,
      expectedHeartbeatsPerSecond: n / 5,
      statusReportsPerSecond: n / 60,
      worstHeartbeatGapMs: over.gapMs ?? 5100,
      silentCns: 0,
      cnapiErrors: 0,
    },
    tasks: {
      concurrency: 1,
      nop: { count: 300, p50Ms: 1.2, p99Ms: over.nopP99, maxMs: 20, meanMs: 1.5, failed: 0, failures: [], perSecond: 700 },
      machineCreate: { count: 300, p50Ms: 4, p99Ms: 12, maxMs: 30, meanMs: 5, failed: 0, failures: [], perSecond: 200 },
    },
    tasksUnderLoad: {
      concurrency: 8,
      nop: { count: 300, p50Ms: 4, p99Ms: 11, maxMs: 20, meanMs: 4.5, failed: 0, failures: [], perSecond: 1800 },
      machineCreate: { count: 300, p50Ms: 25, p99Ms: 40, maxMs: 50, meanMs: 26, failed: 0, failures: [], perSecond: 280 },
    },
    vms: {
      perCn: 10,
      target: n * 10,
      created: n * 10,
      failed: 0,
      seconds: 100,
      perSecond: (n * 10) / 100,
      timedOut: false,
      rssBeforeBytes: 0,
      rssAfterCreateBytes: 0,
      rssAfterRestartBytes: 0,
      bytesPerVm: (over.perVmKb ?? 6) * KB,
      secondsToAllHeartbeatedWithVms: 20,
      vmapiVmsStored: n * 10,
    },
  };
}

function report(steps: StepResult[], heartbeatIntervalMs = 5000): BenchReport {
  return {
    version: 1,
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:10:00.000Z',
    host: { cpus: 2, cpuModel: 'test cpu', memoryBytes: 24 * 2 ** 30, kernel: '6.1', node: 'v20' },
    options: {
      steps: steps.map((s) => s.n),
      quick: false,
      windowSeconds: 30,
      settleSeconds: 6,
      tasksPerKind: 300,
      taskConcurrency: 1,
      loadConcurrency: 8,
    burstTasks: 0,
      vmsPerCn: 10,
      vmConcurrency: 32,
      vmBudgetSeconds: 600,
      keep: false,
      profile: false,
      bindIp: '127.0.0.1',
      daemonLogLevel: 'warn',
    },
    heartbeatIntervalMs,
    steps,
  };
}

describe('statistics', () => {
  it('takes nearest-rank percentiles', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(Number.isNaN(percentile([], 50))).toBe(true);
    const s = summarize([5, 1, 3, 2, 4]);
    expect(s).toMatchObject({ count: 5, p50Ms: 3, p99Ms: 5, maxMs: 5, meanMs: 3 });
  });

  it('reads utime + stime from /proc/<pid>/stat even when the command name has spaces', () => {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    const stat = '4242 (node (bench) x) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 11 0 99 1 1';
    expect(parseCpuSeconds(stat, 100)).toBe(3);
    expect(cpuPercent({ cpuSeconds: 1, atMs: 0 }, { cpuSeconds: 1.5, atMs: 2000 })).toBe(25);
  });

  it('parses --steps and refuses nonsense', () => {
    expect(parseSteps('1000,100, 5000')).toEqual([100, 1000, 5000]);
    expect(() => parseSteps('100,abc')).toThrow(/--steps/);
    expect(() => parseSteps('0')).toThrow(/--steps/);
    expect(() => parseSteps('20000')).toThrow(/--steps/);
  });
});

describe('targets', () => {
  it('judges the 10,000 step against the issue-7 targets', () => {
    const r = report([step(100, { rssPerCnKb: 90, cpu: 1, nopP99: 2 }), step(10_000, { rssPerCnKb: 40, cpu: 60, nopP99: 12 })]);
    const rows = new Map(judgeTargets(r).map((t) => [t.figure, t]));
    expect(rows.get('RSS per idle CN')).toMatchObject({ verdict: 'met', atN: 10_000, atScale: true });
    expect(rows.get('daemon CPU, idle')).toMatchObject({ verdict: 'missed' });
    expect(rows.get('`nop` task p99')).toMatchObject({ verdict: 'missed' });
    expect(rows.get('`machine_create` p99')).toMatchObject({ verdict: 'met' });
    expect(rows.get('CNs in one daemon')).toMatchObject({ verdict: 'met' });
    expect(rows.get('memory per VM')).toMatchObject({ verdict: 'met' });
  });

  it('does not call a fleet below 10,000 CNs, or one with a long heartbeat gap, a met scale target', () => {
    const small = judgeTargets(report([step(200, { rssPerCnKb: 10, cpu: 1, nopP99: 1 })]));
    const fleet = small.find((t) => t.figure === 'CNs in one daemon')!;
    expect(fleet.verdict).toBe('missed');
    expect(small.every((t) => t.atN === 200 && !t.atScale)).toBe(true);
    const gappy = judgeTargets(report([step(10_000, { rssPerCnKb: 10, cpu: 1, nopP99: 1, gapMs: 12_000 })]));
    expect(gappy.find((t) => t.figure === 'CNs in one daemon')!.verdict).toBe('missed');
    const shortBeats = judgeTargets(report([step(10_000, { rssPerCnKb: 10, cpu: 1, nopP99: 1 })], 1000));
    expect(shortBeats.find((t) => t.figure === 'CNs in one daemon')!.verdict).toBe('missed');
  });

  it('says "not measured" when the run has no figures', () => {
    const failed: StepResult = { n: 100, ok: false, errors: ['boom'], seconds: 1 };
    expect(judgeTargets(report([failed])).every((t) => t.verdict === 'not measured')).toBe(true);
  });
});

describe('outputs', () => {
  const r = report([
    step(100, { rssPerCnKb: 30, cpu: 0.8, nopP99: 2 }),
    step(1000, { rssPerCnKb: 25, cpu: 4, nopP99: 3 }),
    step(10_000, { rssPerCnKb: 20, cpu: 35, nopP99: 6 }),
  ]);

  it('prints one column per N with the figures in it', () => {
    const table = renderTable(r);
    expect(table).toMatch(/N=100\s+N=1,000\s+N=10,000/);
    expect(table).toMatch(/RSS per idle CN \(KB\)\s+30\.0\s+25\.0\s+20\.0/);
    expect(table).toMatch(/nop p99 \(ms\)\s+2\.00\s+3\.00\s+6\.00/);
  });

  it('writes the document with targets side by side, every N, the chart and the closing note', () => {
    const md = renderMarkdown({ report: r, chartRef: 'performance.svg', jsonRef: '../tools/bench/results/latest.json', analysis: 'Hand-written note.' });
    expect(md).toContain('| RSS per idle CN | ≤ 50 KB | 20.0 KB | 10,000 | ✅ met |');
    expect(md).toContain('| figure | N = 100 | N = 1,000 | N = 10,000 |');
    expect(md).toContain('![Daemon RSS and idle CPU against the number of mock CNs](performance.svg)');
    expect(md).toContain('Hand-written note.');
    const missedRun = renderMarkdown({ report: report([step(10_000, { rssPerCnKb: 80, cpu: 10, nopP99: 2 })]), chartRef: 'c.svg', jsonRef: 'j.json' });
    expect(missedRun).toMatch(/- \*\*RSS per idle CN\*\*: 80\.0 KB against ≤ 50 KB/);
  });

  it('re-renders (--from) only its generated block of an existing document: hand-written sections before and after stay as they are', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-bench-doc-'));
    try {
      const json = path.join(dir, 'latest.json');
      await writeFile(json, JSON.stringify(r));
      const doc = path.join(dir, 'performance.md');
      const before = 'Intro written by hand.\n\n';
      const after = '\n\n## agents (by hand)\n\nFigures of a run by hand: 1,825.2 s.\n';
      await writeFile(doc, `${before}${GENERATED_BEGIN}\n# stale figures\n${GENERATED_END}${after}`);
      const rerender = (): ReturnType<typeof execFileP> => execFileP(process.execPath, [BENCH_MAIN, '--from', json, '--json', path.join(dir, 'out.json'), '--doc', doc]);
      await rerender();
      const text = await readFile(doc, 'utf8');
      expect(text.startsWith(`${before}${GENERATED_BEGIN}\n# mockcloud performance\n`)).toBe(true);
      expect(text.endsWith(`${GENERATED_END}${after}`)).toBe(true);
      expect(text).not.toContain('# stale figures');
      expect(text).toContain('| RSS per idle CN | ≤ 50 KB | 20.0 KB | 10,000 | ✅ met |');
      // Again: the same document (the block is replaced, nothing is added around it).
      await rerender();
      expect(await readFile(doc, 'utf8')).toBe(text);
      // A document without the block is left as it is, with a message, not overwritten.
      await writeFile(doc, '# performance, all by hand\n');
      const refused = await rerender().then(() => undefined, (err: { code: number; stderr: string }) => err);
      expect(refused?.code).not.toBe(0);
      expect(refused?.stderr).toContain('no single generated block');
      expect(await readFile(doc, 'utf8')).toBe('# performance, all by hand\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('adds a section per profiled phase and the heap summary when --profile ran', () => {
    const profiled: StepResult = {
      ...step(10_000, { rssPerCnKb: 20, cpu: 35, nopP99: 6 }),
      profiles: [
        { phase: 'idle', file: '/x/idle-10000.cpuprofile', top: [{ fn: 'runDue', where: 'dist/src/runtime/scheduler.js:56', selfPercent: 3 }], files: [{ file: 'writev', selfPercent: 19 }], busyPercent: 20, totalMs: 60_000 },
      ],
      heap: { file: '/x/idle-10000.heapsnapshot', totalBytes: 125 * MB, top: [{ kind: 'CnLink', bytes: 1_440_000, count: 10_000 }] },
    };
    const md = renderMarkdown({ report: report([profiled]), chartRef: 'c.svg', jsonRef: 'j.json' });
    expect(md).toContain('## Where the CPU goes (N = 10,000)');
    expect(md).toContain('main thread busy 20.0 % of it (`idle-10000.cpuprofile`)');
    expect(md).toContain('| 3.0 | `runDue` | `dist/src/runtime/scheduler.js:56` |');
    expect(md).toContain('## Where the idle memory goes (N = 10,000)');
    expect(md).toContain('| 1.37 | 144 | 10,000 | `CnLink` |');
  });

  it('draws RSS and CPU against N as a self-contained SVG', () => {
    const svg = renderChart(r.steps, r.finishedAt);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    // one point per measured N in each of the two panels
    expect(svg.match(/<circle /g)).toHaveLength(6);
    expect(svg).toContain('Daemon RSS, idle');
    expect(svg).toContain('Daemon CPU, idle');
    // the idle RSS at 10,000 CNs (60 MB + 10,000 x 20 KB) labels its point
    expect(svg).toContain(`>${Math.round((60 * MB + 10_000 * 20 * KB) / MB)}<`);
    // every opened element is closed
    const opened = (svg.match(/<(g|svg|text|title)[ >]/g) ?? []).length;
    const closed = (svg.match(/<\/(g|svg|text|title)>/g) ?? []).length;
    expect(opened).toBe(closed);
  });
});

describe('profile summaries', () => {
  it('shares the busy CPU time among functions and files, leaving idle out', () => {
    const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)') },
        { id: 2, callFrame: frame('(idle)') },
        { id: 3, callFrame: frame('beat', 'file:///x/dist/src/agents/cn-agent/cnapi-reporter/reporter.js', 9) },
        { id: 4, callFrame: frame('writev') },
        { id: 5, callFrame: frame('send', 'file:///x/dist/src/agents/cn-agent/cnapi-reporter/reporter.js', 99) },
      ],
      startTime: 0,
      endTime: 10_000_000,
      // 6 idle samples, 3 in beat, 1 in send => busy 40 %
      samples: [2, 2, 2, 2, 2, 2, 3, 3, 3, 5],
    };
    const s = summarizeProfile(profile);
    expect(s.busyPercent).toBe(40);
    expect(s.totalMs).toBe(10_000);
    expect(s.top[0]).toEqual({ fn: 'beat', where: 'dist/src/agents/cn-agent/cnapi-reporter/reporter.js:10', selfPercent: 75 });
    expect(s.top.find((t) => t.fn === '(idle)')).toBeUndefined();
    expect(s.files[0]).toEqual({ file: 'dist/src/agents/cn-agent/cnapi-reporter/reporter.js', selfPercent: 100 });
  });

  it('sums heap self sizes by constructor', () => {
    const snap = {
      snapshot: { meta: { node_fields: ['type', 'name', 'id', 'self_size'], node_types: [['hidden', 'array', 'string', 'object', 'closure']] as [string[]] } },
      strings: ['CnLink', 'Map', 'beat'],
      // type, name, id, self_size
      nodes: [3, 0, 1, 100, 3, 0, 2, 100, 3, 1, 3, 50, 2, 2, 4, 30, 4, 2, 5, 20],
    };
    const s = summarizeHeapSnapshot(snap);
    expect(s.totalBytes).toBe(300);
    expect(s.top[0]).toEqual({ kind: 'CnLink', bytes: 200, count: 2 });
    expect(s.top.map((t) => t.kind)).toEqual(['CnLink', 'Map', '(string)', 'beat (closure)']);
  });
});

describe('the mirror step (issue 18)', () => {
  const mirror: NonNullable<BenchReport['mirror']> = {
    n: 1000,
    vmsPerCn: 10,
    ok: true,
    errors: [],
    seconds: 120,
    dc: { servers: 1000, vms: 10_000 },
    capture: { seconds: 8, maxRssBytes: 90 * MB, fileBytes: 3 * MB, servers: 1000, vms: 10_000, vmsPerSecond: 1250 },
    load: { seconds: 40, serversCreated: 1000, vmsCreated: 10_000, failed: 0, serverSeconds: 8, vmSeconds: 25, serversPerSecond: 125, vmsPerSecond: 400, maxRssBytes: 120 * MB, daemonRssBytes: 400 * MB },
  };

  it('says the capture and load figures and judges the load against its targets', () => {
    const lines = mirrorLines(mirror).join('\n');
    expect(lines).toContain('capture: 1000 servers, 10000 VMs in 8 s (1250 VMs/s), peak RSS 90 MiB');
    expect(lines).toContain('125 CNs/s, target ≥ 100: met');
    expect(lines).toContain('400 VMs/s, target ≥ 500: missed');
  });

  it('is the whole table of a --mirror-only run, and a section of the document', () => {
    const only = { ...report([]), mirror };
    expect(renderTable(only)).toBe(`${mirrorLines(mirror).join('\n')}\n`);
    const md = renderMarkdown({ report: { ...report([step(100, { rssPerCnKb: 30, cpu: 0.8, nopP99: 2 })]), mirror }, chartRef: 'c.svg', jsonRef: 'j.json' });
    expect(md).toContain('## Mirror (issue 18)');
  });
});

describe('a step run alone (--mirror-only and the like)', () => {
  const full = report([step(100, { rssPerCnKb: 30, cpu: 0.8, nopP99: 2 }), step(10_000, { rssPerCnKb: 20, cpu: 35, nopP99: 6 })]);
  const mirrorOf = (n: number): NonNullable<BenchReport['mirror']> => ({ n, vmsPerCn: 10, ok: true, errors: [], seconds: 60 });
  const alone: BenchReport = { ...report([]), startedAt: '2025-02-02T00:00:00.000Z', finishedAt: '2025-02-02T00:05:00.000Z', mirror: mirrorOf(500) };
  const opts = (jsonPath: string): Parameters<typeof reportToWrite>[1] => ({ jsonPath, mirrorOnly: true });

  it('is written into the last full run: its section replaces that run\'s, the fleet figures, header and other sections stay, and the section says when it was measured', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-bench-partial-'));
    try {
      const json = path.join(dir, 'latest.json');
      await writeFile(json, JSON.stringify({ ...full, mirror: mirrorOf(100), agents: { n: 7, vmsPerCn: 1, ok: true, errors: [], seconds: 1 } }));
      const said: string[] = [];
      const merged = await reportToWrite(alone, opts(json), (m) => said.push(m));
      expect(merged.steps.map((s) => s.n)).toEqual([100, 10_000]);
      expect(merged.finishedAt).toBe(full.finishedAt);
      expect(merged.mirror?.n).toBe(500);
      expect(merged.agents?.n).toBe(7);
      expect(merged.sectionsMeasuredAt).toEqual({ mirror: alone.finishedAt });
      expect(said.join('\n')).toContain('the run of 2025-01-01T00:10:00.000Z');
      const md = renderMarkdown({ report: merged, chartRef: 'c.svg', jsonRef: 'j.json' });
      expect(md).toContain('| figure | N = 100 | N = 10,000 |');
      expect(md).toContain('## Mirror (issue 18)\n\n_Measured on 2025-02-02 by a run of this step alone; the figures above are of the run of 2025-01-01._');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('is written on its own, saying why, when there are no results to go into; a full run is always written as it is', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-bench-partial-'));
    try {
      const said: string[] = [];
      const missing = path.join(dir, 'none.json');
      expect(await reportToWrite(alone, opts(missing), (m) => said.push(m))).toBe(alone);
      expect(said.pop()).toContain('does not exist');
      const other = path.join(dir, 'other.json');
      await writeFile(other, '{"version": 2}');
      expect(await reportToWrite(alone, opts(other), (m) => said.push(m))).toBe(alone);
      expect(said.pop()).toContain('is not a benchmark results file');
      await writeFile(other, JSON.stringify(full));
      expect(await reportToWrite(full, { jsonPath: other }, (m) => said.push(m))).toBe(full);
      expect(said).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the timing step\'s histogram tails', () => {
  // As the daemon's /metrics writes a histogram: cumulative buckets, its own labels first.
  const histogram = (upTo500: number, upTo1: number, all: number): string =>
    [
      `mockcloud_outbound_request_duration_seconds_bucket{datacenter="dc",api="vmapi",method="POST",le="0.5"} 9`,
      `mockcloud_outbound_request_duration_seconds_bucket{datacenter="dc",api="cnapi",method="POST",le="0.5"} ${upTo500}`,
      `mockcloud_outbound_request_duration_seconds_bucket{datacenter="dc",api="cnapi",method="POST",le="1"} ${upTo1}`,
      `mockcloud_outbound_request_duration_seconds_bucket{datacenter="dc",api="cnapi",method="POST",le="+Inf"} ${all}`,
    ].join('\n');

  it('counts the slow CNAPI POSTs of the burst alone, not those of the daemon\'s start before it', () => {
    const atStart = tail(histogram(900, 950, 1000), 'mockcloud_outbound_request_duration_seconds_bucket', 'api="cnapi",method="POST"');
    const after = tail(histogram(5850, 5930, 6000), 'mockcloud_outbound_request_duration_seconds_bucket', 'api="cnapi",method="POST"');
    expect(after).toEqual({ count: 6000, over500ms: 150, over1s: 70 });
    expect(since(atStart, after)).toEqual({ count: 5000, over500ms: 50, over1s: 20 });
    expect(since(undefined, after)).toEqual(after);
    expect(since(atStart, undefined)).toBeUndefined();
  });
});
