/**
 * An operator's first day (issue 28), through the built CLI as child processes: with two
 * daemons running, a command not told which one refuses, lists both and says how to pick;
 * every command names the daemon it talks to; usage errors exit 2 with a hint, in the flags
 * typed; list commands' -j is one JSON object per line (node-triton lib/do_instance/do_list.js);
 * `version` and `--version` say the commit and build time; a condition the daemon handles (its
 * CN's port taken while it was down) is a WARN without a stack, never an ERROR; Ctrl-C stops a
 * daemon with one line and exit 0; the registry of running daemons never names one that is gone.
 * The daemons run standalone (no headnode): what is checked is the CLI and the daemon's log.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, until } from './helpers/built-daemon.js';
import { startHeadnode, tempDir } from './helpers/processes.js';
import { CLI_ENV, jsonLines, runCli, runCommand, type Run } from './helpers/run-cli.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Daemon {
  dir: string;
  child: ChildProcess;
  out(): string;
}

async function startDaemon(dir: string): Promise<Daemon> {
  const args = ['daemon', '--no-headnode', '--data-dir', dir, '--control-port', '0', '--cmon-port', '0', '--servers', '1', '--log-file', path.join(dir, 'daemon.log')];
  const child = spawn(process.execPath, [MAIN, ...args], { env: CLI_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await until(() => /mock CNs: 1 \(wanted 1\)/.test(out) || child.exitCode !== null, 90_000, 'the daemon to start', 100);
  if (child.exitCode !== null) throw new Error(`mockcloud daemon exited ${child.exitCode}: ${err}`);
  return { dir, child, out: () => out };
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The CLI with these args, each run at most four at a time. */
async function runAll(cases: string[][], env?: NodeJS.ProcessEnv): Promise<Run[]> {
  const out: Run[] = new Array<Run>(cases.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = next++; i < cases.length; i = next++) out[i] = await runCli(cases[i]!, env ? { env } : {});
    }),
  );
  return out;
}

function registryEntries(): Promise<string[]> {
  return fsp.readdir(path.join(process.env.XDG_STATE_HOME!, 'mockcloud', 'daemons')).catch(() => []);
}

