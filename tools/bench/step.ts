/**
 * One benchmark step: everything measured for one fleet size N, on a fresh data dir.
 *
 *   1. baseline   the daemon with 0 CNs, idle: RSS (the "same daemon with 0 CNs")
 *   2. create     `mockcloud create-servers N` against it: CNs/s, admin NICs from the sink's NAPI
 *   3. start      restart over the N CNs: seconds until every CN registered and heartbeated
 *   4. idle       after settling: RSS, RSS per CN, CPU % over a window, heartbeats and status
 *                 reports per second the sink received, the worst heartbeat gap
 *   5. tasks      `nop` and `machine_create` latency under that load; then a burst of tasks
 *                 sent at once, and the worst heartbeat gap while it lasts
 *   6. VMs        up to vmsPerCn VMs on every CN: creation throughput
 *   7. VM memory  restart over CNs + VMs, idle: RSS per VM
 *
 * Every wait is bounded; a phase that fails ends the step with the figures it has.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { onInterrupt } from './cleanup.js';
import { DaemonProcess, sleep, type DaemonJsonView } from './daemon-process.js';
import { CLI_MAIN } from './paths.js';
import { cpuPercent, readRssBytes, sampleCpu } from './proc-stats.js';
import { heapSnapshot, InspectorSession, startProfile, stopProfile } from './profile.js';
import type { SinkProcess } from './sink/sink-process.js';
import type { SinkStats } from './sink/sink.js';
import { round, summarize } from './stats.js';
import { runBurst, runTasks, type TaskRunResult, type TaskTarget } from './task-load.js';
import type { BenchOptions, StepResult } from './types.js';
import { machineCreateParams, type ExternalNetwork } from './vm-payload.js';

export interface StepContext {
  sink: SinkProcess;
  opts: BenchOptions;
  /** Progress lines (stderr). */
  say: (msg: string) => void;
  /** Profile this step's idle daemon (the largest step, with --profile). */
  profileThis: boolean;
  resultsDir: string;
}

const DEFAULT_HEARTBEAT_MS = 5000;
const POLL_MS = 250;
/** Tasks of each kind sent (and not measured) before the latency figures. */
const WARMUP_TASKS = 20;

export function heartbeatIntervalMs(opts: BenchOptions): number {
  return opts.timings?.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS;
}

/** Bounds that grow with N (generous: they stop runaways, they are not targets). */
function bounds(n: number) {
  return {
    daemonReadyMs: 60_000 + n * 20,
    createMs: 120_000 + n * 100,
    allHeartbeatedMs: 60_000 + n * 10,
  };
}

