/**
 * Running the built `mockcloud` (dist/src/cli/main.js) as a user does: as a child process,
 * with no Triton, config or data dir from the environment, and every run bounded in time.
 */
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { buildSysinfo, serializeNewSysinfo } from '../../../src/mockcn/sysinfo-template.js';
import { getProfile } from '../../../src/mockcn/profiles.js';
import { CLI_ENV, MAIN } from './built-daemon.js';

export { CLI_ENV };

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return runCommand(process.execPath, [MAIN, ...args], opts);
}

export function runCommand(cmd: string, args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env ?? CLI_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The `-j` of a list command: one JSON object per line (node-triton's habit). */
export function jsonLines<T = Record<string, unknown>>(stdout: string): T[] {
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** Shell-quote for `bash -c`. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * A data dir holding `n` mock CNs written as create-servers writes them (no daemon): the i-th
 * has hostname VC<i, 8 digits> and `vms[i]` VM files, so listings have known contents.
 */
export async function writeOfflineFleet(dataDir: string, n: number, vms: (i: number) => number = () => 0): Promise<string[]> {
  const uuids: string[] = [];
  for (let i = 0; i < n; i++) {
    const hex = i.toString(16).padStart(8, '0');
    const uuid = `${hex}-0000-4000-8000-${(i + 1).toString(16).padStart(12, '0')}`;
    const dir = path.join(dataDir, 'servers', uuid);
    await fsp.mkdir(path.join(dir, 'vms'), { recursive: true });
    const sysinfo = buildSysinfo({
      uuid,
      profile: getProfile(undefined),
      datacenterName: 'dc',
      platform: '20210826T002459Z',
      adminMac: `00:10:fe:00:${hex.slice(4, 6)}:${hex.slice(6, 8)}`,
      adminIp: `10.99.${Math.floor(i / 250)}.${(i % 250) + 1}`,
      extraMac: `00:10:fe:01:${hex.slice(4, 6)}:${hex.slice(6, 8)}`,
      now: Date.UTC(2026, 0, 1) + i * 1000,
    });
    await fsp.writeFile(path.join(dir, 'sysinfo.json'), serializeNewSysinfo(sysinfo));
    for (let v = 0; v < vms(i); v++) {
      const vm = `${hex}-1111-4000-8000-${(v + 1).toString(16).padStart(12, '0')}`;
      await fsp.writeFile(path.join(dir, 'vms', `${vm}.json`), JSON.stringify({ uuid: vm }));
    }
    uuids.push(uuid);
  }
  return uuids;
}