describe("an operator's first day with two daemons", () => {
  let a: Daemon;
  let b: Daemon;
  let cnA: string;
  const dirs: string[] = [];
  const dd = (d: Daemon): string[] => ['--data-dir', d.dir];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) dirs.push(await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-day-')));
    // One after the other: b is the daemon started last (the state dir's last data dir), as the last test needs.
    a = await startDaemon(dirs[0]!);
    b = await startDaemon(dirs[1]!);
    cnA = (await runCli(['list-servers', '-H', '-o', 'uuid', ...dd(a)])).stdout.trim();
  }, 120_000);

  afterAll(async () => {
    for (const d of [a, b]) {
      if (d && d.child.exitCode === null && d.child.signalCode === null) {
        d.child.kill('SIGKILL');
        await exitOf(d.child);
      }
    }
    for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
  });

  it('refuses to guess which daemon: lists both and says how to pick, exit 2', async () => {
    const commands = [['status'], ['list-servers'], ['events'], ['faults', 'list'], ['ui'], ['event', 'offline', '--all']];
    const runs = await runAll(commands);
    commands.forEach((args, i) => {
      const r = runs[i]!;
      const what = args.join(' ');
      expect(r.code, what).toBe(2);
      expect(r.stdout, what).toBe('');
      for (const d of [a, b]) {
        expect(r.stderr, what).toContain(`pid ${d.child.pid}`);
        expect(r.stderr, what).toContain(d.dir);
      }
      expect(r.stderr, what).toMatch(/^mockcloud: 2 mockcloud daemons are running; say which one with --data-dir DIR \(or MOCKCLOUD_DATA_DIR=DIR\)/);
      expect(r.stderr.trimEnd().split('\n').pop()).toBe(`(see 'mockcloud help ${args[0]}')`);
    });
  });

  it('names the daemon it talks to (pid and data dir) in every human output', async () => {
    const line = (d: Daemon): string => `daemon pid ${d.child.pid}, data dir ${d.dir}`;
    const commands = [['list-servers'], ['events'], ['faults', 'list'], ['ui'], ['rescan'], ['boot-report']];
    const runs = await runAll(commands.map((c) => [...c, ...dd(a)]));
    commands.forEach((c, i) => {
      expect(runs[i]!.code, `${c.join(' ')}: ${runs[i]!.stderr}`).toBe(0);
      expect(runs[i]!.stderr.split('\n'), c.join(' ')).toContain(line(a));
    });
    const status = await runCli(['status', ...dd(a)]);
    expect(status.stdout).toMatch(new RegExp(`^daemon: +pid ${a.child.pid},`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^data dir: +${a.dir}$`, 'm'));
    // The environment picks one as --data-dir does.
    const viaEnv = await runCli(['list-servers'], { env: { ...CLI_ENV, MOCKCLOUD_DATA_DIR: b.dir } });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(viaEnv.stderr.split('\n')).toContain(line(b));
    // JSON output is JSON only: the daemon is in it, not beside it.
    const json = await runCli(['list-servers', '-j', ...dd(a)]);
    expect(json.stderr).toBe('');
  });

  it('says what is wrong with the command line in the flags typed: exit 2 and a hint, whatever the command', async () => {
    const cases: [string[], RegExp, RegExp?][] = [
      [['event', 'offline', '--count', '-3'], /^--count must be an integer from 1 to \d+$/],
      [['list-servers', '-o'], /^-o needs a value$/],
      [['faults', 'add'], /^faults add: give --delay-ms, --error or both$/],
      [['faults', 'add', '--delay-ms', '10', '--probability', '2'], /^faults add: --probability must be a number from 0 to 1$/],
      [['event', 'task-fault', '--all'], /^task-fault: give --delay, --error or --hang$/],
      [['event', 'offlin'], /^"offlin" is not an event type; did you mean offline\? \(the choices: offline, /],
      [['scenario'], /^name what to do: mockcloud scenario validate FILE, scenario run FILE or scenario stop$/],
      [['scenario', 'valdate', 'x.yaml'], /did you mean validate\?/],
      [['create-servers', 'abc'], /^N must be a number, not "abc"$/],
      [['delete-servers', '--count', 'x'], /^--count must be a number, not "x"$/],
      [['list-servers', '--bogus-flag'], /^unknown option: --bogus-flag$/],
      [['list-servers', '--jsn'], /^unknown option: --jsn \(did you mean --json\?\)$/],
      [['event', 'offline', '--all', '--api', 'foo'], /^--api "foo" is not one of cnapi, vmapi, napi, \*$/],
      [['create-servers', '1', '--mix', 'small:70,bogus:30'], /^--mix: no profile "bogus" in this daemon; its profiles: .*; nothing was created$/],
      [['event', 'power-los', '--all'], /^"power-los" is not an event type; did you mean power-loss\? /],
      [['event', 'power-loss', '--all', '--spread', 'soon'], /^--spread "soon" is not a duration/],
      [['event', 'power-loss', '--all', '--off', '9999h'], /^--off 9999h is longer than 30 days$/],
      [['boot-report', '--servers', 'nope'], /^--servers takes comma-separated UUIDs; "nope" is not one$/],
      [['boot-report', '--since', 'yesterday'], /^--since "yesterday" is not an ISO time/],
      [['boot-report', '--evnt', 'x'], /^unknown option: --evnt \(did you mean --event\?\)$/],
    ];
    const runs = await runAll(cases.map(([args]) => [...args, ...dd(a)]));
    cases.forEach(([args, message], i) => {
      const r = runs[i]!;
      const what = args.join(' ');
      expect(r.code, `${what}: ${r.stderr}`).toBe(2);
      expect(r.stdout, what).toBe('');
      const lines = r.stderr.trimEnd().split('\n').filter((l) => !l.startsWith('daemon pid '));
      expect(lines, what).toHaveLength(2);
      expect(lines[0]!.replace(/^mockcloud: /, ''), what).toMatch(message);
      expect(lines[1], what).toBe(`(see 'mockcloud help ${args[0]}')`);
      // The control API's own words never reach the user.
      expect(r.stderr, what).not.toMatch(/delayMs|params\.|target\.|bogusFlag|not null/);
    });
    // The unknown profile's small weight drew nothing for one CN: nothing was created anyway.
    expect((await runCli(['list-servers', '-H', '-o', 'uuid', ...dd(a)])).stdout.trim()).toBe(cnA);
  });

  it('prints lists as node-triton does: -j one JSON object per line, tables with a header', async () => {
    const ev = await runCli(['event', 'slow-heartbeat', '--servers', cnA, '--late', '1s', '--duration', '10m', '-j', ...dd(a)]);
    expect(ev.code, ev.stderr).toBe(0);
    const id = (JSON.parse(ev.stdout) as { id: string }).id;
    await runCli(['faults', 'add', '--task', 'machine_create', '--delay-ms', '5', ...dd(a)]);
    await runCli(['faults', 'add', '--task', 'machine_boot', '--delay-ms', '5', ...dd(a)]);
    const [servers, events, faults, table, bare, status, ui] = await runAll([
      ['list-servers', '-j', ...dd(a)],
      ['events', '-j', ...dd(a)],
      ['faults', 'list', '-j', ...dd(a)],
      ['events', ...dd(a)],
      ['events', '-H', '-o', 'id,type', ...dd(a)],
      ['status', '-j', ...dd(a)],
      ['ui', '-j', ...dd(a)],
    ]);
    // A command answering one object prints it on one line too, as node-triton's get commands do.
    for (const one of [ev, status!, ui!]) {
      expect(one.stdout.trimEnd().split('\n')).toHaveLength(1);
      expect(jsonLines(one.stdout)).toHaveLength(1);
    }
    expect(servers!.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(jsonLines(servers!.stdout)).toMatchObject([{ uuid: cnA }]);
    expect(jsonLines(events!.stdout)).toMatchObject([{ id, type: 'slow-heartbeat', servers: [cnA] }]);
    expect(faults!.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(jsonLines(faults!.stdout).map((f) => f.task).sort()).toEqual(['machine_boot', 'machine_create']);
    const lines = table!.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+SERVERS\s+VMS\s+STARTED\s+ENDS$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^${id}\\s+slow-heartbeat\\s+1\\s+-\\s+\\S+Z\\s+\\S+Z$`));
    expect(bare!.stdout.trim().split(/\s+/)).toEqual([id, 'slow-heartbeat']);
    await runAll([['event', 'end', '--all', ...dd(a)], ['faults', 'clear', ...dd(a)]]);
    // With nothing active, still the header: the table is there, empty.
    expect((await runCli(['events', ...dd(a)])).stdout.trimEnd()).toMatch(/^ID\s+TYPE\s+SERVERS\s+VMS\s+STARTED\s+ENDS$/);
  });

  it('says its version with the commit and the build time, from release.json in a release', async () => {
    const built = JSON.parse(await fsp.readFile(path.join(ROOT, 'dist', 'build-info.json'), 'utf8')) as { gitSha: string; buildTime: string };
    const [word, flag] = await runAll([['version'], ['--version']]);
    expect(word!.code).toBe(0);
    expect(word!.stdout).toBe(flag!.stdout);
    expect(word!.stdout.trim()).toMatch(/^mockcloud \d+\.\d+\.\d+ \(git [0-9a-f]{40}, built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)$/);
    expect(word!.stdout).toContain(`git ${built.gitSha}, built ${built.buildTime}`);
    // A release's install: release.json beside package.json says which build it is.
    const install = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-install-'));
    try {
      await fsp.cp(path.join(ROOT, 'dist', 'src'), path.join(install, 'dist', 'src'), { recursive: true });
      await fsp.copyFile(path.join(ROOT, 'package.json'), path.join(install, 'package.json'));
      await fsp.symlink(path.join(ROOT, 'node_modules'), path.join(install, 'node_modules'));
      const sha = 'f00dfeed'.repeat(5);
      await fsp.writeFile(path.join(install, 'release.json'), JSON.stringify({ name: 'mockcloud', git: { sha }, buildTime: '2026-01-02T03:04:05.000Z' }));
      const r = await runCommand(process.execPath, [path.join(install, 'dist/src/cli/main.js'), '--version']);
      expect(r.stdout.trim()).toMatch(new RegExp(`^mockcloud \\d+\\.\\d+\\.\\d+ \\(git ${sha}, built 2026-01-02T03:04:05.000Z\\)$`));
    } finally {
      await fsp.rm(install, { recursive: true, force: true });
    }
  });

  it("logs a CN's port taken while it was down as one WARN without a stack, and no ERROR", async () => {
    const before = JSON.parse(await fsp.readFile(path.join(a.dir, 'daemon.json'), 'utf8')) as { servers: Record<string, { port: number }> };
    const port = before.servers[cnA]!.port;
    const off = await runCli(['event', 'offline', '--servers', cnA, ...dd(a)]);
    expect(off.code, off.stderr).toBe(0);
    // Once its socket is closed, something else takes the port, as on a busy host.
    const holder = net.createServer();
    await until(
      () =>
        new Promise<boolean>((resolve) => {
          holder.once('error', () => resolve(false));
          holder.listen({ host: '127.0.0.1', port, exclusive: true }, () => resolve(true));
        }),
      30_000,
      "the CN's port to be free",
      100,
    );
    try {
      const end = await runCli(['event', 'end', '--all', ...dd(a)]);
      expect(end.code, end.stderr).toBe(0);
      await until(async () => {
        const d = JSON.parse(await fsp.readFile(path.join(a.dir, 'daemon.json'), 'utf8')) as { servers: Record<string, { port: number }> };
        return d.servers[cnA]!.port !== port;
      }, 30_000, 'the CN to listen on another port', 100);
    } finally {
      await new Promise((r) => holder.close(r));
    }
    const records = (await fsp.readFile(path.join(a.dir, 'daemon.log'), 'utf8'))
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown });
    expect(records.filter((r) => r.level >= 50)).toEqual([]);
    const taken = records.filter((r) => r.msg.includes(`port ${port} was taken`));
    expect(taken).toHaveLength(1);
    expect(taken[0]!.level).toBe(40);
    expect(taken[0]).not.toHaveProperty('err');
    expect(JSON.stringify(taken[0])).not.toMatch(/\n\s+at /);
  });

  it('stops on Ctrl-C with one line saying what it stopped, exit 0; the others then find the one left', async () => {
    const printed = a.out().length;
    a.child.kill('SIGINT');
    expect(await exitOf(a.child)).toBe(0);
    const after = a.out().slice(printed).trimEnd().split('\n');
    expect(after).toEqual([`mockcloud daemon stopped (pid ${a.child.pid}): 1 mock CN; their state is in ${a.dir}, the next start loads it`]);
    expect(await registryEntries()).toEqual([`${b.child.pid}.json`]);
    const r = await runCli(['list-servers']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split('\n')).toContain(`daemon pid ${b.child.pid}, data dir ${b.dir}`);
  });

  it('never names a daemon that is gone: one killed with -9 is dropped by the next command', async () => {
    b.child.kill('SIGKILL');
    await exitOf(b.child);
    const r = await runCli(['status']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`pid ${b.child.pid} is gone`);
    expect(await registryEntries()).toEqual([]);
    expect(existsSync(path.join(process.env.XDG_STATE_HOME!, 'mockcloud', 'last-daemon.json'))).toBe(false);
  });

  it('mockcloud headnode says Ctrl-C stops it, and then says so in one line, exit 0', async () => {
    const dir = await tempDir('mockcloud-day-headnode-');
    const hn = await startHeadnode(dir);
    try {
      expect(hn.out().trimEnd().split('\n').pop()).toBe('Ctrl-C stops it.');
      const printed = hn.out().length;
      hn.child.kill('SIGINT');
      expect(await exitOf(hn.child)).toBe(0);
      expect(hn.out().slice(printed).trimEnd().split('\n')).toEqual([
        `mockcloud dev headnode stopped (pid ${hn.child.pid}); its state is in ${dir}, the next start loads it`,
      ]);
    } finally {
      await hn.stop();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
