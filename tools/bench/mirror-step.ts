/**
 * The mirror step (`--mirror N`, issue 18): a DC of N CNs with vmsPerCn VMs each, captured
 * and loaded again, against the sink.
 *
 *   1. daemon A on the sink: create-servers N, then N × vmsPerCn VMs (machine_create), until
 *      the sink's VMAPI has them all (vm-agent reported them);
 *   2. capture  `mockcloud mirror capture` of the sink's CNAPI, VMAPI and NAPI: seconds and
 *      the peak RSS of the capture process (VmHWM), the file's size;
 *   3. daemon A stops, the sink forgets everything (as a new DC would be);
 *   4. load     daemon B, empty, on the sink: `mockcloud mirror load`: seconds, CNs/s and VMs/s
 *      (of the load's server and VM phases), the peak RSS of the load process and the
 *      daemon's RSS after it.
 *
 * Targets (targets.ts MIRROR_TARGETS): load at ≥ 100 CNs/s and ≥ 500 VMs/s. Every wait is bounded; a failure ends the
 * step with the figures it has.
 */
import { spawn } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { onInterrupt } from './cleanup.js';
import { DaemonProcess, sleep } from './daemon-process.js';
import { CLI_MAIN } from './paths.js';
import { readRssBytes } from './proc-stats.js';
import type { SinkProcess } from './sink/sink-process.js';
import { round } from './stats.js';
import { runCreateServers } from './step.js';
import { runTasks, type TaskTarget } from './task-load.js';
import type { BenchOptions, MirrorResult } from './types.js';
import { BENCH_OWNER_UUID, machineCreateParams, type ExternalNetwork } from './vm-payload.js';

interface Measured {
  code: number | null;
  stdout: string;
  stderr: string;
  seconds: number;
  /** Peak resident set of the process (VmHWM), as last read before it exited. */
  maxRssBytes: number;
}

