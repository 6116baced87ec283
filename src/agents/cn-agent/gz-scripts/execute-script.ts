/**
 * Running a command_execute script as the real task does (sdc-cn-agent
 * lib/backends/smartos/tasks/command_execute.js, with node-forkexec's forkExecWait):
 *
 * - the script is written to `<tmp>/cnagent-<8 hex>` (mode 0700) and exec'd directly with
 *   `args` after it, so its `#!` line picks the interpreter; the file is removed afterwards;
 * - the environment is `env` as given (the real task passes `{}` when there is none), with
 *   PATH led by the mock global-zone commands;
 * - `timeout` (ms, 0 or absent: none) ends it with SIGKILL; each of stdout and stderr keeps at
 *   most 5 MiB, more ends it with SIGKILL;
 * - the result is `{err, exitCode, signal, stdout, stderr}`: `err` null after exit 0, else the
 *   forkexec error as the task's JSON carries it (`message` `exec "<argv>": exited with status
 *   N`, `... unexpectedly terminated by signal SIGKILL`, `... stdout maxBuffer exceeded`, or
 *   the spawn error); `exitCode` null unless it exited, `signal` null unless killed by one.
 *
 * Where the host is not SmartOS: an interpreter that only SmartOS has (`/usr/node/bin/node`,
 * `/usr/bin/bash` on a host without it) is mapped to this host's; the script runs in its own
 * process group, which is killed on timeout, when the task is aborted, and when the script
 * exits (nothing it started outlives it on the daemon's host); its stdin is empty.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants, promises as fsp } from 'node:fs';
import path from 'node:path';

export const MAX_BUFFER = 5 * 1024 * 1024;
const MAX_TIMER_MS = 2 ** 31 - 1;
/** What the tail of PATH is when the caller's env has none (SmartOS root's usual PATH). */
const DEFAULT_PATH = '/usr/bin:/usr/sbin:/bin:/sbin';

export interface ExecuteOptions {
  script: string;
  args: string[];
  env: Record<string, unknown>;
  /** ms; 0 or undefined: no limit. */
  timeoutMs?: number | undefined;
  /** Where the script file is written. */
  tmpDir: string;
  /** Put first on PATH. */
  binDir: string;
  signal: AbortSignal;
}

