/**
 * `mockcloud headnode` (the dev headnode alone) and `mockcloud daemon` pointed at it, as child
 * processes an operator would run on separate zones, in temp data dirs; and what tests read
 * from Triton with sdc-clients.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MAIN, until, type HeadnodeUrls } from './built-daemon.js';
import { CLI_ENV } from './run-cli.js';

export interface Foreground {
  child: ChildProcess;
  dataDir: string;
  out(): string;
  err(): string;
  /** SIGTERM (bounded), then SIGKILL. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash. */
  kill9(): Promise<void>;
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

async function foreground(args: string[], dataDir: string, ready: RegExp): Promise<Foreground> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first`);
  const child = spawn(process.execPath, [MAIN, ...args], { env: CLI_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-20_000)));
  const fg: Foreground = {
    child,
    dataDir,
    out: () => out,
    err: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited(child, 30_000).catch(() => child.kill('SIGKILL'));
      }
    },
    async kill9() {
      child.kill('SIGKILL');
      await exited(child, 10_000);
    },
  };
  try {
    await until(() => ready.test(out) || child.exitCode !== null, 90_000, `mockcloud ${args[0]} to start`, 100);
    if (child.exitCode !== null) throw new Error(`mockcloud ${args.join(' ')} exited ${child.exitCode}: ${err}`);
  } catch (e) {
    await fg.stop();
    throw e;
  }
  return fg;
}

export async function tempDir(prefix: string): Promise<string> {
  return fsp.mkdtemp(path.join(os.tmpdir(), prefix));
}

/** `mockcloud headnode` on a data dir; its URLs from headnode.json. */
export async function startHeadnode(dataDir: string): Promise<Foreground & { urls: HeadnodeUrls }> {
  const fg = await foreground(['headnode', '--data-dir', dataDir, '--log-file', path.join(dataDir, 'headnode.log')], dataDir, /Point a daemon at it/);
  const urls = JSON.parse(await fsp.readFile(path.join(dataDir, 'headnode.json'), 'utf8')) as HeadnodeUrls;
  return { ...fg, urls };
}

/** `mockcloud daemon` on a data dir, pointed at `urls` (its NAPI may be a proxy). */
export async function startDaemon(dataDir: string, urls: HeadnodeUrls, extra: string[] = []): Promise<Foreground> {
  return foreground(
    [
      'daemon', '--data-dir', dataDir, '--control-port', '0', '--cmon-port', '0',
      '--cnapi-url', urls.cnapi, '--vmapi-url', urls.vmapi, '--napi-url', urls.napi, '--imgapi-url', urls.imgapi,
      '--log-file', path.join(dataDir, 'daemon.log'), ...extra,
    ],
    dataDir,
    /control API:/,
  );
}

/** Paged GET of a Triton list route (CNAPI /servers, NAPI /nics). */
export async function listAll<T>(base: string, route: string, query = ''): Promise<T[]> {
  const out: T[] = [];
  for (let offset = 0; offset < 100_000; offset += 1000) {
    const res = await fetch(`${base}${route}?limit=1000&offset=${offset}${query ? `&${query}` : ''}`);
    if (!res.ok) throw new Error(`GET ${route}: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as T[];
    out.push(...page);
    if (page.length < 1000) break;
  }
  return out;
}

export interface CnapiServerView {
  uuid: string;
  hostname: string;
  headnode: boolean;
  status: string;
  sysinfo: Record<string, any>;
}

export interface NapiNicView {
  mac: string;
  ip?: string;
  state: string;
  belongs_to_type: string;
  belongs_to_uuid: string;
  nic_tag?: string;
}
