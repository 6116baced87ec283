/**
 * The daemon under test as its own process: `node dist/src/cli/main.js daemon ...` pointed at
 * the sink, on loopback, with a temp data dir. Found through `<data-dir>/daemon.json` like any
 * other client; stopped with SIGTERM (SIGKILL after a bound).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, fstatSync, openSync, promises as fsp, readSync } from 'node:fs';
import path from 'node:path';
import { onInterrupt } from './cleanup.js';
import { CLI_MAIN } from './paths.js';

export interface DaemonJsonView {
  pid: number;
  state: 'starting' | 'running';
  control: { url: string; socket?: string };
  servers: Record<string, { ip: string; port: number }>;
}

export interface DaemonStartOptions {
  dataDir: string;
  urls: { cnapi: string; vmapi: string; napi: string; sapi?: string; fwapi?: string; fwapiFast?: string };
  bindIp: string;
  logLevel: string;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Extra `mockcloud daemon` flags (e.g. --max-connections). */
  daemonArgs?: string[];
  /** Extra daemon flags (e.g. --timing smartos). */
  extraArgs?: string[];
  /** Bound on the wait for daemon.json to say 'running'. */
  readyTimeoutMs: number;
  /** Called right after the spawn, before the wait for 'running' (e.g. to attach a profiler). */
  onSpawn?: (daemon: DaemonProcess) => void;
}

const POLL_MS = 100;
const STOP_TIMEOUT_MS = 60_000;
const STDERR_KEEP = 16 * 1024;

