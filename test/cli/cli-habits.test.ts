/**
 * The `mockcloud` CLI keeps the habits of Triton's CLIs (node-triton lib/cli.js and
 * lib/do_instance/do_list.js, sdcadm lib/cli.js): help everywhere, usage errors exit 2 with one
 * line and a hint, a closed pipe ends quietly, listings take -H -o -s -l -j, long work shows
 * progress (a bar on a terminal, plain lines elsewhere), bash completion, and errors that name
 * the flag to change. Run as a user runs it: the built CLI as child processes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MAIN, startBuiltDaemon, type BuiltDaemon } from './helpers/built-daemon.js';
import { CLI_ENV, jsonLines, runCli, runCommand, shq, writeOfflineFleet } from './helpers/run-cli.js';

interface Row {
  uuid: string;
  hostname: string;
  vms: number;
  role: string;
  created: string | null;
}

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const N = 2500;
const lastHostname = `VC${(N - 1).toString(16).toUpperCase().padStart(8, '0')}`;

describe('mockcloud CLI habits, without a daemon', () => {
  let dataDir: string;
  let uuids: string[];

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-habits-'));
    // A listing far larger than a pipe's buffer; VM counts 4..0 for sorting.
    uuids = await writeOfflineFleet(dataDir, N, (i) => (i < 5 ? 4 - i : 0));
  }, 60_000);

  afterAll(async () => {
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('gives the same help for -h, --help, `help <command>` and `<command> -h`', async () => {
    const top = await runCli(['-h']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/mockcloud create-servers <count>/);
    expect((await runCli(['--help'])).stdout).toBe(top.stdout);
    expect((await runCli(['help'])).stdout).toBe(top.stdout);
    const sub = await runCli(['list-servers', '-h']);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toMatch(/^mockcloud list-servers/);
    for (const flag of ['-H', '-o', '-s', '-l', '--json']) expect(sub.stdout).toContain(flag);
    const viaHelp = await runCli(['help', 'list-servers']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(sub.stdout);
    expect((await runCli(['list-servers', '--help'])).stdout).toBe(sub.stdout);
  });

  it('exits 2 on a usage error, with one line saying what is wrong and a hint where help is', async () => {
    const cases: [string[], RegExp][] = [
      [['frobnicate'], /frobnicate/],
      [['help', 'frobnicate'], /no command "frobnicate"/],
      [['create-servers'], /say how many: mockcloud create-servers N/],
      [['create-servers', '0', '--data-dir', dataDir], /N must be an integer from 1/],
      [['list-servers', '--bogus-flag', '--data-dir', dataDir], /bogus-flag/],
      [['list-servers', '-o', 'hostname,nosuch', '--data-dir', dataDir], /-o "nosuch" is not a column/],
      [['list-servers', '-s', '-nosuch', '--data-dir', dataDir], /-s "nosuch" is not a column/],
      [['delete-servers', '--all', '--count', '2', '--data-dir', dataDir], /exactly one way/],
      [['faults', 'add', '--server', 'not-a-uuid', '--data-dir', dataDir], /not a server UUID/],
      [[], /name a command/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, args.join(' ')).toHaveLength(2);
      expect(lines[0]).toMatch(/^mockcloud: /);
      expect(lines[0]).toMatch(message);
      const cmd = args[0] && args[0] !== 'help' && args[0] !== 'frobnicate' ? ` ${args[0]}` : '';
      expect(lines[1]).toBe(`(see 'mockcloud help${cmd}')`);
    }
    // A failure that is not a usage error (no daemon) exits 1, one line, no stack.
    const down = await runCli(['status', '--data-dir', dataDir]);
    expect(down.code).toBe(1);
    expect(down.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(down.stderr).toContain('no mockcloud daemon is running');
  });

  it('ends quietly when stdout closes early (`mockcloud list-servers | head -1`)', async () => {
    const cmd = `${shq(process.execPath)} ${shq(MAIN)} list-servers --data-dir ${shq(dataDir)} | head -1; echo "rc=\${PIPESTATUS[0]}" >&2`;
    const r = await runCommand('bash', ['-c', cmd]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^UUID\s+HOSTNAME\s+ADMIN IP/);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/rc=0/);
    expect(r.stderr).not.toMatch(/EPIPE|Error|at /);
    // The listing really was larger than a pipe holds, so the write did meet a closed pipe.
    const full = await runCli(['list-servers', '--data-dir', dataDir]);
    expect(full.stdout.length).toBeGreaterThan(192 * 1024);
  });

  it('lists as triton and sdcadm do: -H, -o, -s (a leading - reverses), -l, -j', async () => {
    const table = await runCli(['list-servers', '--data-dir', dataDir]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(N + 1);
    expect(lines[0]).toMatch(/^UUID\s+HOSTNAME\s+ADMIN IP\s+CN-AGENT\s+VMS\s+STATUS\s+ROLE\s+PROFILE$/);
    // Default sort: by hostname.
    expect(lines[1]).toContain('VC00000000');
    expect(lines[N]).toContain(lastHostname);

    const bare = await runCli(['list-servers', '-H', '-o', 'uuid', '--data-dir', dataDir]);
    expect(bare.stdout.trimEnd().split('\n').sort()).toEqual([...uuids].sort());

    const byVms = await runCli(['list-servers', '-H', '-o', 'hostname,vms', '-s', '-vms,hostname', '--data-dir', dataDir]);
    expect(byVms.code, byVms.stderr).toBe(0);
    const top = byVms.stdout.split('\n').slice(0, 6).map((l) => l.trim().split(/\s+/));
    expect(top).toEqual([
      ['VC00000000', '4'],
      ['VC00000001', '3'],
      ['VC00000002', '2'],
      ['VC00000003', '1'],
      ['VC00000004', '0'],
      ['VC00000005', '0'],
    ]);

    const long = await runCli(['list-servers', '-l', '--data-dir', dataDir]);
    expect(long.stdout.split('\n')[0]).toMatch(/\bROLE\s+PROFILE\s+CREATED\s+DAEMON$/);
    expect(long.stdout.split('\n')[1]).toMatch(/2026-01-01T00:00:00\.000Z\s+\S+$/);

    const json = await runCli(['list-servers', '-j', '-s', '-hostname', '--data-dir', dataDir]);
    const rows = jsonLines<Row>(json.stdout);
    expect(rows).toHaveLength(N);
    expect(rows[0]!.hostname).toBe(lastHostname);
    expect(rows[rows.length - 1]).toMatchObject({ hostname: 'VC00000000', vms: 4, role: 'cn', created: '2026-01-01T00:00:00.000Z' });
  }, 60_000);

  it('prints a bash completion script, and completes commands and flags through it', async () => {
    const script = await runCli(['completion']);
    expect(script.code).toBe(0);
    expect(script.stdout).toMatch(/complete .*-F _mockcloud_yargs_completions mockcloud/);
    expect(script.stdout).toContain('mockcloud --get-yargs-completions');
    const commands = await runCli(['--get-yargs-completions', 'mockcloud', '']);
    for (const c of ['create-servers', 'ensure-servers', 'list-servers', 'faults']) expect(commands.stdout.split('\n')).toContain(c);
    const flags = await runCli(['--get-yargs-completions', 'mockcloud', 'list-servers', '-']);
    for (const f of ['-H', '-o', '-s', '-l', '--json']) expect(flags.stdout.split('\n')).toContain(f);
    // As bash runs it: source the script, then ask for the completions of `mockcloud ensure-`.
    const bin = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-bin-'));
    try {
      await fsp.writeFile(path.join(bin, 'mockcloud'), `#!/bin/sh\nexec ${shq(process.execPath)} ${shq(MAIN)} "$@"\n`, { mode: 0o755 });
      const bash = [
        script.stdout,
        'COMP_WORDS=(mockcloud ensure-); COMP_CWORD=1',
        '_mockcloud_yargs_completions',
        'printf "%s\\n" "${COMPREPLY[@]}"',
      ].join('\n');
      const r = await runCommand('bash', ['-c', bash], { env: { ...CLI_ENV, PATH: `${bin}:${process.env.PATH ?? ''}` } });
      expect(r.stdout.trim().split('\n')).toEqual(['ensure-servers']);
    } finally {
      await fsp.rm(bin, { recursive: true, force: true });
    }
  });

  it('names the flag to change, never a bare errno, when the daemon cannot use what it was given', async () => {
    // --data-dir under a regular file: ENOTDIR, in words.
    const file = path.join(dataDir, 'a-file');
    await fsp.writeFile(file, 'x');
    const badDir = await runCli(['daemon', '--data-dir', path.join(file, 'sub'), '--no-headnode', '--control-port', '0']);
    expect(badDir.code).toBe(1);
    expect(badDir.stderr).toMatch(/--data-dir/);
    expect(badDir.stderr).toMatch(/not a directory \(ENOTDIR\)/);
    expect(badDir.stderr).not.toMatch(/^Error|\n\s+at /m);

    // --control-port held by another process.
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const port = (holder.address() as net.AddressInfo).port;
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-habits-port-'));
    try {
      const taken = await runCli(['daemon', '--data-dir', dir, '--no-headnode', '--control-port', String(port)]);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain(`cannot listen on 127.0.0.1:${port}`);
      // The daemon's last word is one line naming the flag (log records may come before it).
      const last = taken.stderr.trimEnd().split('\n').pop()!;
      expect(last).toMatch(/^mockcloud: the control API cannot listen on/);
      expect(last).toMatch(/already in use.*\(EADDRINUSE\)/);
      expect(last).toMatch(/--control-port/);
    } finally {
      holder.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }

    // --bind-ip that is not this host's.
    const dir2 = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-habits-ip-'));
    try {
      const foreign = await runCli(['daemon', '--data-dir', dir2, '--no-headnode', '--control-port', '0', '--bind-ip', '192.0.2.1']);
      expect(foreign.code).toBe(1);
      expect(foreign.stderr).toMatch(/not one of this host's \(EADDRNOTAVAIL\)/);
      expect(foreign.stderr).toMatch(/--bind-ip/);
    } finally {
      await fsp.rm(dir2, { recursive: true, force: true });
    }
  });
});

describe('mockcloud CLI habits, with a daemon', () => {
  let daemon: BuiltDaemon;
  const dd = (): string[] => ['--data-dir', daemon.dataDir];

  beforeAll(async () => {
    daemon = await startBuiltDaemon({ servers: 1 });
  }, 90_000);

  afterAll(async () => {
    await daemon?.stop();
  });

  it('create-servers and ensure-servers show plain progress lines with rate and ETA when stderr is not a terminal', async () => {
    const r = await runCli(['create-servers', '40', ...dd()]);
    expect(r.code, r.stderr).toBe(0);
    // First which daemon it works on, then the progress.
    const [first, ...lines] = r.stderr.trimEnd().split('\n');
    expect(first).toBe(`daemon pid ${(JSON.parse(await fsp.readFile(path.join(daemon.dataDir, 'daemon.json'), 'utf8')) as { pid: number }).pid}, data dir ${daemon.dataDir}`);
    expect(lines[lines.length - 1]).toMatch(/^created 40\/40 servers \(\d+\/s\)$/);
    for (const l of lines) expect(l).toMatch(/^created \d+\/40 servers( \(\d+\/s(, ETA \d+s)?\))?$/);
    expect(r.stdout.trim().split('\n')).toHaveLength(40);
    const e = await runCli(['ensure-servers', '45', '-j', ...dd()]);
    expect(e.code, e.stderr).toBe(0);
    expect(e.stderr).toMatch(/created 4\/4 servers/);
    const out = JSON.parse(e.stdout) as { want: number; before: number; after: number; created: unknown[]; deleted: unknown[]; errors: unknown[] };
    expect(out).toMatchObject({ want: 45, before: 41, after: 45, deleted: [], errors: [] });
    expect(out.created).toHaveLength(4);
  }, 90_000);

  it.runIf(hasScript())('shows a progress bar with rate and ETA on a terminal', async () => {
    // util-linux `script` gives the command a pseudo-terminal, as an operator's shell would.
    const cmd = `${shq(process.execPath)} ${shq(MAIN)} create-servers 64 --data-dir ${shq(daemon.dataDir)} >/dev/null`;
    const r = await runCommand('script', ['-qec', cmd, '/dev/null'], { timeoutMs: 90_000 });
    expect(r.code, r.stdout).toBe(0);
    const screen = r.stdout;
    expect(screen).toMatch(/created [█░]+ 64\/64 servers \| \d+\/s \| ETA \d+s/);
    expect(screen).toContain('\r'); // redrawn in place
  }, 120_000);

  it('-j on every command that prints a result', async () => {
    const j = async (args: string[]): Promise<unknown> => {
      const r = await runCli([...args, '-j', ...dd()]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      // The lists (list-servers, events, faults list) are one object per line, as node-triton's.
      return ['list-servers', 'events'].includes(args[0]!) || args.join(' ') === 'faults list' ? jsonLines(r.stdout) : (JSON.parse(r.stdout) as unknown);
    };
    const listed = (await j(['list-servers'])) as Row[];
    expect(listed.length).toBeGreaterThan(100);
    expect(await j(['status'])).toMatchObject({ servers: listed.length });
    const created = (await j(['create-servers', '2'])) as { created: { uuid: string }[] };
    expect(created.created).toHaveLength(2);
    const deleted = (await j(['delete-servers', created.created[0]!.uuid])) as { deleted: { uuid: string }[] };
    expect(deleted.deleted.map((d) => d.uuid)).toEqual([created.created[0]!.uuid]);
    expect(await j(['rescan', created.created[1]!.uuid])).toMatchObject({ servers: [{ uuid: created.created[1]!.uuid }] });
    expect(await j(['faults', 'list'])).toEqual([]);
    const ext = (await j(['add-externals'])) as { added: string[]; already: number; errors: string[] };
    expect(ext.errors).toEqual([]);
    expect(ext.added.length + ext.already).toBeGreaterThanOrEqual(listed.length - 1);
    expect(await j(['ensure-servers', '3'])).toMatchObject({ want: 3, after: 3 });
  }, 120_000);

  it('faults add refuses a task cn-agent does not have and a server not in the fleet', async () => {
    const noTask = await runCli(['faults', 'add', '--task', 'machine_frobnicate', '--delay-ms', '10', ...dd()]);
    expect(noTask.code).toBe(1);
    expect(noTask.stderr).toMatch(/cn-agent has no task "machine_frobnicate"/);
    expect(noTask.stderr).toContain('machine_create');
    const stranger = '00000000-0000-4000-8000-0000000000aa';
    const noServer = await runCli(['faults', 'add', '--server', stranger, '--error', 'x', ...dd()]);
    expect(noServer.code).toBe(1);
    expect(noServer.stderr).toContain(`server ${stranger} is not one of this daemon's mock CNs`);
    const ok = await runCli(['faults', 'add', '--task', 'machine_create', '--delay-ms', '10', '-j', ...dd()]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ task: 'machine_create', delayMs: 10 });
    expect(jsonLines((await runCli(['faults', 'list', '-j', ...dd()])).stdout)).toHaveLength(1);
    await runCli(['faults', 'clear', ...dd()]);
  });
});
