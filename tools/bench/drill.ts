/**
 * `npm run drill -- [flags]`: the reliability drills of issue 24, against a daemon as an
 * operator runs it, with the figures printed and written to tools/bench/results/drill.json
 * (docs/performance.md shows them: `npm run bench -- --from tools/bench/results/latest.json`).
 *
 *   flood   N CNs reporting to the bench's sink; idle sockets (they connect and send nothing,
 *           and reconnect at once when closed) to the CNs' cn-agent ports and to the control
 *           API, far past the caps, for a while; meanwhile `nop` tasks to every CN and
 *           `GET /status`, as CNAPI and the CLI send them: their failures and p99, the worst
 *           heartbeat gap (the sink's), what the daemon shed, and its WARN lines about caps.
 *   burst   after the flood: tasks sent all at once over the CNs; the worst heartbeat gap.
 *   churn   a daemon with its embedded dev headnode; `ensure-servers K` then `ensure-servers 0`,
 *           R rounds, while a second `ensure-servers` loop runs against the same daemon; then
 *           NAPI's NICs and SAPI's agent instances that belong to no CN CNAPI has.
 *
 * The flood holds one descriptor per socket in this process: `ulimit -n` must be above it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { cleanUpNow, onInterrupt } from './cleanup.js';
import { DaemonProcess, sleep } from './daemon-process.js';
import { CLI_ENV, CLI_MAIN } from './paths.js';
import { DEFAULT_DRILL_JSON } from './drill-report.js';
import { readRssBytes } from './proc-stats.js';
import { SinkProcess } from './sink/sink-process.js';
import { round, summarize, type LatencySummary } from './stats.js';
import { closeTaskAgent, postTask, runBurst, type TaskTarget } from './task-load.js';
import type { DrillReport, FloodFigures } from './drill-report.js';

export interface DrillOptions {
  cns: number;
  floodCn: number;
  floodControl: number;
  floodSeconds: number;
  burst: number;
  churnRounds: number;
  churnCount: number;
  churnOther: number;
  only: ('flood' | 'churn')[];
  json: string;
  cpuProf?: string;
}

const say = (msg: string): void => void process.stderr.write(`drill: ${msg}\n`);

function parseOptions(argv: string[]): DrillOptions {
  const a = yargs(argv)
    .scriptName('npm run drill --')
    .option('cns', { type: 'number', default: 2000, describe: 'CNs of the flood and burst daemon' })
    .option('flood-cn', { type: 'number', default: 14_900, describe: "idle sockets to the CNs' cn-agent ports" })
    .option('flood-control', { type: 'number', default: 4000, describe: 'idle sockets to the control API' })
    .option('flood-seconds', { type: 'number', default: 30, describe: 'how long the flood goes on' })
    .option('burst', { type: 'number', default: 5000, describe: 'nop tasks sent at once after the flood (0: none)' })
    .option('churn-rounds', { type: 'number', default: 5 })
    .option('churn-count', { type: 'number', default: 300, describe: 'ensure-servers K then 0, each round' })
    .option('churn-other', { type: 'number', default: 150, describe: 'the concurrent loop: ensure-servers K then 0' })
    .option('only', { type: 'string', choices: ['flood', 'churn'], describe: 'run one drill only' })
    .option('json', { type: 'string', default: path.relative(process.cwd(), DEFAULT_DRILL_JSON) })
    .option('cpu-prof', { type: 'string', describe: "the flood daemon's V8 CPU profile goes to this dir (node --cpu-prof)" })
    .strict()
    .version(false)
    .help()
    .parseSync();
  const whole = (name: string, v: number, min: number): number => {
    if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be a whole number ≥ ${min}`);
    return v;
  };
  return {
    cns: whole('cns', a.cns, 1),
    floodCn: whole('flood-cn', a['flood-cn'], 0),
    floodControl: whole('flood-control', a['flood-control'], 0),
    floodSeconds: whole('flood-seconds', a['flood-seconds'], 1),
    burst: whole('burst', a.burst, 0),
    churnRounds: whole('churn-rounds', a['churn-rounds'], 1),
    churnCount: whole('churn-count', a['churn-count'], 1),
    churnOther: whole('churn-other', a['churn-other'], 0),
    only: a.only ? [a.only as 'flood' | 'churn'] : ['flood', 'churn'],
    json: path.resolve(a.json),
    ...(a['cpu-prof'] ? { cpuProf: path.resolve(a['cpu-prof']) } : {}),
  };
}

/**
 * Idle sockets to the targets, `count` in all, opened a thousand connects at a time; one the
 * daemon closes is opened again at once while the flood runs (a client that reconnects).
 */