export class DaemonProcess {
  /** Epoch ms just before the process was spawned. */
  readonly spawnedAt: number;
  private stderrTail = '';
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly dataDir: string,
    readonly logFile: string,
    spawnedAt: number,
  ) {
    this.spawnedAt = spawnedAt;
    child.stderr?.on('data', (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString('utf8')).slice(-STDERR_KEEP);
    });
    // Diagnostics (node's --trace-gc writes to stdout): kept in a file when asked for.
    if (process.env.DIAG_DAEMON_STDOUT) child.stdout?.pipe(createWriteStream(process.env.DIAG_DAEMON_STDOUT, { flags: 'a' }));
    else child.stdout?.resume();
    const forget = onInterrupt(() => child.kill('SIGKILL'));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        forget();
        resolve();
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  /** Spawn the daemon and wait until daemon.json says it runs (its CNs are loaded). */
  static async start(opts: DaemonStartOptions): Promise<{ daemon: DaemonProcess; info: DaemonJsonView }> {
    if (!existsSync(CLI_MAIN)) throw new Error(`the daemon is not built (${CLI_MAIN} missing): run \`npm run build\` first`);
    const logFile = path.join(opts.dataDir, 'daemon.log');
    const args = [
      ...(opts.nodeArgs ?? []),
      CLI_MAIN,
      'daemon',
      '--data-dir', opts.dataDir,
      '--cnapi-url', opts.urls.cnapi,
      '--vmapi-url', opts.urls.vmapi,
      '--napi-url', opts.urls.napi,
      ...(opts.urls.sapi ? ['--sapi-url', opts.urls.sapi] : []),
      ...(opts.urls.fwapi ? ['--fwapi-url', opts.urls.fwapi] : []),
      ...(opts.urls.fwapiFast ? ['--fwapi-fast-url', opts.urls.fwapiFast] : []),
      '--bind-ip', opts.bindIp,
      '--control-port', '0',
      '--cmon-port', '0',
      '--log-file', logFile,
      '--log-level', opts.logLevel,
      ...(opts.daemonArgs ?? []),
      ...(opts.extraArgs ?? []),
    ];
    const spawnedAt = Date.now();
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MOCKCLOUD_NO_MDATA: '1' },
    });
    const daemon = new DaemonProcess(child, opts.dataDir, logFile, spawnedAt);
    opts.onSpawn?.(daemon);
    try {
      const info = await daemon.waitRunning(opts.readyTimeoutMs);
      return { daemon, info };
    } catch (err) {
      await daemon.stop();
      throw err;
    }
  }

  /** The first match of `re` in the daemon's stderr (e.g. the inspector's ws:// URL). */
  async waitForStderr(re: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(this.stderrTail);
      if (m) return m;
      if (Date.now() >= deadline || !this.alive) throw new Error(`the daemon's stderr never showed ${re}`);
      await sleep(POLL_MS);
    }
  }

  /** daemon.json of this process once its state is 'running'. */
  async waitRunning(timeoutMs: number): Promise<DaemonJsonView> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.alive) throw new Error(`the daemon exited while starting (${this.describeExit()})${this.diagnostics()}`);
      // Only the head of the file while polling: with 10,000 CNs it is a megabyte, and the
      // harness must not eat the CPU the daemon is being timed on.
      const head = await this.readDaemonJsonHead();
      if (head && head.pid === this.pid && head.state === 'running') {
        const info = await this.readDaemonJson();
        if (info && info.pid === this.pid && info.state === 'running') return info;
      }
      await sleep(POLL_MS);
    }
    throw new Error(`the daemon did not report 'running' within ${timeoutMs} ms${this.diagnostics()}`);
  }

  /** pid and state from the first bytes of daemon.json (they come first in it). */
  private async readDaemonJsonHead(): Promise<{ pid: number; state: string } | undefined> {
    let fh: fsp.FileHandle | undefined;
    try {
      fh = await fsp.open(path.join(this.dataDir, 'daemon.json'), 'r');
      const buf = Buffer.alloc(1024);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      const text = buf.subarray(0, bytesRead).toString('utf8');
      const pid = /"pid":\s*(\d+)/.exec(text);
      const state = /"state":\s*"(\w+)"/.exec(text);
      return pid && state ? { pid: Number(pid[1]), state: state[1]! } : undefined;
    } catch {
      return undefined;
    } finally {
      await fh?.close();
    }
  }

  async readDaemonJson(): Promise<DaemonJsonView | undefined> {
    try {
      const v = JSON.parse(await fsp.readFile(path.join(this.dataDir, 'daemon.json'), 'utf8')) as DaemonJsonView;
      return typeof v.pid === 'number' && typeof v.control?.url === 'string' ? v : undefined;
    } catch {
      return undefined;
    }
  }

  /** Wait until daemon.json lists at least `count` servers (it is rewritten coalesced). */
  async waitServersListed(count: number, timeoutMs: number): Promise<DaemonJsonView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const info = await this.readDaemonJson();
      if (info && Object.keys(info.servers ?? {}).length >= count) return info;
      if (Date.now() >= deadline) {
        throw new Error(`daemon.json listed ${info ? Object.keys(info.servers ?? {}).length : 0} of ${count} servers after ${timeoutMs} ms`);
      }
      await sleep(POLL_MS);
    }
  }

  /** A control API call; rejects on transport errors, resolves with any HTTP answer. */
  async control<T = unknown>(method: string, urlPath: string, body?: unknown, timeoutMs = 30_000): Promise<{ status: number; body: T }> {
    const info = await this.readDaemonJson();
    if (!info) throw new Error('no daemon.json');
    const res = await fetch(`${info.control.url}${urlPath}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  }

  /** A control API GET answered in text (`/metrics`). */
  async controlText(urlPath: string, timeoutMs = 30_000): Promise<string> {
    const info = await this.readDaemonJson();
    if (!info) throw new Error('no daemon.json');
    const res = await fetch(`${info.control.url}${urlPath}`, { signal: AbortSignal.timeout(timeoutMs) });
    return res.text();
  }

  /** SIGTERM, wait (bounded), SIGKILL if needed. Resolves with how it ended. */
  async stop(timeoutMs = STOP_TIMEOUT_MS): Promise<{ code: number | null; signal: NodeJS.Signals | null; clean: boolean }> {
    if (this.alive) {
      this.child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([
        this.exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (killed) {
        this.child.kill('SIGKILL');
        await this.exited;
      }
    }
    const e = this.exit!;
    return { ...e, clean: e.code === 0 };
  }

  describeExit(): string {
    return this.exit ? `code ${this.exit.code}, signal ${this.exit.signal}` : 'running';
  }

  /** The end of stderr and of the log file, for error messages. */
  diagnostics(): string {
    let log = '';
    try {
      // Synchronous on purpose: used while building an error message.
      log = readTail(this.logFile, 4096);
    } catch {
      log = '';
    }
    const parts = [this.stderrTail.trim() && `stderr:\n${this.stderrTail.trim().slice(-4096)}`, log && `log:\n${log}`].filter(Boolean);
    return parts.length ? `\n${parts.join('\n')}` : '';
  }
}

function readTail(file: string, bytes: number): string {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const len = Math.min(bytes, size);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    return buf.toString('utf8').trim();
  } finally {
    closeSync(fd);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
