/**
 * The `mockcloud` command as a user runs it: the built CLI (`node dist/src/cli/main.js`, what
 * `npx mockcloud` runs after `npm run build`) as child processes, against a recording CNAPI +
 * NAPI. The daemon runs with the real cn-agent server and vmadm.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDaemonJson } from '../../src/daemon/daemon-json.js';
import { RecordingTriton } from '../daemon/helpers/recording-triton.js';
import { waitFor } from '../daemon/helpers/fakes.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(ROOT, 'dist/src/cli/main.js');
const ENV = { ...process.env, MOCKCLOUD_NO_MDATA: '1', MOCKCLOUD_DATA_DIR: '', MOCKCLOUD_CNAPI_URL: '', MOCKCLOUD_LOG_LEVEL: 'warn', MOCKCLOUD_CMON_PORT: '0' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: ENV });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mockcloud ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function exited(child: ChildProcess, timeoutMs = 20_000): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('daemon did not exit')), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

describe('mockcloud CLI', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: ChildProcess | undefined;
  let daemonOut = '';
  let daemonErr = '';

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npm test builds; or npx tsc -p tsconfig.json)`);
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-cli-'));
    triton = await new RecordingTriton().start();
    // Only the first beats are spread less, so the test need not wait 5 s; the intervals stay real.
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: { startSpreadMs: 200 } }));
  });

  afterAll(async () => {
    if (daemon && daemon.exitCode === null) {
      daemon.kill('SIGKILL');
      await exited(daemon).catch(() => undefined);
    }
    await triton?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('tells the truth in --help', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/mockcloud daemon/);
    expect(top.stdout).toMatch(/mockcloud create-servers <count>/);
    const d = await run(['daemon', '--help']);
    for (const flag of ['--data-dir', '--cnapi-url', '--vmapi-url', '--napi-url', '--imgapi-url', '--bind-ip', '--port-range', '--control-port', '--config', '--log-file']) {
      expect(d.stdout).toContain(flag);
    }
    expect(d.stdout).toContain('MOCKCLOUD_DATA_DIR');
    expect(d.stdout).toContain('MOCKCLOUD_CNAPI_URL');
    const c = await run(['create-servers', '--help']);
    expect(c.stdout).toMatch(/--profile/);
  });

  it('create-servers says clearly that no daemon runs', async () => {
    const r = await run(['create-servers', '2', '--data-dir', dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no mockcloud daemon is running for ${dataDir}`);
  });

  it('runs the daemon, creates servers through the CLI, and stops on SIGTERM with exit 0', async () => {
    daemon = spawn(
      process.execPath,
      [MAIN, 'daemon', '--data-dir', dataDir, '--cnapi-url', triton.url, '--napi-url', triton.url, '--bind-ip', '127.0.0.1', '--control-port', '0'],
      { cwd: ROOT, env: ENV },
    );
    daemon.stdout!.on('data', (d: Buffer) => (daemonOut += d.toString()));
    daemon.stderr!.on('data', (d: Buffer) => (daemonErr += d.toString()));
    await waitFor(() => daemonOut.includes('control API:') || daemon!.exitCode !== null, 30_000, 'daemon start');
    expect(daemon.exitCode, daemonErr).toBeNull();
    const info = await readDaemonJson(dataDir);
    expect(info).toBeDefined();
    expect(info!.pid).toBe(daemon.pid);
    expect(daemonOut).toContain(info!.control.url);
    expect(info!.control.ip).toBe('127.0.0.1');
    expect(info!.urls).toMatchObject({ cnapi: triton.url, napi: triton.url });

    const created = await run(['create-servers', '3', '--data-dir', dataDir]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(/created 3\/3 servers/);
    const uuids = created.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]!);
    expect(uuids.length).toBe(3);
    expect(triton.find('POST', /^\/networks\/admin\/nics$/).length).toBe(3);

    const after = await waitFor(async () => {
      const j = await readDaemonJson(dataDir);
      return j && Object.keys(j.servers).length === 3 ? j : undefined;
    }, 10_000, 'daemon.json with 3 servers');
    expect(Object.keys(after.servers).sort()).toEqual([...uuids].sort());

    // Each CN registers; the registered sysinfo leads (triton-netconfig, as CNAPI does) to
    // that CN's own cn-agent, which runs a task.
    for (const uuid of uuids) {
      const reg = await waitFor(() => triton.find('POST', new RegExp(`^/servers/${uuid}/sysinfo$`))[0], 15_000, 'registration');
      const sysinfo = (reg.body as { sysinfo: Record<string, unknown> }).sysinfo;
      expect(sysinfo['CN Agent Port']).toBe(after.servers[uuid]!.port);
      const ip = netconfig.agentIpFromSysinfo(sysinfo);
      const res = await fetch(`http://${ip}:${sysinfo['CN Agent Port']}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-server-uuid': uuid },
        body: JSON.stringify({ task: 'nop', params: {} }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('server')).toBe('Compute Node Agent');
      await waitFor(() => triton.find('POST', new RegExp(`^/servers/${uuid}/events/heartbeat$`)).length > 0, 15_000, 'heartbeat');
    }

    // A second daemon on the same data dir is refused.
    const second = await run(['daemon', '--data-dir', dataDir, '--control-port', '0']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another mockcloud daemon \(pid \d+/);

    daemon.kill('SIGTERM');
    expect(await exited(daemon)).toBe(0);
    expect(await readDaemonJson(dataDir)).toBeUndefined();
    // The servers stay on disk for the next start.
    for (const uuid of uuids) expect(existsSync(path.join(dataDir, 'servers', uuid, 'sysinfo.json'))).toBe(true);
  });
});