export async function runStep(n: number, ctx: StepContext): Promise<StepResult> {
  const { sink, opts } = ctx;
  const started = performance.now();
  const say = (msg: string): void => ctx.say(`[N=${n} +${((performance.now() - started) / 1000).toFixed(1)}s] ${msg}`);
  const result: StepResult = { n, ok: false, errors: [], seconds: 0 };
  const limits = bounds(n);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `mockcloud-bench-${n}-`));
  const forgetDir = opts.keep ? () => undefined : onInterrupt(() => rmSync(dataDir, { recursive: true, force: true }));
  let daemon: DaemonProcess | undefined;
  const profile = new PhaseProfiler(ctx.profileThis, n, ctx.resultsDir, result);

  const startDaemon = async (
    nodeArgs: string[] = [],
    onSpawn?: (d: DaemonProcess) => void,
  ): Promise<{ daemon: DaemonProcess; info: DaemonJsonView }> => {
    const started = await DaemonProcess.start({
      dataDir,
      urls: sink.urls,
      bindIp: opts.bindIp,
      logLevel: opts.daemonLogLevel,
      nodeArgs,
      readyTimeoutMs: limits.daemonReadyMs,
      ...(onSpawn ? { onSpawn } : {}),
    });
    daemon = started.daemon;
    return started;
  };
  const stopDaemon = async (): Promise<void> => {
    if (!daemon) return;
    const d = daemon;
    daemon = undefined;
    const end = await d.stop();
    if (!end.clean) result.errors.push(`daemon did not stop cleanly (${d.describeExit()})`);
  };

  try {
    if (opts.timings) await writeFile(path.join(dataDir, 'config.json'), `${JSON.stringify({ timings: opts.timings }, null, 2)}\n`);
    await sink.reset('all');

    // With --profile the daemons run with the inspector on: the profiles (create-servers, start,
    // idle) are taken through it, and the baseline is taken with it too, so RSS compares alike.
    const inspect = ctx.profileThis ? ['--inspect=127.0.0.1:0'] : [];

    // 1. baseline: the same daemon with 0 CNs, measured as the idle fleet is (same waits)
    say(`baseline: daemon with 0 CNs, settling ${opts.settleSeconds} s, measuring ${opts.windowSeconds} s`);
    let { daemon: d } = await startDaemon(inspect);
    await sleep(opts.settleSeconds * 1000);
    const c0 = sampleCpu(d.pid);
    await sleep(opts.windowSeconds * 1000);
    result.baseline = { rssBytes: readRssBytes(d.pid), cpuPercent: round(cpuPercent(c0, sampleCpu(d.pid)), 2) };

    // 2. create-servers N through the real CLI
    say(`create-servers ${n}`);
    await profile.attach(d);
    await profile.start();
    const before = await sink.stats();
    const created = await runCreateServers(dataDir, n, limits.createMs);
    const afterCreate = await sink.stats();
    await profile.stop('create-servers');
    profile.detach();
    result.createServers = {
      requested: n,
      created: created.created,
      failed: created.failed,
      seconds: round(created.seconds, 2),
      perSecond: round(created.created / created.seconds, 1),
      nicAllocations: counterDelta(before, afterCreate, 'napi.adminNicAllocation'),
    };
    if (created.created < n) throw new Error(`create-servers made ${created.created} of ${n} CNs: ${created.message}`);

    // 3. restart over the N CNs: time to every CN registered and heartbeated
    await stopDaemon();
    await sink.reset('cnapi');
    say('restart: waiting for every CN to register and heartbeat');
    let attaching: Promise<void> = Promise.resolve();
    ({ daemon: d } = await startDaemon(inspect, (spawned) => {
      attaching = profile.attach(spawned).then(() => profile.start());
    }));
    const all = await waitAllHeartbeated(sink, n, limits.allHeartbeatedMs);
    await attaching;
    await profile.stop('start');
    result.start = {
      registered: all.cns.registered,
      heartbeating: all.cns.heartbeating,
      secondsToAllRegistered: all.cns.registered >= n ? round((all.cns.lastFirstSysinfoAt - d.spawnedAt) / 1000, 2) : NaN,
      secondsToAllHeartbeated: all.cns.heartbeating >= n ? round((all.cns.lastFirstHeartbeatAt - d.spawnedAt) / 1000, 2) : NaN,
    };
    if (all.cns.heartbeating < n) {
      result.errors.push(`only ${all.cns.heartbeating} of ${n} CNs heartbeated within ${limits.allHeartbeatedMs} ms`);
    }

    // 4. idle steady state
    say(`idle: settling ${opts.settleSeconds} s, measuring ${opts.windowSeconds} s`);
    await sleep(opts.settleSeconds * 1000);
    await sink.mark();
    const s0 = await sink.stats();
    const cpu0 = sampleCpu(d.pid);
    await sleep(opts.windowSeconds * 1000);
    const cpu1 = sampleCpu(d.pid);
    const s1 = await sink.stats();
    const rss = readRssBytes(d.pid);
    const seconds = (s1.at - s0.at) / 1000;
    const heapUsed = await heapUsedBytes(d);
    const idle: NonNullable<StepResult['idle']> = {
      rssBytes: rss,
      rssPerCnBytes: Math.round((rss - result.baseline.rssBytes) / n),
      cpuPercent: round(cpuPercent(cpu0, cpu1), 2),
      windowSeconds: round(seconds, 2),
      heartbeatsPerSecond: round(counterDelta(s0, s1, 'cnapi.heartbeat') / seconds, 1),
      expectedHeartbeatsPerSecond: round(n / (heartbeatIntervalMs(opts) / 1000), 1),
      statusReportsPerSecond: round(counterDelta(s0, s1, 'cnapi.status') / seconds, 2),
      worstHeartbeatGapMs: s1.cns.worstGapMs,
      silentCns: s1.cns.silentSinceMark,
      cnapiErrors: counterDelta(s0, s1, 'cnapi.status.4xx') + counterDelta(s0, s1, 'cnapi.status.5xx'),
    };
    if (heapUsed !== undefined) idle.heapUsedBytes = heapUsed;
    result.idle = idle;

    // 5. task latency under the heartbeat load
    const { targets, net } = await taskTargets(d, n, sink);
    const taskBudgetMs = 120_000;
    // Warm-up, not measured: the first requests of a fresh daemon pay for JIT compilation.
    const warmup = Math.min(WARMUP_TASKS, n);
    const warmNop = await runTasks({
      targets,
      task: 'nop',
      params: () => ({}),
      count: warmup,
      concurrency: opts.taskConcurrency,
      timeBudgetMs: taskBudgetMs,
      startAt: targets.length - warmup,
    });
    const warmMc = await runTasks({
      targets,
      task: 'machine_create',
      params: (i, t) => machineCreateParams(i, t.uuid, net),
      count: Math.min(warmup, opts.vmsPerCn * n),
      concurrency: opts.taskConcurrency,
      timeBudgetMs: taskBudgetMs,
    });
    for (const r of [warmNop, warmMc]) if (r.failed > 0) result.errors.push(...r.failures.slice(0, 2).map((f) => `warm-up: ${f}`));
    // Each kind at the latency concurrency, then again with more in flight (queueing included).
    let mcNext = warmMc.ok + warmMc.failed;
    let mcOk = warmMc.ok;
    let mcFailed = warmMc.failed;
    const measure = async (concurrency: number): Promise<NonNullable<StepResult['tasks']>> => {
      say(`tasks: ${opts.tasksPerKind} nop, ${opts.tasksPerKind} machine_create (concurrency ${concurrency})`);
      const nop = await runTasks({
        targets,
        task: 'nop',
        params: () => ({}),
        count: opts.tasksPerKind,
        concurrency,
        timeBudgetMs: taskBudgetMs,
      });
      const mc = await runTasks({
        targets,
        task: 'machine_create',
        params: (i, t) => machineCreateParams(i, t.uuid, net),
        count: Math.max(0, Math.min(opts.tasksPerKind, opts.vmsPerCn * n - mcNext)),
        concurrency,
        timeBudgetMs: taskBudgetMs,
        startAt: mcNext,
      });
      mcNext += mc.ok + mc.failed;
      mcOk += mc.ok;
      mcFailed += mc.failed;
      for (const r of [nop, mc]) if (r.failed > 0) result.errors.push(...r.failures.slice(0, 2));
      return { concurrency, nop: taskSummary(nop), machineCreate: taskSummary(mc) };
    };
    result.tasks = await measure(opts.taskConcurrency);
    if (opts.loadConcurrency > 0) result.tasksUnderLoad = await measure(opts.loadConcurrency);
    if (opts.burstTasks > 0) {
      await profile.start();
      result.burst = await burst(sink, d, targets, opts, say);
      await profile.stop('burst');
    }

    // After the latency figures, so the profiler and the snapshot's GC cannot touch them.
    if (ctx.profileThis) {
      say(`profiling the idle daemon for ${opts.windowSeconds} s, then a heap snapshot`);
      await profile.start();
      await sleep(opts.windowSeconds * 1000);
      await profile.stop('idle');
      await profile.heap();
    }
    profile.detach();

    // 6. VMs: vmsPerCn on every CN (round-robin continues where machine_create stopped)
    const target = opts.vmsPerCn * n;
    const firstIndex = mcNext;
    say(`VMs: creating ${target - firstIndex} more (${opts.vmsPerCn} per CN, concurrency ${opts.vmConcurrency}, budget ${opts.vmBudgetSeconds} s)`);
    const rssBeforeVms = readRssBytes(d.pid);
    const vmRun = await runTasks({
      targets,
      task: 'machine_create',
      params: (i, t) => machineCreateParams(i, t.uuid, net),
      count: Math.max(0, target - firstIndex),
      concurrency: opts.vmConcurrency,
      timeBudgetMs: opts.vmBudgetSeconds * 1000,
      startAt: firstIndex,
    });
    const rssAfterCreate = readRssBytes(d.pid);
    const vmsCreated = mcOk + vmRun.ok;
    if (vmRun.failed > 0) result.errors.push(...vmRun.failures.slice(0, 2));
    if (vmRun.timedOut) result.errors.push(`VM creation stopped by its ${opts.vmBudgetSeconds} s budget at ${vmsCreated} of ${target} VMs`);

    // 7. VM memory: restart over CNs + VMs, idle
    await stopDaemon();
    await sink.reset('cnapi');
    say(`restart with ${vmsCreated} VMs: waiting for every CN to heartbeat`);
    ({ daemon: d } = await startDaemon());
    const allWithVms = await waitAllHeartbeated(sink, n, limits.allHeartbeatedMs + vmsCreated * 2);
    // Measured as the fleet without VMs was (settling, then the idle window), so both RSS
    // figures are of a daemon at rest and not one still holding its start's garbage.
    say(`idle with VMs: settling ${opts.settleSeconds} s, measuring ${opts.windowSeconds} s`);
    await sleep(opts.settleSeconds * 1000);
    const cpuVm0 = sampleCpu(d.pid);
    await sleep(opts.windowSeconds * 1000);
    const cpuWithVms = round(cpuPercent(cpuVm0, sampleCpu(d.pid)), 2);
    const rssWithVms = readRssBytes(d.pid);
    const heapWithVms = await heapUsedBytes(d);
    const vmapi = await sink.stats();
    result.vms = {
      perCn: opts.vmsPerCn,
      target,
      created: vmsCreated,
      failed: mcFailed + vmRun.failed,
      seconds: round(vmRun.seconds, 2),
      perSecond: round(vmRun.ok / vmRun.seconds, 1),
      timedOut: vmRun.timedOut,
      rssBeforeBytes: rssBeforeVms,
      rssAfterCreateBytes: rssAfterCreate,
      rssAfterRestartBytes: rssWithVms,
      ...(heapWithVms !== undefined ? { heapUsedAfterRestartBytes: heapWithVms } : {}),
      cpuPercentWithVms: cpuWithVms,
      bytesPerVm: vmsCreated > 0 ? Math.round((rssWithVms - idle.rssBytes) / vmsCreated) : NaN,
      secondsToAllHeartbeatedWithVms:
        allWithVms.cns.heartbeating >= n ? round((allWithVms.cns.lastFirstHeartbeatAt - d.spawnedAt) / 1000, 2) : NaN,
      vmapiVmsStored: vmapi.store.vms,
    };
    await stopDaemon();
    result.ok = result.errors.length === 0;
  } catch (err) {
    result.errors.push(err instanceof Error ? err.message : String(err));
    result.ok = false;
  } finally {
    profile.detach();
    await stopDaemon().catch((err: unknown) => result.errors.push(`stopping the daemon: ${(err as Error).message}`));
    if (!opts.keep) await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
    else say(`kept ${dataDir}`);
    forgetDir();
    result.seconds = round((performance.now() - started) / 1000, 1);
  }
  return result;
}

