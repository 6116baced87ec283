/**
 * The agents step (`--agents N`, issue 29): a fleet of N CNs with vmsPerCn VMs each (half the
 * CNs' VMs tagged role=web with their firewall enabled), idle with config-agent and firewaller
 * off (no SAPI, no FWAPI) and then on (the sink's SAPI and FWAPI), each after a restart and the
 * same settling: idle CPU and RSS per CN of both, the requests to SAPI and FWAPI per second
 * next to what the real agents send (config-agent: one GET /configs per served instance every
 * 120 s on average; firewaller: one POST /resolve per owner every 30 minutes), and a rule that
 * applies to the web VMs (`FROM any TO tag "role" = "web" ALLOW tcp PORT 80`) sent by FWAPI:
 * the time until it is in the store of every CN hosting a web VM.
 *
 * Targets: idle CPU and RSS per CN with the agents within 10 % of without.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { onInterrupt } from './cleanup.js';
import { DaemonProcess, sleep } from './daemon-process.js';
import { cpuPercent, readRssBytes, sampleCpu } from './proc-stats.js';
import type { SinkProcess } from './sink/sink-process.js';
import { round } from './stats.js';
import { runCreateServers } from './step.js';
import { runTasks, type TaskTarget } from './task-load.js';
import type { AgentsResult, BenchOptions } from './types.js';
import { BENCH_OWNER_UUID, machineCreateParams, type ExternalNetwork } from './vm-payload.js';

/** config-agent's served agents (cn-agent, vm-agent, net-agent, cmon-agent) and its mean interval. */
const CONFIG_INSTANCES_PER_CN = 4;
const CONFIG_MEAN_INTERVAL_S = 120;
const FIREWALLER_SYNC_S = 30 * 60;
const RULE = 'FROM any TO tag "role" = "web" ALLOW tcp PORT 80';

interface AgentStatus {
  agents?: Record<string, Record<string, number>>;
}

