/**
 * command_execute with execution allowed (`--allow-execute`), over cn-agent's HTTP API as
 * CNAPI sends it. It follows sdc-cn-agent lib/backends/smartos/tasks/command_execute.js (the
 * script written to a 0700 file and exec'd with `args`, `env` as given, `timeout` in ms,
 * 5 MiB output buffers, the finish value `{err, exitCode, signal, stdout, stderr}`) and
 * node-forkexec's forkExecWait (the `err` messages). The mock global-zone commands on the
 * script's PATH answer from this CN's state. The commands are the compiled ones under dist/,
 * which `npm test` builds first.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, postTask, type TestCn } from './helpers.js';

/** Whether a process still runs (an unreaped zombie, orphaned to a PID 1 that does not reap, does not count). */
async function running(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = await fsp.readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}

async function waitUntilGone(pid: number): Promise<void> {
  for (let i = 0; i < 100 && (await running(pid)); i++) await new Promise((r) => setTimeout(r, 20));
  expect(await running(pid)).toBe(false);
}

interface Executed {
  err: { message: string } | null;
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

describe('command_execute with --allow-execute', () => {
  let h: Harness;
  let cn: TestCn;

  beforeAll(async () => {
    h = await Harness.create({ allowExecute: true });
    cn = await h.addCn();
  });
  afterAll(async () => {
    await h.close();
  });

  async function execute(params: Record<string, unknown>): Promise<Executed> {
    const r = await postTask<Executed>(cn, 'command_execute', params);
    expect(r.status).toBe(200);
    return r.body;
  }

  it('runs the script with its args and env and answers {err, exitCode, signal, stdout, stderr}', async () => {
    const r = await execute({
      script: '#!/bin/bash\necho "1=$1 2=$2 n=$#"\necho "FOO=$FOO"\necho to-stderr >&2\n',
      args: ['a', 'b c'],
      env: { FOO: 'bar' },
    });
    expect(r).toMatchObject({ err: null, exitCode: 0, signal: null, stdout: '1=a 2=b c n=2\nFOO=bar\n', stderr: 'to-stderr\n' });
  });

  it('reports a non-zero exit as forkexec does', async () => {
    const r = await execute({ script: '#!/bin/sh\necho partial\nexit 3\n', args: ['x'] });
    expect(r.exitCode).toBe(3);
    expect(r.signal).toBeNull();
    expect(r.stdout).toBe('partial\n');
    expect(r.err?.message).toMatch(/^exec "\S+\/cnagent-[0-9a-f]{8} x": exited with status 3$/);
  });

  it('kills the script with SIGKILL after `timeout` ms, and nothing it started outlives it', async () => {
    const started = Date.now();
    const r = await execute({ script: '#!/bin/bash\nsleep 30 &\necho $!\nsleep 30\n', timeout: 300 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    expect(r.err?.message).toMatch(/: unexpectedly terminated by signal SIGKILL$/);
    const child = Number(r.stdout.trim());
    expect(Number.isInteger(child) && child > 0).toBe(true);
    await waitUntilGone(child);
  });

  it('cuts output beyond 5 MiB and reports it', async () => {
    const r = await execute({ script: "#!/bin/bash\nhead -c 6000000 /dev/zero | tr '\\0' a\n" });
    expect(r).toMatchObject({ exitCode: null, signal: null });
    expect(r.err?.message).toMatch(/: stdout maxBuffer exceeded$/);
    expect(r.stdout.length).toBe(5 * 1024 * 1024);
  });

  it('puts the mock global-zone commands first on PATH, before a PATH the caller gives', async () => {
    const noPath = await execute({ script: '#!/bin/bash\necho "$PATH"\ncommand -v vmadm\n' });
    const [pathLine, vmadmAt] = noPath.stdout.trim().split('\n') as [string, string];
    const mockBin = pathLine.split(':')[0]!;
    expect(path.dirname(vmadmAt)).toBe(mockBin);
    const withPath = await execute({ script: '#!/bin/bash\necho "$PATH"\n', env: { PATH: '/opt/local/bin:/usr/bin' } });
    expect(withPath.stdout.trim()).toMatch(/^\S+:\/opt\/local\/bin:\/usr\/bin$/);
  });

  it('answers sysinfo, vmadm, zfs, zpool, imgadm, uname and hostname from this CN', async () => {
    const vm = await cn.cn.vms.create({
      brand: 'joyent-minimal',
      alias: 'web0',
      owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
      max_physical_memory: 256,
      quota: 10,
    });
    const script = [
      '#!/bin/bash',
      'set -e',
      'sysinfo | grep \'"UUID"\'',
      'uname -v',
      'hostname',
      'vmadm lookup -1 alias=web0',
      'vmadm get "$(vmadm lookup -1 alias=web0)" | grep \'"state"\'',
      'vmadm list -Hp -o alias,state,ram',
      'zfs list -H -o name,quota "zones/$(vmadm lookup -1 alias=web0)"',
      'zpool list -H -o name,health',
      'imgadm list -j',
    ].join('\n');
    const r = await execute({ script });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`  "UUID": "${cn.uuid}",`);
    expect(lines[1]).toBe(`joyent_${String(cn.cn.sysinfo['Live Image'])}`);
    expect(lines[2]).toBe(cn.cn.sysinfo.Hostname);
    expect(lines[3]).toBe(vm.uuid);
    expect(lines[4]).toBe('  "state": "running",');
    expect(lines[5]).toBe('web0:running:256');
    expect(lines[6]).toBe(`zones/${vm.uuid}\t10G`);
    expect(lines[7]).toBe('zones\tONLINE');
    expect(JSON.parse(lines.slice(8).join('\n'))).toEqual([]);
  });

  it('leaves neither the script nor the snapshot of the CN behind', async () => {
    const tmp = path.join(h.dataDir, 'tmp');
    const r = await execute({ script: '#!/bin/sh\nls "$(dirname "$0")" | grep -c "^cnagent-"\nvmadm list -H | wc -l\n' });
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
    expect(r.stdout.split('\n').map((l) => l.trim())).toEqual(['1', String(cn.cn.vms.size), '']);
    expect(await fsp.readdir(tmp)).toEqual([]);
  });

  it('gives the script an empty stdin', async () => {
    const r = await execute({ script: '#!/bin/sh\ncat\necho done\n', timeout: 5000 });
    expect(r).toMatchObject({ exitCode: 0, stdout: 'done\n' });
  });
});