/**
 * `burstTasks` nop tasks at once over the CNs. The heartbeat gaps are read from the burst's
 * start until one heartbeat interval (plus a second) after its end, so a CN held up by the
 * burst shows its late beat.
 */
async function burst(
  sink: SinkProcess,
  d: DaemonProcess,
  targets: TaskTarget[],
  opts: BenchOptions,
  say: (m: string) => void,
): Promise<NonNullable<StepResult['burst']>> {
  say(`burst: ${opts.burstTasks} nop tasks at once over ${targets.length} CNs`);
  const before = await daemonStatus(d); // also restarts the daemon's event-loop delay figures
  await sink.mark();
  const r = await runBurst(targets, opts.burstTasks, 'nop');
  await sleep(heartbeatIntervalMs(opts) + 1000);
  const s = await sink.stats();
  const after = await daemonStatus(d);
  const lat = summarize(r.latenciesMs);
  return {
    tasks: opts.burstTasks,
    answered: r.answered,
    refused: r.refused,
    failed: r.failed,
    failures: r.failures,
    p50Ms: lat.p50Ms,
    p99Ms: lat.p99Ms,
    maxMs: lat.maxMs,
    seconds: round(r.seconds, 2),
    worstHeartbeatGapMs: s.cns.worstGapMs,
    silentCns: s.cns.silentSinceMark,
    heartbeatsFailed: (after?.cnapi?.heartbeat?.failed ?? 0) - (before?.cnapi?.heartbeat?.failed ?? 0),
    ...(after?.eventLoop ? { eventLoopDelayMaxMs: after.eventLoop.delayMaxMs, eventLoopDelayP99Ms: after.eventLoop.delayP99Ms } : {}),
  };
}

