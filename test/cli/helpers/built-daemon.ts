/**
 * The built daemon (`node dist/src/cli/main.js daemon`, which `npm test` builds first) as an
 * operator runs it, in a temp data dir, with its embedded dev headnode, and what tests need
 * to talk to its CNs the way Triton does: the headnode's URLs and a CN's agent address from
 * its registered sysinfo (triton-netconfig's agentIpFromSysinfo, as CNAPI does).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const MAIN = path.join(ROOT, 'dist/src/cli/main.js');

/**
 * No mdata, no Triton addresses or config from the environment: the embedded headnode it is.
 * Every child `mockcloud` of the tests runs with it.
 */
export const CLI_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  MOCKCLOUD_NO_MDATA: '1',
  MOCKCLOUD_DATA_DIR: '',
  MOCKCLOUD_CNAPI_URL: '',
  MOCKCLOUD_VMAPI_URL: '',
  MOCKCLOUD_NAPI_URL: '',
  MOCKCLOUD_IMGAPI_URL: '',
  MOCKCLOUD_CONFIG: '',
  MOCKCLOUD_ALLOW_EXECUTE: '',
  MOCKCLOUD_BOOT_SECONDS: '',
  MOCKCLOUD_LOG_LEVEL: 'warn',
  MOCKCLOUD_CMON_PORT: '0',
};

export interface HeadnodeUrls {
  cnapi: string;
  vmapi: string;
  napi: string;
  imgapi: string;
  /** Absent for a daemon pointed at a DC (no embedded dev headnode). */
  papi?: string;
}

export interface BuiltDaemon {
  dataDir: string;
  urls: HeadnodeUrls;
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Start `mockcloud daemon <args>` on a fresh data dir (with `config` as its config.json) and
 * wait until it runs with `servers` CNs; `stop()` ends it and removes the data dir.
 */
export async function startBuiltDaemon(opts: { args?: string[]; config?: Record<string, unknown>; servers?: number } = {}): Promise<BuiltDaemon> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npm test builds; or npm run build)`);
  const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-built-'));
  if (opts.config) await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify(opts.config));
  const args = ['daemon', '--data-dir', dataDir, '--control-port', '0', '--servers', String(opts.servers ?? 1), ...(opts.args ?? [])];
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: CLI_ENV });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited(child, 20_000).catch(() => child.kill('SIGKILL'));
    }
    await fsp.rm(dataDir, { recursive: true, force: true });
  };
  try {
    await until(() => /mock CNs: \d+ \(wanted/.test(out) || child.exitCode !== null, 60_000, 'the daemon to start');
    if (child.exitCode !== null) throw new Error(`mockcloud daemon exited ${child.exitCode}: ${err}`);
    const urls = JSON.parse(await fsp.readFile(path.join(dataDir, 'headnode.json'), 'utf8')) as HeadnodeUrls;
    return { dataDir, urls, stderr: () => err, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Where CNAPI reaches a server's cn-agent, from the sysinfo it registered. */
export function agentUrlOf(sysinfo: Record<string, unknown>): string {
  return `http://${netconfig.agentIpFromSysinfo(sysinfo)}:${String(sysinfo['CN Agent Port'])}`;
}

/** POST /tasks to a CN's cn-agent as CNAPI sends it. */
export async function postTask(agentUrl: string, server: string, task: string, params: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${agentUrl}/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-server-uuid': server },
    body: JSON.stringify({ task, params }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Poll `fn` until it returns a truthy value; bounded by `timeoutMs`. */
export async function until<T>(fn: () => T | Promise<T>, timeoutMs: number, what: string, stepMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

function exited(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('process did not exit')), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
