/**
 * A first run as the README has it, with the built CLI (`node dist/src/cli/main.js`, what `npx
 * mockcloud` runs) in a fresh home: `mockcloud daemon --data-dir <dir> --servers N` while
 * 127.0.0.1:9163 is taken (as on a machine already running a daemon or a cmon-agent), run twice
 * in a row; the other commands in another shell (another working directory, no --data-dir)
 * find that daemon; the terminal shows a short summary and no warnings, the full bunyan
 * stream goes to <data-dir>/logs/mockcloud.log. And a start that cannot work (a Triton is
 * configured and the cmon-agent port is taken) fails naming --cmon-port and writes nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, until } from './helpers/built-daemon.js';

const CMON_PORT = 9163;

let home: string;
let holder: net.Server | undefined;

/** The environment of a new user's shell: an empty home, nothing of mockcloud's configured. */
function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_STATE_HOME: '', MOCKCLOUD_NO_MDATA: '1', ...extra };
  for (const k of Object.keys(env)) if (k.startsWith('MOCKCLOUD_') && k !== 'MOCKCLOUD_NO_MDATA' && !(k in extra)) delete env[k];
  return env;
}

interface Started {
  child: ChildProcess;
  out: () => string;
  err: () => string;
}

function startDaemon(args: string[], cwd: string, env = userEnv()): Started {
  const child = spawn(process.execPath, [MAIN, 'daemon', ...args], { cwd, env });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, out: () => out, err: () => err };
}

async function stopDaemon(d: Started): Promise<number | null> {
  if (d.child.exitCode !== null || d.child.signalCode !== null) return d.child.exitCode;
  const exited = new Promise<number | null>((resolve) => d.child.once('exit', (code) => resolve(code)));
  d.child.kill('SIGTERM');
  const timer = setTimeout(() => d.child.kill('SIGKILL'), 20_000);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

function runCli(args: string[], cwd: string, env = userEnv()): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mockcloud ${args.join(' ')} timed out: ${stderr}`));
    }, 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Make sure 127.0.0.1:9163 is taken for the test: hold it, or find it already held by another
 * process (then it stays taken as long as that process keeps it; either way the daemon cannot
 * have it). Never assumes it is free.
 */
async function takeCmonPort(): Promise<void> {
  const server = net.createServer();
  const err = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once('error', (e: NodeJS.ErrnoException) => resolve(e));
    server.listen(CMON_PORT, '127.0.0.1', () => resolve(undefined));
  });
  if (err && err.code !== 'EADDRINUSE') throw err;
  if (!err) holder = server;
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npm test builds; or npm run build)`);
  home = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-first-run-'));
  await fsp.mkdir(path.join(home, 'checkout'));
  await fsp.mkdir(path.join(home, 'elsewhere'));
  await takeCmonPort();
});

afterAll(async () => {
  if (holder) await new Promise((r) => holder!.close(r));
  await fsp.rm(home, { recursive: true, force: true });
});