export interface ExecuteResult {
  err: Record<string, unknown> | null;
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export async function executeScript(opts: ExecuteOptions): Promise<ExecuteResult> {
  const file = path.join(opts.tmpDir, `cnagent-${randomBytes(4).toString('hex')}`);
  await fsp.writeFile(file, opts.script, { mode: 0o700, flag: 'wx' });
  try {
    await fsp.chmod(file, 0o700);
    return await run(file, opts);
  } finally {
    await fsp.rm(file, { force: true });
  }
}

function run(file: string, opts: ExecuteOptions): Promise<ExecuteResult> {
  const argv = [file, ...opts.args];
  const cmdstr = JSON.stringify(argv.join(' '));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.env)) env[k] = String(v);
  env.PATH = `${opts.binDir}:${env.PATH ?? DEFAULT_PATH}`;
  const [command, ...commandArgs] = hostCommand(file, opts.script, opts.args);

  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let overflow: 'stdout' | 'stderr' | undefined;
    let spawnError: (Error & Record<string, unknown>) | undefined;
    let settled = false;
    const child = spawn(command!, commandArgs, { cwd: '/', env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    // Beyond what a timer can hold, no limit but the task's own (3600 s) applies.
    const limited = opts.timeoutMs !== undefined && opts.timeoutMs > 0 && opts.timeoutMs <= MAX_TIMER_MS;
    const timer = limited ? setTimeout(killGroup, opts.timeoutMs) : undefined;
    const onAbort = (): void => killGroup();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    if (opts.signal.aborted) killGroup();

    const collect = (which: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (overflow) return;
      const text = chunk.toString('utf8');
      if (which === 'stdout') stdout += text;
      else stderr += text;
      if ((which === 'stdout' ? stdout : stderr).length > MAX_BUFFER) {
        overflow = which;
        if (which === 'stdout') stdout = stdout.slice(0, MAX_BUFFER);
        else stderr = stderr.slice(0, MAX_BUFFER);
        killGroup();
      }
    };
    child.stdout.on('data', collect('stdout'));
    child.stderr.on('data', collect('stderr'));
    // The script is done when it exits: whatever it left running in its group goes too, so
    // its pipes close and nothing of it stays on this host.
    child.on('exit', killGroup);
    child.on('error', (err) => {
      spawnError = err as Error & Record<string, unknown>;
      finish(null, null);
    });
    child.on('close', (code, signal) => finish(code, signal));

    function finish(code: number | null, signal: NodeJS.Signals | null): void {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      const out = (err: Record<string, unknown> | null, exitCode: number | null, sig: string | null): void =>
        resolve({ err, exitCode, signal: sig, stdout, stderr });
      if (spawnError) {
        const cause: Record<string, unknown> = { ...spawnError, cmd: argv.join(' ') };
        out(verror(cmdstr, cause, spawnError.message), null, null);
      } else if (overflow) {
        out(verror(cmdstr, { cmd: argv.join(' ') }, `${overflow} maxBuffer exceeded`), null, null);
      } else if (signal) {
        const why = `unexpectedly terminated by signal ${signal}`;
        out(verror(cmdstr, causeOf(why), why), null, signal);
      } else if (code !== 0) {
        const why = `exited with status ${String(code)}`;
        out(verror(cmdstr, causeOf(why), why), code, null);
      } else {
        out(null, 0, null);
      }
    }
  });
}

/** A VError cause as JSON shows it. */
function causeOf(message: string): Record<string, unknown> {
  return { jse_shortmsg: message, jse_info: {}, message };
}

/** forkexec's `new VError(cause, 'exec %s', cmdstr)` as JSON shows it. */
function verror(cmdstr: string, cause: Record<string, unknown>, causeMessage: string): Record<string, unknown> {
  const shortmsg = `exec ${cmdstr}`;
  return { jse_shortmsg: shortmsg, jse_cause: cause, jse_info: {}, message: `${shortmsg}: ${causeMessage}` };
}

/** Interpreters a SmartOS script may name that a Linux or macOS host keeps elsewhere. */
const SMARTOS_INTERPRETERS: Record<string, () => string | undefined> = {
  '/usr/node/bin/node': () => process.execPath,
  '/usr/bin/bash': () => firstExecutable(['/bin/bash', '/usr/local/bin/bash']),
  '/bin/bash': () => firstExecutable(['/usr/bin/bash', '/usr/local/bin/bash']),
  '/usr/bin/ksh': () => firstExecutable(['/bin/ksh', '/usr/bin/ksh93', '/bin/bash']),
  '/usr/bin/sh': () => firstExecutable(['/bin/sh']),
};

/**
 * The argv to spawn: the script itself (the kernel reads its `#!` line), or, when that line
 * names a SmartOS interpreter this host lacks, the host's interpreter with the script.
 */
function hostCommand(file: string, script: string, args: string[]): string[] {
  const m = /^#!\s*(\S+)(?:[ \t]+(.*?))?\s*$/m.exec(script.split('\n', 1)[0] ?? '');
  if (!m || !script.startsWith('#!')) return [file, ...args];
  const interpreter = m[1]!;
  if (isExecutable(interpreter)) return [file, ...args];
  const mapped = SMARTOS_INTERPRETERS[interpreter]?.();
  if (!mapped) return [file, ...args];
  return [mapped, ...(m[2] ? [m[2]] : []), file, ...args];
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function firstExecutable(candidates: readonly string[]): string | undefined {
  return candidates.find(isExecutable);
}
