/**
 * A CI-sized run of the real benchmark (`node dist/tools/bench/main.js --quick`, N = 200): the
 * daemon and the sink as their own processes, on loopback. It asserts only that the run
 * completes and reports every figure, not what the figures are (speed belongs to the
 * benchmark, not to the test suite). Needs the build `npm test` makes first.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BENCH = path.join(ROOT, 'dist', 'tools', 'bench', 'main.js');
const N = 200;
const RUN_TIMEOUT_MS = 150_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runBench(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BENCH, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-20_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const finite = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);

describe('npm run bench -- --quick (CI size)', () => {
  let dir: string;
  let run: Run;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let report: any;

  beforeAll(async () => {
    if (!existsSync(BENCH)) throw new Error(`${BENCH} is missing: run \`npm run build\` (npm test does) first`);
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-bench-ci-'));
    run = await runBench(['--quick', '--steps', String(N), '--json', path.join(dir, 'out.json'), '--doc', path.join(dir, 'perf.md')]);
    report = JSON.parse(await readFile(path.join(dir, 'out.json'), 'utf8'));
  }, RUN_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('completes without errors', () => {
    expect(report.steps).toHaveLength(1);
    expect(report.steps[0].n).toBe(N);
    // The errors first: they say why, where the exit code only says that it failed.
    expect(report.steps[0].errors, run.stdout.slice(-4000)).toEqual([]);
    expect(run.code, run.stderr).toBe(0);
    expect(report.steps[0].ok).toBe(true);
  });

  it('reports every figure the issue asks for', () => {
    const s = report.steps[0];
    const figures: Record<string, unknown> = {
      'RSS': s.idle?.rssBytes,
      'RSS with 0 CNs': s.baseline?.rssBytes,
      'RSS per idle CN': s.idle?.rssPerCnBytes,
      'CPU at steady state': s.idle?.cpuPercent,
      'start to all registered': s.start?.secondsToAllRegistered,
      'start to all heartbeated': s.start?.secondsToAllHeartbeated,
      'heartbeats per second': s.idle?.heartbeatsPerSecond,
      'status reports per second': s.idle?.statusReportsPerSecond,
      'worst heartbeat gap': s.idle?.worstHeartbeatGapMs,
      'nop p50': s.tasks?.nop.p50Ms,
      'nop p99': s.tasks?.nop.p99Ms,
      'machine_create p50': s.tasks?.machineCreate.p50Ms,
      'machine_create p99': s.tasks?.machineCreate.p99Ms,
      'nop p99, loaded': s.tasksUnderLoad?.nop.p99Ms,
      'machine_create p99, loaded': s.tasksUnderLoad?.machineCreate.p99Ms,
      'nop throughput, loaded': s.tasksUnderLoad?.nop.perSecond,
      'VM creation throughput': s.vms?.perSecond,
      'memory per VM': s.vms?.bytesPerVm,
      'RSS with the VMs, idle': s.vms?.rssAfterRestartBytes,
      'create-servers throughput': s.createServers?.perSecond,
    };
    const missing = Object.entries(figures).filter(([, v]) => !finite(v)).map(([k]) => k);
    expect(missing).toEqual([]);
    // Every CN was created (each with an admin NIC from the sink's NAPI), registered and heartbeated.
    expect(s.createServers.created).toBe(N);
    expect(s.createServers.nicAllocations).toBe(N);
    expect(s.start.heartbeating).toBe(N);
    expect(s.vms.created).toBe(s.vms.target);
  });

  it('prints the table and writes the document with its chart', async () => {
    expect(run.stdout).toContain(`N=${N}`);
    expect(run.stdout).toContain('targets (issue 7)');
    const md = await readFile(path.join(dir, 'perf.md'), 'utf8');
    expect(md).toContain('## Against the targets (issue 7)');
    expect(md).toContain('(perf.svg)');
    const svg = await readFile(path.join(dir, 'perf.svg'), 'utf8');
    expect(svg).toContain('<svg');
  });
});
