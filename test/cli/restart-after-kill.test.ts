/**
 * A daemon killed with -9 and started again at once (issue 24): the start is not refused for
 * the dead daemon's pid (here a zombie: its parent, a shell that exec'd `sleep`, never reaps
 * it, as a supervisor script may not), the events the killed run left open get their end line
 * in events.jsonl, and no temp file of an interrupted durable write survives the start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fsp, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_ENV, MAIN, until } from './helpers/built-daemon.js';

type Obj = Record<string, any>;

describe('a daemon started again right after a kill -9', () => {
  const children: ChildProcess[] = [];
  let dataDir: string | undefined;

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  /** `mockcloud daemon` through `sh -c '... & exec sleep'`: its parent will not reap it. */
  async function startUnreaped(dir: string): Promise<{ pid: number; control: string }> {
    const pidFile = path.join(dir, 'daemon.pid');
    const out = path.join(dir, 'out');
    const sh = spawn('sh', ['-c', `"$0" "$1" daemon --data-dir "$2" --control-port 0 --servers 2 > "$3" 2>&1 & echo $! > "$4"; exec sleep 120`, process.execPath, MAIN, dir, out, pidFile], {
      env: CLI_ENV,
      stdio: 'ignore',
    });
    children.push(sh);
    await until(async () => /mock CNs: 2 \(wanted/.test(await fsp.readFile(out, 'utf8').catch(() => '')), 60_000, 'the first daemon');
    const info = JSON.parse(await fsp.readFile(path.join(dir, 'daemon.json'), 'utf8')) as Obj;
    return { pid: Number(await fsp.readFile(pidFile, 'utf8')), control: info.control.url };
  }

  it('starts at once, closes the events the killed run left open, and leaves no temp file behind', async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-restart-'));
    const first = await startUnreaped(dataDir);
    const started = await fetch(`${first.control}/events`, { method: 'POST', body: JSON.stringify({ type: 'offline', target: { count: 1 } }) });
    expect(started.status).toBe(201);
    const event = ((await started.json()) as Obj).id as string;
    // What a kill in the middle of writeFileDurable leaves: temp files beside their targets.
    const server = (await fsp.readdir(path.join(dataDir, 'servers'))).find((n) => /^[0-9a-f-]{36}$/.test(n))!;
    const temps = [
      path.join(dataDir, 'headnode', `.vmapi-vms.json.${first.pid}.0123456789ab.tmp`),
      path.join(dataDir, `.daemon.json.${first.pid}.0123456789ab.tmp`),
      path.join(dataDir, 'servers', server, `.sysinfo.json.${first.pid}.0123456789ab.tmp`),
    ];
    for (const t of temps) await fsp.writeFile(t, '{"torn":');

    process.kill(first.pid, 'SIGKILL');
    await until(async () => /^State:\s+Z/m.test(await fsp.readFile(`/proc/${first.pid}/status`, 'utf8').catch(() => 'State: Z')), 10_000, 'the daemon to die');

    const second = spawn(process.execPath, [MAIN, 'daemon', '--data-dir', dataDir, '--control-port', '0', '--servers', '2'], { env: CLI_ENV });
    children.push(second);
    let out = '';
    let err = '';
    second.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    second.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    await until(() => /mock CNs: 2 \(wanted/.test(out) || second.exitCode !== null, 60_000, 'the second daemon');
    expect(second.exitCode, err).toBe(null);
    expect(err).not.toMatch(/another mockcloud daemon/);

    const log = (await fsp.readFile(path.join(dataDir, 'events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Obj);
    expect(log.filter((r) => r.id === event).map((r) => [r.phase, r.reason])).toEqual([
      ['start', undefined],
      ['end', 'daemon-restart'],
    ]);
    await until(() => temps.every((t) => !existsSync(t)), 10_000, 'the temp files removed');

    second.kill('SIGTERM');
    await new Promise((r) => second.once('exit', r));
  }, 120_000);
});