export async function runMirrorStep(n: number, ctx: { sink: SinkProcess; opts: BenchOptions; say: (msg: string) => void }): Promise<MirrorResult> {
  const { sink, opts } = ctx;
  const started = performance.now();
  const say = (msg: string): void => ctx.say(`[mirror N=${n} +${((performance.now() - started) / 1000).toFixed(1)}s] ${msg}`);
  const result: MirrorResult = { n, vmsPerCn: opts.vmsPerCn, ok: false, errors: [], seconds: 0 };
  const dirs: string[] = [];
  const forget = opts.keep ? () => undefined : onInterrupt(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  let daemon: DaemonProcess | undefined;
  const startDaemon = async (): Promise<DaemonProcess> => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), `mockcloud-bench-mirror-${n}-`));
    dirs.push(dataDir);
    if (opts.timings) await writeFile(path.join(dataDir, 'config.json'), `${JSON.stringify({ timings: opts.timings }, null, 2)}\n`);
    daemon = (await DaemonProcess.start({ dataDir, urls: sink.urls, bindIp: opts.bindIp, logLevel: opts.daemonLogLevel, readyTimeoutMs: 60_000 + n * 20 })).daemon;
    return daemon;
  };
  const stopDaemon = async (): Promise<void> => {
    const d = daemon;
    daemon = undefined;
    if (d && !(await d.stop()).clean) result.errors.push(`daemon did not stop cleanly (${d.describeExit()})`);
  };
  try {
    await sink.reset('all');
    // 1. the DC to capture
    say(`DC: create-servers ${n}, ${opts.vmsPerCn} VMs per CN`);
    let d = await startDaemon();
    const created = await runCreateServers(d.dataDir, n, 120_000 + n * 100);
    if (created.created < n) throw new Error(`create-servers made ${created.created} of ${n} CNs: ${created.message}`);
    const info = await d.readDaemonJson();
    const targets: TaskTarget[] = Object.entries(info?.servers ?? {}).map(([uuid, a]) => ({ uuid, ip: a.ip, port: a.port }));
    const net: ExternalNetwork = { uuid: sink.ready.networks.external, subnet: sink.ready.networks.externalSubnet, gateway: sink.ready.networks.externalGateway };
    const vmRun = await runTasks({
      targets,
      task: 'machine_create',
      params: (i, t) => machineCreateParams(i, t.uuid, net),
      count: opts.vmsPerCn * n,
      concurrency: opts.vmConcurrency,
      timeBudgetMs: opts.vmBudgetSeconds * 1000,
    });
    if (vmRun.failed > 0) result.errors.push(...vmRun.failures.slice(0, 2));
    const vmsWanted = vmRun.ok;
    const deadline = Date.now() + 60_000 + vmsWanted * 10;
    while ((await sink.stats()).store.activeVms < vmsWanted && Date.now() < deadline) await sleep(250);
    const stored = (await sink.stats()).store.activeVms;
    if (stored < vmsWanted) result.errors.push(`the sink's VMAPI has ${stored} of ${vmsWanted} VMs`);
    result.dc = { servers: n, vms: vmsWanted };

    // 2. capture
    const file = path.join(dirs[0]!, 'dc.mirror.gz');
    say(`capture: ${n} CNs, ${vmsWanted} VMs`);
    const cap = await runMeasured(
      ['mirror', 'capture', '--data-dir', d.dataDir, '--cnapi-url', sink.urls.cnapi, '--vmapi-url', sink.urls.vmapi, '--napi-url', sink.urls.napi, '--admin-uuid', BENCH_OWNER_UUID, '-o', file, '--json'],
      120_000 + (n + vmsWanted) * 20,
    );
    if (cap.code !== 0) throw new Error(`mirror capture exited ${cap.code}: ${cap.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    const header = JSON.parse(cap.stdout) as { counts: { server: number; vm: number } };
    result.capture = {
      seconds: round(cap.seconds, 2),
      maxRssBytes: cap.maxRssBytes,
      fileBytes: statSync(file).size,
      servers: header.counts.server,
      vms: header.counts.vm,
      vmsPerSecond: round(header.counts.vm / cap.seconds, 1),
    };

    // 3. a new, empty DC
    await stopDaemon();
    await sink.reset('all');

    // 4. load
    d = await startDaemon();
    say('load into an empty daemon');
    const load = await runMeasured(['mirror', 'load', file, '--data-dir', d.dataDir, '--json'], 120_000 + n * 200 + vmsWanted * 50);
    let report: { counts: Record<string, { created: number; failed: number }>; seconds: Record<string, number>; errors: { message: string }[] } | undefined;
    try {
      report = JSON.parse(load.stdout) as typeof report;
    } catch {
      throw new Error(`mirror load exited ${load.code}: ${load.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    }
    for (const e of report!.errors.slice(0, 3)) result.errors.push(`load: ${e.message}`);
    const servers = report!.counts.server!;
    const vms = report!.counts.vm!;
    const serverSeconds = report!.seconds.server ?? NaN;
    const vmSeconds = report!.seconds.vm ?? NaN;
    result.load = {
      seconds: round(load.seconds, 2),
      serversCreated: servers.created,
      vmsCreated: vms.created,
      failed: servers.failed + vms.failed,
      serverSeconds: round(serverSeconds, 2),
      vmSeconds: round(vmSeconds, 2),
      serversPerSecond: round(servers.created / serverSeconds, 1),
      vmsPerSecond: round(vms.created / vmSeconds, 1),
      maxRssBytes: load.maxRssBytes,
      daemonRssBytes: readRssBytes(d.pid),
    };
    if (servers.created < n) result.errors.push(`load created ${servers.created} of ${n} CNs`);
    if (vms.created < vmsWanted) result.errors.push(`load created ${vms.created} of ${vmsWanted} VMs`);
    await stopDaemon();
    result.ok = result.errors.length === 0;
  } catch (err) {
    result.errors.push(err instanceof Error ? err.message : String(err));
  } finally {
    await stopDaemon().catch((err: unknown) => result.errors.push(`stopping the daemon: ${(err as Error).message}`));
    if (!opts.keep) for (const dir of dirs) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    else say(`kept ${dirs.join(', ')}`);
    forget();
    result.seconds = round((performance.now() - started) / 1000, 1);
  }
  return result;
}

/** The built CLI as a user runs it, timed from spawn to exit, its peak RSS sampled meanwhile. */
async function runMeasured(args: string[], timeoutMs: number): Promise<Measured> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MOCKCLOUD_NO_MDATA: '1' } });
  const out: Buffer[] = [];
  let err = '';
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => (err = (err + b.toString('utf8')).slice(-8192)));
  let maxRss = 0;
  const sample = async (): Promise<void> => {
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8').catch(() => '');
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    if (m) maxRss = Math.max(maxRss, Number(m[1]) * 1024);
  };
  const sampler = setInterval(() => void sample(), 50);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const forget = onInterrupt(() => child.kill('SIGKILL'));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearInterval(sampler);
  clearTimeout(timer);
  forget();
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: err, seconds: (performance.now() - started) / 1000, maxRssBytes: maxRss };
}
