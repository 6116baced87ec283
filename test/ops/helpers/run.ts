/** Running the ops scripts as child processes, bounded in time. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  input?: string;
  timeoutMs?: number;
  /**
   * 'close' (default) waits for stdout/stderr to close too; 'exit' returns when the process
   * exits, for scripts that leave a background child holding the pipes (an SMF start method).
   */
  until?: 'close' | 'exit';
}

export function run(file: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(file)} ${args.join(' ')} did not finish in ${opts.timeoutMs ?? 30_000} ms\n${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on(opts.until ?? 'close', (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      // On 'exit' the pipes may still be open (held by a grandchild): stop reading them.
      if (opts.until === 'exit') {
        setImmediate(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          resolve({ code, signal, stdout, stderr });
        });
        return;
      }
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}