class Flood {
  private readonly open = new Set<net.Socket>();
  private running = true;
  private connecting = 0;
  private next = 0;
  held = 0;
  heldMax = 0;
  closedByDaemon = 0;

  constructor(
    private readonly targets: readonly { ip: string; port: number }[],
    private readonly count: number,
  ) {}

  start(): void {
    this.fill();
  }

  private fill(): void {
    while (this.running && this.open.size < this.count && this.connecting < 1000) this.connect(this.targets[this.next++ % this.targets.length]!);
  }

  private connect(t: { ip: string; port: number }): void {
    const s = net.connect(t.port, t.ip);
    this.open.add(s);
    this.connecting++;
    let connected = false;
    s.once('connect', () => {
      connected = true;
      this.connecting--;
      this.held++;
      this.heldMax = Math.max(this.heldMax, this.held);
      this.fill();
    });
    s.on('error', () => undefined);
    s.on('data', () => undefined);
    s.once('close', () => {
      this.open.delete(s);
      if (connected) this.held--;
      else this.connecting--;
      if (!this.running) return;
      this.closedByDaemon++;
      setTimeout(() => this.fill(), 20);
    });
  }

  stop(): void {
    this.running = false;
    for (const s of this.open) s.destroy();
  }
}

/** Prompt clients: requests one after another on `workers` loops until stopped. */
async function promptLoop(workers: number, stop: () => boolean, one: (i: number) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (!stop()) await one(i++);
    }),
  );
}

