/**
 * The operator CLI end to end, as an operator runs it: the built `mockcloud` as child processes
 * against a daemon running its embedded dev headnode (no Triton configured), in a temp data dir.
 * Triton's view is read with sdc-clients (real CNAPI/VMAPI/NAPI client code); after every
 * change the daemon, CNAPI, NAPI and the data dir must agree on exactly which CNs exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDaemonJson } from '../../src/daemon/daemon-json.js';
import { CLI_ENV, MAIN } from './helpers/built-daemon.js';
import { jsonLines } from './helpers/run-cli.js';
import { call, cnapiClient, napiClient, vmapiClient, type Client } from '../headnode/helpers/sdc-clients.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';
// New CNs without an external NIC, as on a real DC, so add-externals has work to do.
const ENV: NodeJS.ProcessEnv = { ...CLI_ENV, MOCKCLOUD_EXTERNAL_NICS: 'false' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: ENV });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mockcloud ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function exited(child: ChildProcess, timeoutMs = 20_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('process did not exit')), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** A foreground command (daemon, headnode) that runs until signalled; resolves once it printed `ready`. */
async function startForeground(args: string[], ready: string): Promise<{ child: ChildProcess; out: () => string; err: () => string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: ENV });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await waitFor(() => out.includes(ready) || child.exitCode !== null, 30_000, `mockcloud ${args[0]} start`);
  if (child.exitCode !== null) throw new Error(`mockcloud ${args.join(' ')} exited ${child.exitCode}: ${err}`);
  return { child, out: () => out, err: () => err };
}

interface HeadnodeUrls {
  cnapi: string;
  vmapi: string;
  napi: string;
  imgapi: string;
}

interface Listed {
  uuid: string;
  hostname: string;
  adminIp: string | null;
  agentAddress: string | null;
  vms: number;
  status: string | null;
  headnode: boolean;
}