interface DaemonStatusView {
  cnapi?: { heartbeat?: { failed?: number } };
  eventLoop?: { delayMaxMs: number; delayP99Ms: number };
}

async function daemonStatus(d: DaemonProcess): Promise<DaemonStatusView | undefined> {
  return (await d.control<DaemonStatusView>('GET', '/status').catch(() => undefined))?.body;
}

function taskSummary(r: TaskRunResult) {
  return {
    ...summarize(r.latenciesMs),
    failed: r.failed,
    failures: r.failures,
    perSecond: r.seconds > 0 ? round(r.ok / r.seconds, 1) : NaN,
  };
}

function counterDelta(a: SinkStats, b: SinkStats, name: string): number {
  return (b.counters[name] ?? 0) - (a.counters[name] ?? 0);
}

/** Poll the sink until N CNs registered and heartbeated, or the bound passes. */
export async function waitAllHeartbeated(sink: SinkProcess, n: number, timeoutMs: number): Promise<SinkStats> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await sink.stats();
    if ((s.cns.registered >= n && s.cns.heartbeating >= n) || Date.now() >= deadline) return s;
    await sleep(POLL_MS);
  }
}

interface CreateOutcome {
  created: number;
  failed: number;
  seconds: number;
  message: string;
}

/** `mockcloud create-servers N --json` as a user runs it, timed from spawn to exit. */
/** The daemon's JS heap in use, from its /status (undefined when it does not answer). */
async function heapUsedBytes(d: DaemonProcess): Promise<number | undefined> {
  const status = await d.control<{ memory?: { heapUsedBytes?: number } }>('GET', '/status').catch(() => undefined);
  const used = status?.body?.memory?.heapUsedBytes;
  return typeof used === 'number' ? used : undefined;
}