async function floodDrill(opts: DrillOptions, report: DrillReport): Promise<void> {
  const sink = await SinkProcess.start();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-drill-flood-'));
  const forget = onInterrupt(() => rmSync(dataDir, { recursive: true, force: true }));
  let daemon: DaemonProcess | undefined;
  try {
    say(`flood: daemon with ${opts.cns} CNs against the sink (pid ${sink.pid})`);
    ({ daemon } = await DaemonProcess.start({
      dataDir,
      urls: sink.urls,
      bindIp: '127.0.0.1',
      logLevel: 'warn',
      readyTimeoutMs: 60_000,
      ...(opts.cpuProf ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] } : {}),
    }));
    const d = daemon;
    for (let left = opts.cns; left > 0; left -= 500) {
      const res = await d.control<{ created: unknown[]; errors: unknown[] }>('POST', '/servers', { count: Math.min(500, left) }, 300_000);
      if (res.status !== 200) throw new Error(`create-servers: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    const info = await d.waitServersListed(opts.cns, 120_000);
    const targets: TaskTarget[] = Object.entries(info.servers).map(([uuid, a]) => ({ uuid, ip: a.ip, port: a.port }));
    const deadline = Date.now() + 120_000;
    while ((await sink.stats()).cns.heartbeating < opts.cns && Date.now() < deadline) await sleep(500);
    say(`flood: ${opts.cns} CNs heartbeating; settling 10 s`);
    await sleep(10_000);

    const control = new URL(info.control.url);
    const cnFlood = new Flood(targets, opts.floodCn);
    const controlFlood = new Flood([{ ip: control.hostname, port: Number(control.port) }], opts.floodControl);
    await sink.mark();
    const t0 = performance.now();
    cnFlood.start();
    controlFlood.start();
    say(`flood: ${opts.floodCn} idle sockets to the CN ports, ${opts.floodControl} to the control API, for ${opts.floodSeconds} s`);
    const until = Date.now() + opts.floodSeconds * 1000;
    const stop = (): boolean => Date.now() >= until;
    const tasks: number[] = [];
    const taskFailures: string[] = [];
    const status: number[] = [];
    const statusFailures: string[] = [];
    let tasksFailed = 0;
    let statusFailed = 0;
    const cli = new Probe();
    const socket = (await d.readDaemonJson())?.control.socket;
    await Promise.all([
      promptLoop(socket ? 1 : 0, stop, async () => {
        await cli.time(() => socketGet(socket!, '/status'));
        await sleep(200);
      }),
      promptLoop(8, stop, async (i) => {
        const target = targets[i % targets.length]!;
        const started = performance.now();
        try {
          const r = await postTask(target, 'nop', {});
          if (r.status === 200) tasks.push(performance.now() - started);
          else if (++tasksFailed <= 5) taskFailures.push(`HTTP ${r.status}`);
        } catch (err) {
          if (++tasksFailed <= 5) taskFailures.push((err as Error).message);
        }
      }),
      promptLoop(1, stop, async () => {
        const started = performance.now();
        try {
          const res = await fetch(`${info.control.url}/status`, { signal: AbortSignal.timeout(10_000) });
          await res.arrayBuffer();
          if (res.status === 200) status.push(performance.now() - started);
          else if (++statusFailed <= 5) statusFailures.push(`HTTP ${res.status}`);
        } catch (err) {
          if (++statusFailed <= 5) statusFailures.push((err as Error).message);
        }
        await sleep(200);
      }),
    ]);
    const seconds = (performance.now() - t0) / 1000;
    const afterStatus = await d.control<{ cnAgent?: { connections?: unknown } }>('GET', '/status');
    const rss = readRssBytes(d.pid);
    cnFlood.stop();
    controlFlood.stop();
    await sleep(5000 + 1000); // a heartbeat interval: a CN held up by the flood shows its late beat
    const s = await sink.stats();
    const log = await readFile(d.logFile, 'utf8').catch(() => '');
    report.flood = {
      cns: opts.cns,
      socketsAsked: { cn: opts.floodCn, control: opts.floodControl },
      socketsHeldMax: cnFlood.heldMax + controlFlood.heldMax,
      closedByDaemon: cnFlood.closedByDaemon + controlFlood.closedByDaemon,
      seconds: round(seconds, 1),
      tasks: { ...summarize(tasks), failed: tasksFailed, failures: taskFailures },
      status: { ...summarize(status), failed: statusFailed, failures: statusFailures },
      cliStatus: cli.figures(),
      worstHeartbeatGapMs: s.cns.worstGapMs,
      silentCns: s.cns.silentSinceMark,
      cnAgentConnections: afterStatus.body.cnAgent?.connections,
      capWarnings: log.split('\n').filter((l) => l.includes('connection cap of')).length,
      daemonRssBytes: rss,
    };
    printFlood(report.flood);

    if (opts.burst > 0) {
      say(`burst: ${opts.burst} nop tasks at once over ${targets.length} CNs`);
      await sink.mark();
      const r = await runBurst(targets, opts.burst, 'nop');
      await sleep(5000 + 1000);
      const after = await sink.stats();
      report.burst = {
        tasks: opts.burst,
        answered: r.answered,
        refused: r.refused,
        failed: r.failed,
        p99Ms: summarize(r.latenciesMs).p99Ms,
        worstHeartbeatGapMs: after.cns.worstGapMs,
      };
      say(
        `burst: ${r.answered} answered, ${r.refused} refused (503), ${r.failed} failed; p99 ${report.burst.p99Ms} ms; ` +
          `worst heartbeat gap ${(after.cns.worstGapMs / 1000).toFixed(2)} s`,
      );
    }
  } finally {
    await daemon?.stop();
    await sink.stop();
    closeTaskAgent();
    await rm(dataDir, { recursive: true, force: true });
    forget();
  }
}

/** Latencies and failures of one kind of request. */
class Probe {
  private readonly ms: number[] = [];
  private readonly failures: string[] = [];
  private failed = 0;

  async time(fn: () => Promise<number>): Promise<void> {
    const started = performance.now();
    try {
      const status = await fn();
      if (status === 200) this.ms.push(performance.now() - started);
      else if (++this.failed <= 5) this.failures.push(`HTTP ${status}`);
    } catch (err) {
      if (++this.failed <= 5) this.failures.push((err as Error).message);
    }
  }

  figures(): LatencySummary & { failed: number; failures: string[] } {
    return { ...summarize(this.ms), failed: this.failed, failures: this.failures };
  }
}

/** A GET over a Unix socket, as the CLI sends it; resolves with the status. */
function socketGet(socketPath: string, urlPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: urlPath, headers: { host: 'localhost' }, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
  });
}

function printFlood(f: FloodFigures): void {
  say(
    `flood: held up to ${f.socketsHeldMax} idle sockets, ${f.closedByDaemon} closed by the daemon and reopened, over ${f.seconds} s; ` +
      `tasks ${f.tasks.count} answered, ${f.tasks.failed} failed, p99 ${f.tasks.p99Ms} ms (max ${f.tasks.maxMs}); ` +
      `/status ${f.status.count} answered, ${f.status.failed} failed, p99 ${f.status.p99Ms} ms (max ${f.status.maxMs}); ` +
      `/status on the CLI's socket ${f.cliStatus.count} answered, ${f.cliStatus.failed} failed, p99 ${f.cliStatus.p99Ms} ms; ` +
      `worst heartbeat gap ${(f.worstHeartbeatGapMs / 1000).toFixed(2)} s (${f.silentCns} CNs silent); ${f.capWarnings} WARN line(s) about caps; ` +
      `daemon RSS ${Math.round(f.daemonRssBytes / 2 ** 20)} MiB`,
  );
}