describe('the README first run, with 127.0.0.1:9163 taken', () => {
  const servers = 3;
  const runs: { out: string; err: string; pid: number }[] = [];

  it('starts twice in a row: cmon-agent on a free port (and says so), the CNs, a short summary', async () => {
    const checkout = path.join(home, 'checkout');
    for (let i = 0; i < 2; i++) {
      const d = startDaemon(['--data-dir', './mockcloud-data', '--servers', String(servers)], checkout);
      try {
        await until(() => /mock CNs: \d+ \(wanted/.test(d.out()) || d.child.exitCode !== null, 90_000, 'the daemon to start');
        expect(d.child.exitCode, d.err()).toBeNull();

        // From another shell: another directory, no --data-dir, the same user.
        const status = await runCli(['status', '--json'], path.join(home, 'elsewhere'));
        expect(status.code, status.stderr).toBe(0);
        const s = JSON.parse(status.stdout) as { pid: number; dataDir: string; servers: number };
        expect(s.pid).toBe(d.child.pid);
        expect(s.dataDir).toBe(path.join(checkout, 'mockcloud-data'));
        expect(s.servers).toBe(servers + 1); // and the dev DC's headnode server
        const list = await runCli(['list-servers', '--json'], path.join(home, 'elsewhere'));
        expect(list.code, list.stderr).toBe(0);
        expect(list.stdout.trim().split('\n').map((l) => JSON.parse(l) as unknown)).toHaveLength(servers + 1);
      } finally {
        expect(await stopDaemon(d)).toBe(0);
      }
      runs.push({ out: d.out(), err: d.err(), pid: d.child.pid! });
    }
    // The second run loads the first run's CNs: none created again.
    expect(runs[1]!.out).not.toMatch(/creating \d+ mock CN/);
    expect(runs[1]!.out).toContain(`mock CNs: ${servers} (wanted ${servers})`);
  });

  it('prints the summary a person needs, with the cmon-agent fallback and no warning or log line on the terminal', () => {
    for (const { out, err } of runs) {
      expect(out).toMatch(/^mockcloud daemon running \(pid \d+\)$/m);
      expect(out).toMatch(/^ {2}data dir: +\.\/mockcloud-data$/m);
      for (const api of ['CNAPI', 'VMAPI', 'NAPI', 'IMGAPI']) {
        expect(out).toMatch(new RegExp(`^  ${api}: +http://127\\.0\\.0\\.1:\\d+ \\(embedded dev headnode\\)$`, 'm'));
      }
      const cmon = /^ {2}cmon-agent: +127\.0\.0\.1:(\d+)$/m.exec(out);
      expect(Number(cmon?.[1])).not.toBe(CMON_PORT);
      expect(out).toContain('note: cmon-agent: 127.0.0.1:9163 is in use');
      expect(out).toMatch(/^ {2}logs: +\.\/mockcloud-data\/logs\/mockcloud\.log$/m);
      expect(out).toMatch(/^ {2}follow them: +tail -f \.\/mockcloud-data\/logs\/mockcloud\.log \| \S*bunyan -o short$/m);
      // No DEP0111 from restify's spdy, no bunyan JSON, nothing at all on stderr.
      expect(err).toBe('');
      expect(out).not.toMatch(/^\{/m);
    }
  });

  it('writes the full bunyan stream to the log file, every record named mockcloud', async () => {
    const text = await fsp.readFile(path.join(home, 'checkout/mockcloud-data/logs/mockcloud.log'), 'utf8');
    const records = text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { name: string; pid: number; msg: string });
    expect(new Set(records.map((r) => r.pid))).toEqual(new Set(runs.map((r) => r.pid)));
    // bunyan's `name` is the logger's, never overwritten by a record's field (IMGAPI's image name was).
    expect(records.filter((r) => r.name !== 'mockcloud')).toEqual([]);
    expect(records.some((r) => /is in use.*free port/.test(r.msg))).toBe(true);
    expect(records.some((r) => r.msg === 'mockcloud daemon running')).toBe(true);
  });

  it('once the daemon is stopped, the other commands still look where it ran', async () => {
    const list = await runCli(['list-servers', '--json'], path.join(home, 'elsewhere'));
    expect(list.code, list.stderr).toBe(0);
    const listed = list.stdout.trim().split('\n').map((l) => JSON.parse(l) as { agentAddress: string | null });
    expect(listed.length).toBe(servers + 1);
    expect(listed.every((s) => s.agentAddress === null)).toBe(true); // read from the data dir: nothing listens
    const status = await runCli(['status'], path.join(home, 'elsewhere'));
    expect(status.code).not.toBe(0);
    expect(status.stderr).toContain(path.join(home, 'checkout', 'mockcloud-data'));
  });

  it('with a Triton configured, a taken cmon-agent port is an error naming --cmon-port, and nothing is written', async () => {
    const dataDir = path.join(home, 'triton-data');
    const triton = ['--cnapi-url', 'http://127.0.0.1:9', '--vmapi-url', 'http://127.0.0.1:9', '--napi-url', 'http://127.0.0.1:9', '--imgapi-url', 'http://127.0.0.1:9'];
    const d = startDaemon(['--data-dir', dataDir, ...triton], home);
    const code = await new Promise<number | null>((resolve) => {
      if (d.child.exitCode !== null) resolve(d.child.exitCode);
      d.child.once('exit', (c) => resolve(c));
    });
    expect(code).toBe(1);
    expect(d.err()).toMatch(/^mockcloud: cmon-agent cannot listen on 127\.0\.0\.1:9163: the address is already in use/m);
    expect(d.err()).toContain('--cmon-port');
    expect(existsSync(dataDir)).toBe(false);
  });
});
