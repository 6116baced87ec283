/**
 * How CLI commands reach the running daemon: `<data-dir>/daemon.json` names its control API;
 * the answer is checked (pid alive, API answering) so a stopped daemon gives a clear error.
 * Without --data-dir (or MOCKCLOUD_DATA_DIR) a command talks to the one daemon running
 * (daemon-registry.ts); with several it refuses to guess.
 */
import http from 'node:http';
import path from 'node:path';
import { describeSystemError } from '../common/system-errors.js';
import { daemonJsonPath, isProcessAlive, readDaemonJson, type DaemonJson } from '../daemon/daemon-json.js';
import { lastDataDir, runningDaemons, stateDir } from './daemon-registry.js';
import { defaultDataDir } from '../daemon/config.js';

/** A failure the CLI reports in one line (exit 1), without a stack. */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/** The command line itself is wrong (a bad count, a flag that is not one): exit 2, with a hint. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * The data dir of a client command: --data-dir, else MOCKCLOUD_DATA_DIR, else the data dir of
 * the one daemon running. With several running, a UsageError that lists them and says how to
 * pick one. With none, where a daemon last ran (its CNs are there), else the default.
 */
export function clientDataDir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return path.resolve(flag);
  if (env.MOCKCLOUD_DATA_DIR) return path.resolve(env.MOCKCLOUD_DATA_DIR);
  const running = runningDaemons(env);
  if (running.length === 1) return running[0]!.dataDir;
  if (running.length > 1) {
    const rows = running.map(
      (d) => `  pid ${String(d.pid).padEnd(7)} ${d.dataDir}${d.startedAt ? `  (started ${d.startedAt})` : ''}`,
    );
    throw new UsageError(
      `${running.length} mockcloud daemons are running; say which one with --data-dir DIR (or MOCKCLOUD_DATA_DIR=DIR):\n${rows.join('\n')}\n` +
        `(they register in ${path.join(stateDir(env), 'daemons')})`,
    );
  }
  return lastDataDir(env) ?? defaultDataDir();
}

/** "pid 1234, data dir /x": which daemon a command talks to, as its human output says. */
export function daemonLine(info: { pid: number; dataDir: string }): string {
  return `daemon pid ${info.pid}, data dir ${info.dataDir}`;
}

export interface ControlAnswer<T> {
  status: number;
  body: T;
}

export class DaemonClient {
  constructor(readonly info: DaemonJson) {}

  get url(): string {
    return this.info.control.url;
  }

  async request<T = unknown>(method: string, urlPath: string, body?: unknown, timeoutMs = 600_000): Promise<ControlAnswer<T>> {
    // The daemon's socket for the CLI first: a flood of the TCP port does not queue it (control-api.ts).
    const socket = this.info.control.socket;
    if (socket) {
      const answer = await viaSocket(socket, method, urlPath, body, timeoutMs).catch((err: NodeJS.ErrnoException) => {
        // Gone (a daemon of an older version, the file removed): the TCP port answers the same.
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED' || err.code === 'EACCES') return undefined;
        const why = err.name === 'TimeoutError' ? `no answer in ${timeoutMs / 1000} s` : describeSystemError(err);
        throw new CliError(`cannot reach the mockcloud daemon at ${socket} (pid ${this.info.pid}): ${why}`);
      });
      if (answer) return { status: answer.status, body: parseBody(answer.text) as T };
    }
    let res: Response;
    try {
      res = await fetch(`${this.url}${urlPath}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const why = (err as Error).name === 'TimeoutError' ? `no answer in ${timeoutMs / 1000} s` : describeSystemError((err as Error).cause ?? err);
      throw new CliError(`cannot reach the mockcloud daemon at ${this.url} (pid ${this.info.pid}): ${why}`);
    }
    return { status: res.status, body: parseBody(await res.text()) as T };
  }


  /** Like request, but a non-2xx answer is a CliError with the daemon's message. */
  async call<T = unknown>(method: string, urlPath: string, body?: unknown): Promise<T> {
    const res = await this.request<T>(method, urlPath, body);
    if (res.status < 200 || res.status >= 300) {
      const b = res.body as { code?: string; message?: string } | undefined;
      throw new CliError(`${method} ${urlPath}: ${b?.message ?? `HTTP ${res.status}`}${b?.code ? ` (${b.code})` : ''}`);
    }
    return res.body;
  }
}

function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** One request over the daemon's Unix socket; rejects on transport errors (code kept) and timeouts. */
function viaSocket(socketPath: string, method: string, urlPath: string, body: unknown, timeoutMs: number): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath,
        method,
        path: urlPath,
        headers: { host: 'localhost', ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}) },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => {
      const err = new Error(`no answer in ${timeoutMs / 1000} s`);
      err.name = 'TimeoutError';
      req.destroy(err);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** The running daemon of a data dir, or a CliError saying why there is none. */
export async function findDaemon(dataDir: string): Promise<DaemonClient> {
  const info = await readDaemonJson(dataDir);
  if (!info) {
    throw new CliError(
      `no mockcloud daemon is running for ${dataDir} (no ${path.basename(daemonJsonPath(dataDir))} there); ` +
        `start one with: mockcloud daemon --data-dir ${dataDir}`,
    );
  }
  if (!isProcessAlive(info.pid)) {
    throw new CliError(
      `the mockcloud daemon for ${dataDir} is not running (pid ${info.pid} is gone; stale daemon.json); ` +
        `start one with: mockcloud daemon --data-dir ${dataDir}`,
    );
  }
  return new DaemonClient(info);
}

/**
 * The daemon a command means (--data-dir, MOCKCLOUD_DATA_DIR, or the one running). Unless
 * the output is JSON, the command says which daemon it talks to, on stderr (stdout stays the
 * command's own output, for pipes).
 */
export async function daemonFor(argv: { 'data-dir'?: string; json?: boolean }): Promise<DaemonClient> {
  const daemon = await findDaemon(clientDataDir(argv['data-dir']));
  if (!argv.json) process.stderr.write(`${daemonLine(daemon.info)}\n`);
  return daemon;
}