/** Why commands failed: each distinct last stderr line of a failed command, with its count. */
const cliFailures = new Map<string, number>();

function cli(args: string[], timeoutMs = 600_000): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_MAIN, ...args], { env: CLI_ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-4096)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) {
        // Grouped by kind: the counts in a message ("hosts 240 mock CNs, not 300") vary run to run.
        const line = err.trim().split('\n').filter((l) => !l.startsWith('(see ')).at(-1) ?? `exit ${code}`;
        const last = `${args[0]} ${args[1]}: ${line.replace(/\b\d+\b/g, 'N')}`;
        cliFailures.set(last, (cliFailures.get(last) ?? 0) + 1);
      }
      resolve(code ?? -1);
    });
  });
}

type Obj = Record<string, any>;

async function getJson(url: string, headers: Record<string, string> = {}): Promise<any> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(60_000) });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return res.json();
}

async function churnDrill(opts: DrillOptions, report: DrillReport): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-drill-churn-'));
  const forgetDir = onInterrupt(() => rmSync(dataDir, { recursive: true, force: true }));
  let child: ChildProcess | undefined;
  try {
    say(`churn: a daemon with its dev headnode; ${opts.churnRounds} rounds of ensure-servers ${opts.churnCount} / 0 beside a loop of ensure-servers ${opts.churnOther} / 0`);
    await mkdir(dataDir, { recursive: true });
    const args = ['daemon', '--data-dir', dataDir, '--control-port', '0', '--cmon-port', '0', '--servers', '0', '--ui-address', 'none', '--log-level', 'warn'];
    const c = spawn(process.execPath, [CLI_MAIN, ...args], { env: CLI_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    const forgetChild = onInterrupt(() => c.kill('SIGKILL'));
    let out = '';
    c.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    c.stderr!.resume();
    const deadline = Date.now() + 120_000;
    while (!/mock CNs: \d+ \(wanted/.test(out) && c.exitCode === null && Date.now() < deadline) await sleep(200);
    if (c.exitCode !== null) throw new Error('the churn daemon exited while starting');
    const info = JSON.parse(await readFile(path.join(dataDir, 'daemon.json'), 'utf8')) as Obj;
    const dd = ['--data-dir', dataDir];
    const t0 = performance.now();
    const codes: number[] = [];
    const loop = async (count: number): Promise<void> => {
      for (let r = 0; r < opts.churnRounds; r++) {
        codes.push(await cli(['ensure-servers', String(count), ...dd]));
        codes.push(await cli(['ensure-servers', '0', ...dd]));
      }
    };
    await Promise.all([loop(opts.churnCount), opts.churnOther > 0 ? loop(opts.churnOther) : Promise.resolve()]);
    for (let i = 0; i < 3 && (await cli(['ensure-servers', '0', ...dd])) !== 0; i++) await sleep(1000);
    // The background clean-ups (SAPI deletes) finish.
    const settle = Date.now() + 120_000;
    for (;;) {
      const st = (await getJson(`${info.control.url}/status`)) as Obj;
      if ((st.deletingServers?.length ?? 0) === 0 && (st.agents?.['sapi-instances']?.pendingDeletes ?? 0) === 0) break;
      if (Date.now() > settle) break;
      await sleep(500);
    }
    const seconds = (performance.now() - t0) / 1000;
    const urls = info.urls as Obj;
    const servers = (await getJson(`${urls.cnapi}/servers?extras=sysinfo`)) as Obj[];
    const known = new Set(servers.map((s) => s.uuid as string));
    const knownMacs = new Set<string>();
    for (const s of servers) for (const nic of Object.values((s.sysinfo?.['Network Interfaces'] ?? {}) as Obj)) knownMacs.add(String((nic as Obj)['MAC Address']));
    const examples: string[] = [];
    let orphanNics = 0;
    for (let offset = 0; ; offset += 1000) {
      const page = (await getJson(`${urls.napi}/nics?limit=1000&offset=${offset}`)) as Obj[];
      for (const n of page) {
        const orphan =
          (n.belongs_to_type === 'server' && !known.has(n.belongs_to_uuid)) ||
          (n.belongs_to_type === 'other' && (n.nic_tags_provided ?? []).includes('admin') && !knownMacs.has(n.mac)) ||
          (n.belongs_to_type === 'zone' && n.cn_uuid && !known.has(n.cn_uuid));
        if (orphan) {
          orphanNics++;
          if (examples.length < 5) examples.push(`NIC ${n.mac} ${n.belongs_to_type} ${n.belongs_to_uuid} (created ${n.created_timestamp ?? '?'})`);
        }
      }
      if (page.length < 1000) break;
    }
    let orphanInstances = 0;
    if (urls.sapi) {
      const instances = (await getJson(`${urls.sapi}/instances?type=agent`, { 'accept-version': '~2' })) as Obj[];
      for (const i of instances) {
        if (!known.has(i.params?.server_uuid)) {
          orphanInstances++;
          if (examples.length < 10) examples.push(`SAPI instance ${i.uuid} of ${i.params?.server_uuid}`);
        }
      }
    }
    const st = (await getJson(`${info.control.url}/status`)) as Obj;
    report.churn = {
      rounds: opts.churnRounds,
      count: opts.churnCount,
      other: opts.churnOther,
      seconds: round(seconds, 1),
      exitCodes: codes,
      failures: [...cliFailures].map(([line, n]) => `${n}× ${line}`),
      cnsAfter: Number(st.servers ?? 0),
      napiNicsWithoutCn: orphanNics,
      sapiInstancesWithoutCn: orphanInstances,
      examples,
    };
    say(
      `churn: ${opts.churnRounds} rounds in ${report.churn.seconds} s (ensure-servers exits: ${codes.join(' ')}); ` +
        `${orphanNics} NAPI NIC(s) and ${orphanInstances} SAPI instance(s) without a CN${examples.length ? `: ${examples.join('; ')}` : ''}`,
    );
    for (const f of report.churn.failures) say(`churn: failed: ${f}`);
    c.kill('SIGTERM');
    await new Promise((r) => c.once('exit', r));
    forgetChild();
  } finally {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
    forgetDir();
  }
}

async function main(): Promise<void> {
  const opts = parseOptions(hideBin(process.argv));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      cleanUpNow();
      process.exit(130);
    });
  }
  const fdLimit = await readFile('/proc/self/limits', 'utf8')
    .then((t) => /^Max open files\s+(\d+)/m.exec(t)?.[1] ?? '?')
    .catch(() => '?');
  const { json, cpuProf: _prof, ...options } = opts;
  const report: DrillReport = {
    version: 1,
    startedAt: new Date().toISOString(),
    finishedAt: '',
    host: { cpus: os.cpus().length, node: process.version, fdLimit, load: { start: os.loadavg(), end: [] } },
    options,
  };
  say(`load average ${report.host.load!.start.map((x) => x.toFixed(2)).join(', ')} (${os.cpus().length} CPUs)`);
  if (opts.only.includes('flood')) await floodDrill(opts, report);
  if (opts.only.includes('churn')) await churnDrill(opts, report);
  report.finishedAt = new Date().toISOString();
  report.host.load!.end = os.loadavg();
  say(`load average ${report.host.load!.end.map((x) => x.toFixed(2)).join(', ')} at the end`);
  await mkdir(path.dirname(json), { recursive: true });
  await writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  say(`wrote ${path.relative(process.cwd(), json)}`);
  const bad =
    (report.flood &&
      (report.flood.tasks.failed > 0 ||
        report.flood.status.failed > 0 ||
        report.flood.cliStatus.failed > 0 ||
        report.flood.worstHeartbeatGapMs > 6000 ||
        report.flood.tasks.p99Ms > 1000 ||
        report.flood.status.p99Ms > 1000)) ||
    (report.churn && (report.churn.napiNicsWithoutCn > 0 || report.churn.sapiInstancesWithoutCn > 0));
  if (bad) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`drill: ${err instanceof Error ? err.message : String(err)}\n`);
  cleanUpNow();
  process.exitCode = 1;
});
