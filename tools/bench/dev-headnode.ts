/**
 * `node dist/tools/bench/dev-headnode.js [--count N] [--rounds R] [--cpu-prof]`: how fast a
 * user creates and deletes mock CNs with the embedded dev headnode (not the bench's sink):
 * `mockcloud daemon` on a temp data dir, then `mockcloud create-servers N` and
 * `mockcloud delete-servers --all`, each timed from spawn to exit, R rounds. With --cpu-prof
 * the daemon writes a V8 CPU profile on exit, summarised here by self time per function.
 * The figures go into docs/performance.md by hand (tools/bench/analysis.md).
 */
import { spawn } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { CLI_ENV, CLI_MAIN } from './paths.js';
import { clockTicksPerSecond, parseCpuSeconds } from './proc-stats.js';
import { readFileSync } from 'node:fs';

interface Args {
  count: number;
  rounds: number;
  'cpu-prof': boolean;
  keep: boolean;
  'create-only': boolean;
}

const ENV = CLI_ENV;

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; ms: number; stderr: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_MAIN, ...args], { env: ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mockcloud ${args.join(' ')} timed out`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ms: performance.now() - started, stderr });
    });
  });
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** Top functions by self time of a .cpuprofile. */
async function summariseProfile(file: string, top = 25): Promise<string[]> {
  const prof = JSON.parse(await fsp.readFile(file, 'utf8')) as { nodes: ProfileNode[]; startTime: number; endTime: number };
  const total = prof.nodes.reduce((n, x) => n + (x.hitCount ?? 0), 0) || 1;
  const byFn = new Map<string, number>();
  for (const n of prof.nodes) {
    const f = n.callFrame;
    const where = f.url ? `${f.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}` : '';
    const key = `${f.functionName || '(anonymous)'} ${where}`;
    byFn.set(key, (byFn.get(key) ?? 0) + (n.hitCount ?? 0));
  }
  return [...byFn.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
}

interface DaemonStatus {
  servers: number;
  registered: number;
  deletingServers?: unknown[];
  http?: { backgroundQueued?: number };
  agents?: Record<string, Record<string, number> | undefined>;
}

/**
 * Wait until the daemon has finished the background work a create or a delete leaves (SAPI
 * adoption or instance deletes, the agents' first syncs, CNAPI registration) and its CPU is
 * quiet, so that the next command is not charged with the last one's tail. Returns the seconds
 * waited and the daemon CPU seconds spent meanwhile.
 */
async function settle(controlUrl: string, cpu: () => number): Promise<{ seconds: number; cpuS: number }> {
  const t0 = performance.now();
  const cpu0 = cpu();
  let lastCpu = cpu0;
  for (let i = 0; i < 1200; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const st = (await (await fetch(`${controlUrl}/status`)).json()) as DaemonStatus;
    const sapi = st.agents?.['sapi-instances'];
    const busy =
      st.registered < st.servers ||
      (st.deletingServers?.length ?? 0) > 0 ||
      (st.http?.backgroundQueued ?? 0) > 0 ||
      (sapi?.pendingCns ?? 0) > 0 ||
      (sapi?.pendingDeletes ?? 0) > 0;
    const now = cpu();
    // Under 10 % of a core over the last quarter second.
    const quiet = now - lastCpu < 0.025;
    lastCpu = now;
    if (!busy && quiet) return { seconds: (performance.now() - t0) / 1000, cpuS: now - cpu0 };
  }
  throw new Error('the daemon did not settle within 300 s');
}

async function main(): Promise<void> {
  const a = yargs(hideBin(process.argv))
    .option('count', { type: 'number', default: 1000, describe: 'CNs created, then deleted, each round' })
    .option('rounds', { type: 'number', default: 2, describe: 'create + delete rounds' })
    .option('cpu-prof', { type: 'boolean', default: false, describe: "write and summarise the daemon's CPU profile" })
    .option('keep', { type: 'boolean', default: false, describe: 'keep the temp data dir' })
    .option('create-only', { type: 'boolean', default: false, describe: 'create, do not delete (one round; for a profile of creation alone)' })
    .strict()
    .parseSync() as unknown as Args;
  if (!existsSync(CLI_MAIN)) throw new Error(`${CLI_MAIN} is missing: npm run build first`);
  const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-devhn-bench-'));
  const profDir = path.join(dataDir, 'prof');
  const nodeArgs = a['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  const daemon = spawn(
    process.execPath,
    [...nodeArgs, CLI_MAIN, 'daemon', '--data-dir', dataDir, '--control-port', '0', '--cmon-port', '0', '--log-file', path.join(dataDir, 'daemon.log'), '--log-level', 'warn'],
    { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  daemon.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  daemon.stderr!.resume();
  try {
    for (let i = 0; i < 600 && !/control API:/.test(out); i++) {
      if (daemon.exitCode !== null) throw new Error('the daemon exited while starting');
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(`machine: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}; N = ${a.count}`);
    // The daemon's CPU time (it hosts the dev headnode too): on a machine shared with other
    // work the wall clock says little, the CPU seconds per CN say what one core could do.
    const cpu = (): number => parseCpuSeconds(readFileSync(`/proc/${daemon.pid}/stat`, 'utf8'), clockTicksPerSecond());
    const controlUrl = (JSON.parse(await fsp.readFile(path.join(dataDir, 'daemon.json'), 'utf8')) as { control: { url: string } }).control.url;
    const started = await settle(controlUrl, cpu);
    console.log(`daemon start settled after ${started.seconds.toFixed(2)} s more`);
    const line = (what: string, ms: number, cpuS: number, after: { seconds: number; cpuS: number }): string =>
      `${what}: ${(ms / 1000).toFixed(2)} s = ${((a.count * 1000) / ms).toFixed(1)} CNs/s; daemon CPU ${cpuS.toFixed(2)} s ` +
      `(${((cpuS * 1000) / a.count).toFixed(2)} ms per CN, ${((100 * cpuS * 1000) / ms).toFixed(0)} % of a core); ` +
      `background done ${after.seconds.toFixed(2)} s later (CPU ${after.cpuS.toFixed(2)} s): ` +
      `${((a.count * 1000) / (ms + after.seconds * 1000)).toFixed(1)} CNs/s all told`;
    for (let round = 1; round <= a.rounds; round++) {
      const cpu0 = cpu();
      const c = await run(['create-servers', String(a.count), '--data-dir', dataDir], 600_000);
      if (c.code !== 0) throw new Error(`create-servers failed: ${c.stderr}`);
      const cpu1 = cpu();
      const afterCreate = await settle(controlUrl, cpu);
      console.log(`round ${round}: ${line(`create-servers ${a.count}`, c.ms, cpu1 - cpu0, afterCreate)}`);
      if (a['create-only']) break;
      const cpu2 = cpu();
      const d = await run(['delete-servers', '--all', '--data-dir', dataDir], 600_000);
      if (d.code !== 0) throw new Error(`delete-servers failed: ${d.stderr}`);
      const cpu3 = cpu();
      const afterDelete = await settle(controlUrl, cpu);
      console.log(`round ${round}: ${line('delete-servers --all', d.ms, cpu3 - cpu2, afterDelete)}`);
    }
  } finally {
    daemon.kill('SIGTERM');
    await new Promise((r) => (daemon.exitCode !== null ? r(undefined) : daemon.once('exit', r)));
    if (a['cpu-prof']) {
      const files = (await fsp.readdir(profDir).catch(() => [] as string[])).filter((f) => f.endsWith('.cpuprofile'));
      for (const f of files) {
        console.log(`\nCPU profile ${path.join(profDir, f)}, self time:`);
        for (const line of await summariseProfile(path.join(profDir, f))) console.log(line);
      }
    }
    if (!a.keep && !a['cpu-prof']) await fsp.rm(dataDir, { recursive: true, force: true });
    else console.log(`data dir kept: ${dataDir}`);
  }
}

main().catch((err: unknown) => {
  console.error(`dev-headnode bench: ${(err as Error).message}`);
  process.exitCode = 1;
});