export async function runCreateServers(dataDir: string, n: number, timeoutMs: number): Promise<CreateOutcome> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI_MAIN, 'create-servers', String(n), '--data-dir', dataDir, '--json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MOCKCLOUD_NO_MDATA: '1' },
  });
  const out: Buffer[] = [];
  let err = '';
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => {
    err = (err + d.toString('utf8')).slice(-4096);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const forget = onInterrupt(() => child.kill('SIGKILL'));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  forget();
  const seconds = (performance.now() - started) / 1000;
  let parsed: { created?: unknown[]; errors?: unknown[] } = {};
  try {
    parsed = JSON.parse(Buffer.concat(out).toString('utf8')) as typeof parsed;
  } catch {
    // reported below
  }
  const created = Array.isArray(parsed.created) ? parsed.created.length : 0;
  const failed = Array.isArray(parsed.errors) ? parsed.errors.length : 0;
  const lastLines = err.trim().split('\n').slice(-3).join(' | ');
  return { created, failed, seconds, message: `exit ${code}${lastLines ? `: ${lastLines}` : ''}` };
}

/**
 * The --profile side of a step: one inspector session per daemon, CPU profiles by phase and a
 * heap snapshot, saved beside the results JSON. Does nothing when profiling is off; a profiling
 * failure is recorded in the step's errors and never stops the measurements.
 */
class PhaseProfiler {
  private session: InspectorSession | undefined;
  private running = false;

  constructor(
    private readonly enabled: boolean,
    private readonly n: number,
    private readonly dir: string,
    private readonly result: StepResult,
  ) {}

  async attach(d: DaemonProcess): Promise<void> {
    if (!this.enabled) return;
    await this.guard('attaching the profiler', async () => {
      const m = await d.waitForStderr(/Debugger listening on (ws:\/\/\S+)/, 15_000);
      await mkdir(this.dir, { recursive: true });
      this.session = await InspectorSession.connect(m[1]!);
    });
  }

  async start(): Promise<void> {
    const session = this.session;
    if (!session) return;
    await this.guard('starting the profiler', async () => {
      await startProfile(session);
      this.running = true;
    });
  }

  async stop(phase: string): Promise<void> {
    const session = this.session;
    if (!session || !this.running) return;
    this.running = false;
    await this.guard(`profiling ${phase}`, async () => {
      const summary = await stopProfile(session, phase, path.join(this.dir, `${phase}-${this.n}.cpuprofile`));
      (this.result.profiles ??= []).push(summary);
    });
  }

  async heap(): Promise<void> {
    const session = this.session;
    if (!session) return;
    await this.guard('the heap snapshot', async () => {
      this.result.heap = await heapSnapshot(session, path.join(this.dir, `idle-${this.n}.heapsnapshot`));
    });
  }

  detach(): void {
    this.session?.close();
    this.session = undefined;
    this.running = false;
  }

  private async guard(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.result.errors.push(`${what}: ${(err as Error).message}`);
    }
  }
}

/** Every CN's task address (from daemon.json) and the sink's external network, for task loads. */
export async function taskTargets(d: DaemonProcess, n: number, sink: SinkProcess): Promise<{ targets: TaskTarget[]; net: ExternalNetwork }> {
  const info = (await d.readDaemonJson()) ?? { servers: {} };
  const targets: TaskTarget[] = Object.entries(info.servers).map(([uuid, a]) => ({ uuid, ip: a.ip, port: a.port }));
  if (targets.length < n) throw new Error(`daemon.json lists ${targets.length} of ${n} CNs`);
  const net: ExternalNetwork = {
    uuid: sink.ready.networks.external,
    subnet: sink.ready.networks.externalSubnet,
    gateway: sink.ready.networks.externalGateway,
  };
  return { targets, net };
}