export async function runAgentsStep(n: number, ctx: { sink: SinkProcess; opts: BenchOptions; say: (msg: string) => void }): Promise<AgentsResult> {
  const { sink, opts } = ctx;
  const started = performance.now();
  const say = (msg: string): void => ctx.say(`[agents N=${n} +${((performance.now() - started) / 1000).toFixed(1)}s] ${msg}`);
  const result: AgentsResult = { n, vmsPerCn: opts.vmsPerCn, ok: false, errors: [], seconds: 0 };
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `mockcloud-bench-agents-${n}-`));
  const forget = opts.keep ? () => undefined : onInterrupt(() => rmSync(dataDir, { recursive: true, force: true }));
  let daemon: DaemonProcess | undefined;
  const start = async (agents: boolean): Promise<DaemonProcess> => {
    const urls = agents ? { ...sink.urls, ...sink.agentUrls } : sink.urls;
    daemon = (await DaemonProcess.start({ dataDir, urls, bindIp: opts.bindIp, logLevel: opts.daemonLogLevel, readyTimeoutMs: 120_000 + n * 30 })).daemon;
    return daemon;
  };
  const stop = async (): Promise<void> => {
    const d = daemon;
    daemon = undefined;
    if (d && !(await d.stop()).clean) result.errors.push(`daemon did not stop cleanly (${d.describeExit()})`);
  };
  const status = async (d: DaemonProcess): Promise<AgentStatus> => (await d.control<AgentStatus>('GET', '/status').catch(() => undefined))?.body ?? {};
  const idle = async (d: DaemonProcess): Promise<{ cpuPercent: number; rssBytes: number; seconds: number }> => {
    await sleep(opts.settleSeconds * 1000);
    const c0 = sampleCpu(d.pid);
    // Long enough for config-agent's polls to average out (each CN's next check comes 60-180 s
    // after its last), unless a CI run asks for seconds.
    await sleep((opts.quick ? opts.windowSeconds : Math.max(opts.windowSeconds, 180)) * 1000);
    const c1 = sampleCpu(d.pid);
    return { cpuPercent: round(cpuPercent(c0, c1), 2), rssBytes: readRssBytes(d.pid), seconds: (c1.atMs - c0.atMs) / 1000 };
  };
  try {
    if (opts.timings) await writeFile(path.join(dataDir, 'config.json'), `${JSON.stringify({ timings: opts.timings }, null, 2)}\n`);
    await sink.reset('all');
    say('baseline: daemon with 0 CNs');
    let d = await start(false);
    await sleep(opts.settleSeconds * 1000);
    const baselineRss = readRssBytes(d.pid);
    say(`create-servers ${n}, ${opts.vmsPerCn} VMs per CN`);
    const created = await runCreateServers(dataDir, n, 120_000 + n * 100);
    if (created.created < n) throw new Error(`create-servers made ${created.created} of ${n} CNs: ${created.message}`);
    const info = await d.readDaemonJson();
    const targets: TaskTarget[] = Object.entries(info?.servers ?? {}).map(([uuid, a]) => ({ uuid, ip: a.ip, port: a.port }));
    const web = new Set(targets.filter((_, i) => i % 2 === 0).map((t) => t.uuid));
    const net: ExternalNetwork = { uuid: sink.ready.networks.external, subnet: sink.ready.networks.externalSubnet, gateway: sink.ready.networks.externalGateway };
    const vmRun = await runTasks({
      targets,
      task: 'machine_create',
      params: (i, t) => ({
        ...machineCreateParams(i, t.uuid, net),
        ...(web.has(t.uuid) ? { tags: { role: 'web' }, firewall_enabled: true } : { tags: { role: 'db' } }),
      }),
      count: opts.vmsPerCn * n,
      concurrency: opts.vmConcurrency,
      timeBudgetMs: opts.vmBudgetSeconds * 1000,
    });
    if (vmRun.failed > 0) result.errors.push(...vmRun.failures.slice(0, 2));
    // machine_create goes round the CNs: every CN gets its VMs when all of them were made.
    const webCns = web.size;

    say('idle with config-agent and firewaller off');
    await stop();
    d = await start(false);
    const off = await idle(d);
    await stop();

    say('idle with config-agent and firewaller on');
    const a0 = await sink.agentStats();
    d = await start(true);
    const readyBy = Date.now() + 120_000 + n * 20;
    for (;;) {
      const s = (await status(d)).agents ?? {};
      if (((s['config-agent']?.checks ?? 0) >= n && (s.firewaller?.syncs ?? 0) >= n) || Date.now() > readyBy) break;
      await sleep(500);
    }
    const a1 = await sink.agentStats();
    const on = await idle(d);
    const a2 = await sink.agentStats();
    const delta = (name: string): number => (a2.counters[name] ?? 0) - (a1.counters[name] ?? 0);
    const sapiPerSecond = (delta('sapi.config.200') + delta('sapi.config.304')) / on.seconds;
    const fwapiPerSecond = (delta('fwapi.resolve') + delta('fwapi.other')) / on.seconds;
    result.off = { cpuPercent: off.cpuPercent, rssBytes: off.rssBytes, rssPerCnBytes: Math.round((off.rssBytes - baselineRss) / n) };
    result.on = { cpuPercent: on.cpuPercent, rssBytes: on.rssBytes, rssPerCnBytes: Math.round((on.rssBytes - baselineRss) / n) };
    result.startRequests = {
      sapiConfigs: (a1.counters['sapi.config.200'] ?? 0) - (a0.counters['sapi.config.200'] ?? 0) + (a1.counters['sapi.config.304'] ?? 0) - (a0.counters['sapi.config.304'] ?? 0),
      fwapiResolves: (a1.counters['fwapi.resolve'] ?? 0) - (a0.counters['fwapi.resolve'] ?? 0),
    };
    result.rates = {
      sapiPerSecond: round(sapiPerSecond, 1),
      sapiRealPerSecond: round((n * CONFIG_INSTANCES_PER_CN) / CONFIG_MEAN_INTERVAL_S, 1),
      fwapiPerSecond: round(fwapiPerSecond, 2),
      fwapiRealPerSecond: round(webCns / FIREWALLER_SYNC_S, 2),
    };

    say(`rule to the ${webCns} CNs hosting web VMs`);
    const before = (await status(d)).agents?.firewaller?.rulesAdded ?? 0;
    const t0 = performance.now();
    await sink.sendRule(RULE, BENCH_OWNER_UUID);
    const ruleBy = Date.now() + 120_000 + n * 10;
    let added = 0;
    for (;;) {
      added = ((await status(d)).agents?.firewaller?.rulesAdded ?? 0) - before;
      if (added >= webCns || Date.now() > ruleBy) break;
      await sleep(100);
    }
    result.rule = { cns: webCns, reached: added, seconds: round((performance.now() - t0) / 1000, 2) };
    if (added < webCns) result.errors.push(`the rule reached ${added} of ${webCns} CNs`);
    result.ok = result.errors.length === 0;
  } catch (err) {
    result.errors.push((err as Error).message);
  } finally {
    await stop().catch(() => undefined);
    result.seconds = round((performance.now() - started) / 1000, 1);
    if (!opts.keep) rmSync(dataDir, { recursive: true, force: true });
    forget();
  }
  return result;
}

/** The agents step as table lines, with its targets. */
export function agentsLines(a: AgentsResult): string[] {
  const pct = (on: number, off: number): string => (off > 0 ? `${(((on - off) / off) * 100).toFixed(1)} %` : 'n/a');
  const lines = [`agents N=${a.n} × ${a.vmsPerCn} VMs: ${a.ok ? 'ok' : `FAILED (${a.errors.join('; ')})`} in ${a.seconds} s`];
  if (a.off && a.on) {
    lines.push(`  idle CPU        off ${a.off.cpuPercent} %   on ${a.on.cpuPercent} %   (${pct(a.on.cpuPercent, a.off.cpuPercent)}; target within 10 %)`);
    lines.push(`  RSS per CN      off ${(a.off.rssPerCnBytes / 1024).toFixed(1)} KiB   on ${(a.on.rssPerCnBytes / 1024).toFixed(1)} KiB   (${pct(a.on.rssPerCnBytes, a.off.rssPerCnBytes)}; target within 10 %)`);
  }
  if (a.rates) {
    lines.push(`  SAPI requests   ${a.rates.sapiPerSecond}/s idle (the real agents: ${a.rates.sapiRealPerSecond}/s)`);
    lines.push(`  FWAPI requests  ${a.rates.fwapiPerSecond}/s idle (the real agents: ${a.rates.fwapiRealPerSecond}/s)`);
  }
  if (a.startRequests) lines.push(`  at start        ${a.startRequests.sapiConfigs} GET /configs, ${a.startRequests.fwapiResolves} POST /resolve`);
  if (a.rule) lines.push(`  rule fan-out    ${a.rule.reached} of ${a.rule.cns} CNs' stores in ${a.rule.seconds} s`);
  return lines;
}
