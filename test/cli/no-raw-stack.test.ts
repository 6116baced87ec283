/**
 * No command ever shows a user Node's raw stack, even for an error nobody caught (a bug, thrown
 * in a callback): the command ends with one line on stderr and exit 70 (EX_SOFTWARE); the
 * daemon puts the whole error, stack and all, in its log first and says where. The uncaught
 * error is planted with a preloaded module (`node --import`), as a bug in any callback would
 * throw it: for a short command once its work is done, for the daemon on SIGUSR2 once it runs.
 */
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ENV, MAIN } from './helpers/built-daemon.js';
import { runCli, writeOfflineFleet } from './helpers/run-cli.js';

describe('an error nobody caught', () => {
  let tmp: string;
  let afterWork: string;
  let onSignal: string;

  beforeAll(async () => {
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-fatal-'));
    afterWork = path.join(tmp, 'throw-after-work.mjs');
    await fsp.writeFile(afterWork, "process.once('beforeExit', () => setImmediate(() => { throw new Error('planted bug'); }));\n");
    onSignal = path.join(tmp, 'throw-on-signal.mjs');
    await fsp.writeFile(onSignal, "process.on('SIGUSR2', () => setImmediate(() => { throw new Error('planted bug'); }));\n");
  });

  afterAll(async () => {
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  });

  it('ends a command with one line and exit 70, no stack', async () => {
    const dataDir = path.join(tmp, 'offline');
    await writeOfflineFleet(dataDir, 1);
    const res = await runCli(['list-servers', '--data-dir', dataDir], { env: { ...CLI_ENV, NODE_OPTIONS: `--import=${afterWork}` } });
    expect(res.code, res.stderr).toBe(70);
    // Its usual notice (no daemon runs: the data dir is listed), then the one line.
    expect(res.stderr.trim().split('\n').at(-1)).toBe('mockcloud: internal error: planted bug');
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });

  it("ends the daemon with one line naming its log, where the stack is", async () => {
    const dataDir = path.join(tmp, 'daemon');
    const logFile = path.join(tmp, 'daemon.log');
    const child = spawn(
      process.execPath,
      [MAIN, 'daemon', '--data-dir', dataDir, '--log-file', logFile, '--servers', '0', '--control-port', '0', '--ui-address', 'none'],
      { env: { ...CLI_ENV, NODE_OPTIONS: `--import=${onSignal}` }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 60_000;
      while (!/mock CNs: 0 \(wanted/.test(out) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(out, err).toMatch(/mock CNs: 0 \(wanted/);
      child.kill('SIGUSR2');
      const code = await Promise.race([exited, new Promise<'late'>((r) => setTimeout(() => r('late'), 30_000))]);
      expect(code, err).toBe(70);
      expect(err).toBe(`mockcloud: internal error: planted bug; the details are in ${logFile}\n`);
      const records = (await fsp.readFile(logFile, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
      const fatal = records.find((r) => r.level === 60);
      expect(fatal?.msg).toBe('uncaught error, the daemon stops: planted bug');
      expect(fatal?.err.stack).toMatch(/planted bug\n\s+at /);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 120_000);
});