describe('mockcloud CLI against the daemon and its embedded dev headnode', () => {
  let dataDir: string;
  let daemon: { child: ChildProcess; out: () => string; err: () => string } | undefined;
  let urls: HeadnodeUrls;
  let cnapi: Client;
  let vmapi: Client;
  let napi: Client;

  const dd = (): string[] => ['--data-dir', dataDir];

  async function startDaemon(): Promise<void> {
    daemon = await startForeground(['daemon', ...dd(), '--control-port', '0'], 'control API:');
    urls = JSON.parse(await fsp.readFile(path.join(dataDir, 'headnode.json'), 'utf8')) as HeadnodeUrls;
    cnapi = cnapiClient(urls.cnapi);
    vmapi = vmapiClient(urls.vmapi);
    napi = napiClient(urls.napi);
  }

  async function listJson(): Promise<Listed[]> {
    const r = await run(['list-servers', '-j', ...dd()]);
    expect(r.code, r.stderr).toBe(0);
    return jsonLines<Listed>(r.stdout);
  }

  /** The CNs on disk: uuid → admin MAC (from sysinfo.json); and any leftover staging dir. */
  async function onDisk(): Promise<{ servers: Map<string, string>; leftovers: string[] }> {
    const dir = path.join(dataDir, 'servers');
    const names = existsSync(dir) ? await fsp.readdir(dir) : [];
    const servers = new Map<string, string>();
    const leftovers: string[] = [];
    for (const name of names) {
      if (!/^[0-9a-f-]{36}$/.test(name)) {
        leftovers.push(name);
        continue;
      }
      const sysinfo = JSON.parse(await fsp.readFile(path.join(dir, name, 'sysinfo.json'), 'utf8'));
      servers.set(name, sysinfo['Network Interfaces'].dnet0['MAC Address']);
    }
    return { servers, leftovers };
  }

  /**
   * Daemon, disk, CNAPI and NAPI agree on exactly `n` compute nodes besides the dev DC's one
   * headnode server (and NAPI holds no stray CN NICs). Returns the compute nodes' uuids.
   */
  async function expectConsistent(n: number): Promise<string[]> {
    const listed = await listJson();
    const disk = await onDisk();
    expect(disk.leftovers).toEqual([]);
    const headnodes = listed.filter((s) => s.headnode);
    expect(headnodes.map((s) => s.hostname)).toEqual(['headnode']);
    const uuids = listed.filter((s) => !s.headnode).map((s) => s.uuid).sort();
    expect(uuids).toHaveLength(n);
    const all = listed.map((s) => s.uuid).sort();
    expect([...disk.servers.keys()].sort()).toEqual(all);
    const inCnapi = (await call<{ uuid: string }[]>(cnapi, 'listServers', { limit: 1000 })).map((s) => s.uuid).sort();
    expect(inCnapi).toEqual(all);
    const cnapiHeadnodes = await call<{ uuid: string }[]>(cnapi, 'listServers', { headnode: 'true' });
    expect(cnapiHeadnodes.map((s) => s.uuid)).toEqual([headnodes[0]!.uuid]);
    // Every admin NIC mockcloud allocated (owned by the admin user or claimed by its server)
    // belongs to a CN that exists, and every CN has its admin NIC.
    const nics = await call<{ mac: string; belongs_to_type: string; belongs_to_uuid: string; nic_tag?: string }[]>(napi, 'listNics', {
      limit: 1000,
    });
    const cnNics = nics.filter((nic) => nic.nic_tag === 'admin' && (nic.belongs_to_type === 'other' || nic.belongs_to_type === 'server'));
    expect(cnNics.map((nic) => nic.mac).sort()).toEqual([...disk.servers.values()].sort());
    return uuids;
  }

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npm test builds; or npm run build)`);
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-fleet-cli-'));
    // The first heartbeats are spread less, so CNs turn running sooner; the intervals stay real.
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: { startSpreadMs: 200 } }));
  });

  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) {
      daemon.child.kill('SIGKILL');
      await exited(daemon.child).catch(() => undefined);
    }
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('lists every command in --help, and says plainly when the daemon is down', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    for (const cmd of ['daemon', 'headnode', 'create-servers', 'ensure-servers', 'delete-servers', 'list-servers', 'status', 'add-externals', 'faults', 'rescan']) {
      expect(top.stdout).toMatch(new RegExp(`mockcloud ${cmd}\\b`));
    }
    const d = await run(['daemon', '--help']);
    expect(d.stdout).toContain('--servers');
    expect(d.stdout).toContain('--no-headnode');
    for (const args of [['status'], ['ensure-servers', '3'], ['delete-servers', '--all']]) {
      const r = await run([...args, ...dd()]);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toContain(`no mockcloud daemon is running for ${dataDir}`);
    }
    // A usage error: exit 2, as Triton's CLIs do.
    const both = await run(['delete-servers', '--all', '--count', '2', ...dd()]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/exactly one way/);
  });

  it('creates 50 CNs that register and run in the embedded CNAPI; lists them as a table and as JSON', async () => {
    await startDaemon();
    expect(daemon!.out()).toContain(`CNAPI:        ${urls.cnapi} (embedded dev headnode)`);
    const created = await run(['create-servers', '50', ...dd()]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(/created 50\/50 servers/);
    const uuids = await expectConsistent(50);

    const listed = await waitFor(async () => {
      const l = await listJson();
      return l.every((s) => s.status === 'running') ? l : undefined;
    }, 30_000, 'every CN running in CNAPI');
    const info = (await readDaemonJson(dataDir))!;
    for (const s of listed) {
      expect(s.adminIp).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      const addr = info.servers[s.uuid]!;
      expect(s.agentAddress).toBe(`${addr.ip}:${addr.port}`);
      expect(s.vms).toBe(0);
    }
    const table = await run(['list-servers', ...dd()]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^UUID\s+HOSTNAME\s+ADMIN IP\s+CN-AGENT\s+VMS\s+STATUS\s+ROLE\s+PROFILE$/);
    // The dev DC's headnode server first, marked as such; then the compute nodes.
    expect(lines[1]).toMatch(/\sheadnode\s.*\brunning\s+headnode\s+virtual$/);
    expect(lines.slice(2).map((l) => l.split(/\s+/)[0]).sort()).toEqual(uuids);
    for (const l of lines.slice(2)) expect(l).toMatch(/\brunning\s+cn\s+virtual$/);

    const status = await run(['status', ...dd()]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/mock CNs:\s+51 \(51 registered\)/);
    // The embedded headnode's SAPI, where the CNs' agent instances are adopted (RFD 82).
    expect(status.stdout).toMatch(/SAPI:\s+http:\/\/127\.0\.0\.1:\d+: \d+ instances adopted, \d+ found/);
    const sj = JSON.parse((await run(['status', '-j', ...dd()])).stdout) as { servers: number; heartbeatsPerSecond: number };
    expect(sj.servers).toBe(51);
  }, 90_000);

  it('ensure-servers 20 deletes the 30 newest everywhere, and a second run changes nothing', async () => {
    // "Newest": latest sysinfo "Zpool Creation" (creation time, in seconds); uuid order breaks ties.
    const created: [string, number][] = [];
    for (const uuid of (await onDisk()).servers.keys()) {
      const sysinfo = JSON.parse(await fsp.readFile(path.join(dataDir, 'servers', uuid, 'sysinfo.json'), 'utf8'));
      if (sysinfo['Boot Parameters']?.headnode === 'true') continue; // the headnode server is not a compute node
      created.push([uuid, sysinfo['Zpool Creation']]);
    }
    created.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
    const oldest = created.slice(0, 20).map(([u]) => u).sort();
    const r = await run(['ensure-servers', '20', ...dd()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/20 mock CNs \(were 50\)/);
    const uuids = await expectConsistent(20);
    expect(uuids).toEqual(oldest);
    const again = await run(['ensure-servers', '20', ...dd()]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing to do/);
    expect(await expectConsistent(20)).toEqual(uuids);
  }, 60_000);

  it('add-externals tags dnet1 of every CN as external through CNAPI; a second run finds nothing to do (and VMs on the external network can be placed)', async () => {
    const r = await run(['add-externals', ...dd()]);
    expect(r.code, r.stderr).toBe(0);
    // The headnode server has its external NIC from the start, as a headnode does.
    expect(r.stdout).toMatch(/added an external NIC to 20 mock CN\(s\); 1 had one already/);
    const servers = await call<{ sysinfo: Record<string, any> }[]>(cnapi, 'listServers', { extras: 'sysinfo' });
    expect(servers).toHaveLength(21);
    for (const s of servers) expect(s.sysinfo['Network Interfaces'].dnet1['NIC Names']).toContain('external');
    // The CNs' own sysinfo.json says so too (the cn-agent task rewrote it).
    for (const uuid of (await onDisk()).servers.keys()) {
      const sysinfo = JSON.parse(await fsp.readFile(path.join(dataDir, 'servers', uuid, 'sysinfo.json'), 'utf8'));
      expect(sysinfo['Network Interfaces'].dnet1['NIC Names']).toContain('external');
    }
    const again = await run(['add-externals', ...dd()]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/added an external NIC to 0 mock CN\(s\); 21 had one already/);
  }, 60_000);

  it('delete-servers by UUID takes the CN\'s VMs (destroyed in VMAPI, NICs gone from NAPI) with it; --count deletes the newest', async () => {
    const images = (await (await fetch(`${urls.imgapi}/images?type=zone-dataset`)).json()) as { uuid: string }[];
    const res = await call<{ vm_uuid: string; job_uuid: string }>(vmapi, 'createVm', {
      owner_uuid: ADMIN,
      image_uuid: images[0]!.uuid,
      brand: 'joyent-minimal',
      ram: 256,
      networks: [{ name: 'external' }],
    });
    const job = await waitFor(async () => {
      const j = await call<{ execution: string }>(vmapi, 'getJob', res.job_uuid);
      return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
    }, 30_000, 'provision job');
    expect(job.execution).toBe('succeeded');
    const vm = await call<{ server_uuid: string; nics: { mac: string }[] }>(vmapi, 'getVm', { uuid: res.vm_uuid });
    expect(vm.nics).toHaveLength(1);
    const host = (await listJson()).find((s) => s.uuid === vm.server_uuid)!;
    expect(host.vms).toBe(1);

    const del = await run(['delete-servers', vm.server_uuid, ...dd()]);
    expect(del.code, del.stderr).toBe(0);
    expect(del.stdout).toContain(`deleted ${vm.server_uuid} (and its 1 VM(s))`);
    expect((await call<{ state: string }>(vmapi, 'getVm', { uuid: res.vm_uuid })).state).toBe('destroyed');
    expect(await call<unknown[]>(napi, 'listNics', { belongs_to_uuid: res.vm_uuid })).toEqual([]);
    const left = await expectConsistent(19);
    expect(left).not.toContain(vm.server_uuid);

    const gone = await run(['delete-servers', vm.server_uuid, ...dd()]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('not found');

    const byCount = await run(['delete-servers', '--count', '2', ...dd()]);
    expect(byCount.code, byCount.stderr).toBe(0);
    expect(byCount.stdout.trim().split('\n')).toHaveLength(2);
    await expectConsistent(17);
  }, 60_000);

  it('a create-servers run cut short by SIGKILL of the daemon leaves, after a restart and a second run, exactly N consistent CNs', async () => {
    const before = (await onDisk()).servers.size;
    const cli = spawn(process.execPath, [MAIN, 'create-servers', '60', ...dd()], { cwd: ROOT, env: ENV });
    let cliErr = '';
    cli.stderr.on('data', (d: Buffer) => (cliErr += d.toString('utf8')));
    cli.stdout.resume();
    // Kill while creations are in flight: some CNs exist beyond the 17, not all 60 yet.
    await waitFor(async () => (await onDisk()).servers.size >= before + 3, 30_000, 'creations under way');
    daemon!.child.kill('SIGKILL');
    await exited(daemon!.child);
    expect(await exited(cli)).not.toBe(0);
    // The CLI counts what the daemon finished, not only the batches it answered.
    const made = (await onDisk()).servers.size - before;
    expect(made).toBeGreaterThan(0);
    expect(cliErr).toContain(`created ${made} of 60 servers before the daemon went away`);

    await startDaemon();
    expect((await onDisk()).leftovers).toEqual([]); // interrupted creations were cleaned up at start
    const r = await run(['ensure-servers', '30', ...dd()]);
    expect(r.code, r.stderr).toBe(0);
    await expectConsistent(30);
  }, 90_000);

  it('delete-servers --all removes every CN everywhere; list-servers then works without the daemon', async () => {
    const r = await run(['delete-servers', '--all', ...dd()]);
    expect(r.code, r.stderr).toBe(0);
    await expectConsistent(0);
    expect((await run(['ensure-servers', '3', ...dd()])).code).toBe(0);
    const live = await listJson();
    daemon!.child.kill('SIGTERM');
    expect(await exited(daemon!.child)).toBe(0);
    const offline = await run(['list-servers', '-j', ...dd()]);
    expect(offline.code).toBe(0);
    expect(offline.stderr).toMatch(/no daemon runs/);
    const rows = jsonLines<Listed>(offline.stdout);
    expect(rows.map((s) => [s.uuid, s.hostname, s.adminIp])).toEqual(live.map((s) => [s.uuid, s.hostname, s.adminIp]));
    for (const s of rows) {
      expect(s.agentAddress).toBeNull();
      expect(s.status).toBeNull();
    }
  }, 60_000);

  it('`mockcloud headnode` alone answers sdc-clients CNAPI, VMAPI and NAPI, and stops on SIGTERM', async () => {
    const hnDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-headnode-cli-'));
    try {
      const hn = await startForeground(['headnode', '--data-dir', hnDir], 'NAPI:');
      const file = JSON.parse(await fsp.readFile(path.join(hnDir, 'headnode.json'), 'utf8')) as HeadnodeUrls;
      for (const svc of ['cnapi', 'vmapi', 'napi', 'imgapi'] as const) {
        expect(file[svc]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(hn.out()).toContain(file[svc]);
      }
      // It is a DC with its headnode server (sdc-cnapi's tests start from GET /servers?headnode=true).
      const hnServers = await waitFor(async () => {
        const l = await call<{ uuid: string; hostname: string; headnode: boolean; status: string }[]>(cnapiClient(file.cnapi), 'listServers', {});
        return l.length === 1 && l[0]!.status === 'running' ? l : undefined;
      }, 20_000, 'the headnode server running in CNAPI');
      expect(hnServers[0]).toMatchObject({ hostname: 'headnode', headnode: true });
      expect(hn.out()).toContain(`headnode server: ${hnServers[0]!.uuid}`);
      await call(cnapiClient(file.cnapi), 'ping');
      expect(await call(vmapiClient(file.vmapi), 'listVms', {})).toEqual([]);
      const networks = await call<{ name: string }[]>(napiClient(file.napi), 'listNetworks', {});
      expect(networks.map((n) => n.name).sort()).toEqual(expect.arrayContaining(['admin', 'external']));
      hn.child.kill('SIGTERM');
      expect(await exited(hn.child)).toBe(0);
      expect(existsSync(path.join(hnDir, 'headnode.json'))).toBe(false);
    } finally {
      await fsp.rm(hnDir, { recursive: true, force: true });
    }
  }, 60_000);
});
