/** `npm run bench -- [flags]`: the benchmark's command line, validated once here. */
import path from 'node:path';
import yargs from 'yargs';
import { DEFAULT_DOC_OUT, DEFAULT_JSON_OUT } from './paths.js';
import type { BenchOptions } from './types.js';

export const DEFAULT_STEPS = [100, 1000, 5000, 10_000];
export const QUICK_STEPS = [200];
const MAX_N = 10_000;

/** CI runs shorten the CNAPI traffic so a few seconds see several heartbeats per CN. */
const QUICK_TIMINGS = { heartbeatIntervalMs: 1000, startSpreadMs: 500, statusThrottleMs: 1000, statusIntervalMs: 2000 };

export function parseSteps(text: string): number[] {
  const steps = text.split(',').map((s) => s.trim()).filter((s) => s.length > 0).map((s) => Number(s.replace(/_/g, '')));
  if (steps.length === 0 || steps.some((n) => !Number.isInteger(n) || n < 1 || n > MAX_N)) {
    throw new Error(`--steps must be a comma-separated list of integers from 1 to ${MAX_N}, e.g. 100,1000`);
  }
  return [...new Set(steps)].sort((a, b) => a - b);
}

export function parseOptions(argv: string[]): BenchOptions {
  const a = yargs(argv)
    .scriptName('npm run bench --')
    .usage('$0 [options]\n\nThe mockcloud benchmark: a daemon with N mock CNs against a recording CNAPI/VMAPI/NAPI sink.')
    .option('steps', { type: 'string', describe: `fleet sizes, comma-separated (default ${DEFAULT_STEPS.join(',')})` })
    .option('quick', { type: 'boolean', default: false, describe: `CI-sized run: N=${QUICK_STEPS.join(',')}, short windows and timings` })
    .option('window', { type: 'number', describe: 'idle measuring window, s (default 60: one full status-report cycle; quick 2)' })
    .option('settle', { type: 'number', describe: 'wait after every CN heartbeated, s (default 6; quick 1)' })
    .option('tasks', { type: 'number', describe: 'tasks of each kind for latency (default 300; quick 40)' })
    .option('concurrency', { type: 'number', default: 1, describe: 'tasks in flight for the latency figures' })
    .option('load-concurrency', { type: 'number', default: 8, describe: 'tasks in flight for a second, loaded latency run (0: skip it)' })
    .option('burst', { type: 'number', describe: 'nop tasks sent all at once, measuring heartbeats meanwhile (default 5000; quick 300; 0: skip)' })
    .option('vms-per-cn', { type: 'number', describe: 'VMs created on every CN (default 10; quick 3)' })
    .option('vm-concurrency', { type: 'number', default: 32, describe: 'machine_create tasks in flight while filling CNs' })
    .option('vm-budget', { type: 'number', describe: 'time bound of VM creation per step, s (default 600; quick 30)' })
    .option('heartbeat-ms', { type: 'number', describe: 'shorten the heartbeat interval (daemon config timings; default: the real 5000)' })
    .option('json', { type: 'string', describe: 'where the JSON results go', default: path.relative(process.cwd(), DEFAULT_JSON_OUT) })
    .option('doc', { type: 'string', describe: 'where the Markdown report goes (the chart goes beside it as .svg); --no-doc: none' })
    .option('from', { type: 'string', describe: 'run nothing: re-render the table and document from this JSON (e.g. after editing analysis.md)' })
    .option('keep', { type: 'boolean', default: false, describe: 'keep the temp data dirs' })
    .option('profile', { type: 'boolean', default: false, describe: 'CPU-profile the idle daemon at the largest N (V8 inspector)' })
    .option('bind-ip', { type: 'string', default: '127.0.0.1', describe: 'loopback IP for the CNs\' sockets' })
    .option('log-level', { type: 'string', default: 'warn', describe: 'daemon log level (its log is in the temp data dir)' })
    .option('mirror', { type: 'number', default: 0, describe: 'also a mirror step (issue 18): capture and load of a DC of this many CNs with --vms-per-cn VMs each (e.g. 1000; 0: none)' })
    .option('mirror-only', { type: 'boolean', default: false, describe: 'run only the mirror step (with --mirror N): its section goes into the results at --json and their document, the rest of which is kept' })
    .option('timing', { type: 'number', default: 0, describe: 'also a timing step (issue 26): N CNs on the smartos timing profile, idle against instant and a burst of machine_create (e.g. 10000; 0: none)' })
    .option('timing-burst', { type: 'number', describe: 'machine_create tasks of the timing burst (default twice the CNs)' })
    .option('timing-budget', { type: 'number', default: 900, describe: 'time bound of the timing burst, s' })
    .option('timing-only', { type: 'boolean', default: false, describe: 'run only the timing step (with --timing N): its section goes into the results at --json and their document, the rest of which is kept' })
    .option('agents', { type: 'number', default: 0, describe: 'also an agents step (issue 29): N CNs with --vms-per-cn VMs, config-agent and firewaller off then on: idle CPU, RSS per CN, SAPI/FWAPI request rates, a rule\'s fan-out (e.g. 10000; 0: none)' })
    .option('agents-only', { type: 'boolean', default: false, describe: 'run only the agents step (with --agents N): its section goes into the results at --json and their document, the rest of which is kept' })
    .strict()
    .version(false)
    .help()
    .parseSync();

  const quick = a.quick;
  const pos = (name: string, v: number | undefined, dflt: number): number => {
    const n = v ?? dflt;
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number ≥ 0`);
    return n;
  };
  const bindIp = a['bind-ip'];
  if (!/^127\.\d+\.\d+\.\d+$/.test(bindIp)) throw new Error('--bind-ip must be a loopback address (127.x.x.x)');
  const heartbeatMs = a['heartbeat-ms'];
  if (heartbeatMs !== undefined && !(heartbeatMs >= 100)) throw new Error('--heartbeat-ms must be at least 100');
  const opts: BenchOptions = {
    steps: a.steps !== undefined ? parseSteps(a.steps) : quick ? QUICK_STEPS : DEFAULT_STEPS,
    quick,
    windowSeconds: pos('window', a.window, quick ? 2 : 60),
    settleSeconds: pos('settle', a.settle, quick ? 1 : 6),
    tasksPerKind: Math.floor(pos('tasks', a.tasks, quick ? 40 : 300)),
    taskConcurrency: Math.max(1, Math.floor(pos('concurrency', a.concurrency, 1))),
    loadConcurrency: Math.floor(pos('load-concurrency', a['load-concurrency'], 8)),
    burstTasks: Math.floor(pos('burst', a.burst, quick ? 300 : 5000)),
    vmsPerCn: Math.floor(pos('vms-per-cn', a['vms-per-cn'], quick ? 3 : 10)),
    vmConcurrency: Math.max(1, Math.floor(pos('vm-concurrency', a['vm-concurrency'], 32))),
    vmBudgetSeconds: pos('vm-budget', a['vm-budget'], quick ? 30 : 600),
    jsonPath: path.resolve(a.json),
    // yargs turns --no-doc into doc: false
    docPath: (a.doc as unknown) === false ? undefined : path.resolve(a.doc ?? DEFAULT_DOC_OUT),
    keep: a.keep,
    ...(a.from !== undefined ? { from: path.resolve(a.from) } : {}),
    profile: a.profile,
    bindIp,
    daemonLogLevel: a['log-level'],
    mirrorCns: Math.floor(pos('mirror', a.mirror, 0)),
    mirrorOnly: a['mirror-only'],
    agentsCns: Math.floor(pos('agents', a.agents, 0)),
    agentsOnly: a['agents-only'],
    timingCns: Math.floor(pos('timing', a.timing, 0)),
    ...(a['timing-burst'] !== undefined ? { timingBurst: Math.floor(pos('timing-burst', a['timing-burst'], 0)) } : {}),
    timingBudgetSeconds: pos('timing-budget', a['timing-budget'], 900),
    timingOnly: a['timing-only'],
  };
  if (opts.agentsCns! > MAX_N) throw new Error(`--agents must be at most ${MAX_N}`);
  if (opts.agentsOnly && opts.agentsCns! < 1) throw new Error('--agents-only needs --agents N');
  if (opts.timingCns! > MAX_N) throw new Error(`--timing must be at most ${MAX_N}`);
  if (opts.timingOnly && opts.timingCns! < 1) throw new Error('--timing-only needs --timing N');
  if (opts.mirrorCns! > MAX_N) throw new Error(`--mirror must be at most ${MAX_N}`);
  if (opts.mirrorOnly && opts.mirrorCns! < 1) throw new Error('--mirror-only needs --mirror N');
  if (heartbeatMs !== undefined) {
    opts.timings = { heartbeatIntervalMs: heartbeatMs, startSpreadMs: Math.min(5000, heartbeatMs) };
  } else if (quick) {
    opts.timings = { ...QUICK_TIMINGS };
  }
  return opts;
}
