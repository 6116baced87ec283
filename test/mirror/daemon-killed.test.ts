/**
 * `mockcloud mirror load` while the daemon is killed (SIGKILL) under it, creating CNs: the
 * daemon started again on the same data dir and the load run again finish the job, and
 * nothing is left half made: no staged server dir, no admin NIC in NAPI without its CN, every
 * CN with its VMs. The capture is written here (the format of docs/mirror.md), not read from a
 * DC: 30 servers of mixed hardware with two VMs each, on a network of their own, and a network
 * NAPI refuses (reported, not a failure).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { CaptureWriter } from '../../src/mirror/format.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import { buildSysinfo } from '../../src/mockcn/sysinfo-template.js';
import { CLI_ENV, MAIN, until } from '../cli/helpers/built-daemon.js';
import { runCli } from '../cli/helpers/run-cli.js';

type Obj = Record<string, any>;

const SERVERS = 30;
const NET = newUuid();
const OWNER = '5b6e4f7c-1d2e-4a3b-8c9d-0e1f2a3b4c5d';

async function writeCapture(file: string): Promise<void> {
  const w = new CaptureWriter(file);
  await w.write('nic_tag', { name: 'external', mtu: 1500 });
  await w.write('network', {
    uuid: NET, name: 'tenant', nic_tag: 'external', vlan_id: 7, subnet: '10.77.0.0/22', provision_start_ip: '10.77.0.10',
    provision_end_ip: '10.77.3.250', gateway: '10.77.0.1', resolvers: [], mtu: 1500,
  });
  // One NAPI will not take (its provision range is outside its subnet): reported, not fatal.
  await w.write('network', {
    uuid: newUuid(), name: 'broken', nic_tag: 'external', vlan_id: 8, subnet: '10.78.0.0/24', provision_start_ip: '10.79.0.10',
    provision_end_ip: '10.79.0.250', resolvers: [], mtu: 1500,
  });
  const servers: string[] = [];
  for (let i = 0; i < SERVERS; i++) {
    const uuid = newUuid();
    servers.push(uuid);
    const profile = getProfile(['small', 'large', 'storage'][i % 3]);
    const sysinfo = buildSysinfo({
      uuid, profile, datacenterName: 'east', platform: '20240101T000000Z', adminMac: `00:10:fe:aa:00:${(2 * i).toString(16).padStart(2, '0')}`,
      adminIp: `10.99.99.${100 + i}`, extraMac: `00:10:fe:aa:00:${(2 * i + 1).toString(16).padStart(2, '0')}`, externalNic: true,
    });
    await w.write('server', { uuid, hostname: `cn${i}`, sysinfo, status: 'running', setup: true });
  }
  let n = 0;
  for (const server of servers) {
    for (let j = 0; j < 2; j++, n++) {
      await w.write('vm', {
        uuid: newUuid(), server_uuid: server, brand: 'joyent-minimal', alias: `vm${n}`, owner_uuid: OWNER, ram: 256, max_physical_memory: 256, quota: 10,
        state: j === 0 ? 'running' : 'stopped', autoboot: j === 0, customer_metadata: {}, tags: {}, internal_metadata: {},
        nics: [{ mac: `90:b8:d0:77:${(n >> 8).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`, ip: `10.77.1.${n + 1}`, netmask: '255.255.252.0', network_uuid: NET, nic_tag: 'external', vlan_id: 7, primary: true, interface: 'net0' }],
      });
    }
  }
  await w.finish({ source: { cnapi: 'x', vmapi: 'x', napi: 'x' }, capturedAt: new Date().toISOString(), durationMs: 0, redacted: false, vmStates: ['active'], adminUuid: '930896af-bf8c-48d4-885c-6573a94b1853', skipped: [] });
}

/** `mockcloud daemon` on the data dir (its dev headnode), until it runs. */
async function startDaemon(dataDir: string): Promise<{ child: ChildProcess; control: string; urls: Obj }> {
  const child = spawn(process.execPath, [MAIN, 'daemon', '--data-dir', dataDir, '--control-port', '0', '--servers', '0'], { env: CLI_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await until(() => /mock CNs: \d+/.test(out) || child.exitCode !== null, 60_000, 'the daemon to start');
  if (child.exitCode !== null) throw new Error(`the daemon exited: ${err}`);
  const info = JSON.parse(await fsp.readFile(path.join(dataDir, 'daemon.json'), 'utf8')) as Obj;
  return { child, control: info.control.url, urls: info.urls };
}

async function get(url: string): Promise<any> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return res.json();
}

describe('mirror load with the daemon killed under it', () => {
  let tmp: string;
  let dataDir: string;
  let file: string;
  let daemon: { child: ChildProcess; control: string; urls: Obj } | undefined;

  beforeAll(async () => {
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-mirror-kill-'));
    dataDir = path.join(tmp, 'data');
    file = path.join(tmp, 'dc.mirror.gz');
    await writeCapture(file);
  });

  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) {
      daemon.child.kill('SIGTERM');
      await new Promise((r) => daemon!.child.once('exit', r));
    }
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  }, 30_000);

  it('is finished by the daemon started again and the load run again, with nothing half made', async () => {
    daemon = await startDaemon(dataDir);
    const control = daemon.control;
    const load = spawn(process.execPath, [MAIN, 'mirror', 'load', file, '--data-dir', dataDir], { env: CLI_ENV, stdio: 'ignore' });
    const loadEnded = new Promise((r) => load.once('exit', r));
    // Killed once the CNs are being made.
    await until(async () => ((await get(`${control}/servers`)) as Obj[]).length >= 4, 30_000, 'the first CNs', 5);
    daemon.child.kill('SIGKILL');
    await new Promise((r) => daemon!.child.once('exit', r));
    await loadEnded;
    const madeBefore = (await fsp.readdir(path.join(dataDir, 'servers'))).filter((n) => !n.startsWith('.')).length;

    daemon = await startDaemon(dataDir);
    const again = await runCli(['mirror', 'load', file, '--data-dir', dataDir, '--json']);
    expect(again.code, again.stderr).toBe(0);
    const report = JSON.parse(again.stdout);
    expect(report.counts.server.created + report.counts.server.existing).toBe(SERVERS);
    expect(report.counts.vm.failed).toBe(0);
    expect(report.counts.vm.created + report.counts.vm.existing).toBe(2 * SERVERS);
    expect(report.counts.network).toMatchObject({ skipped: 1, failed: 0 });
    expect(report.notReproduced.find((n: Obj) => n.what === 'networks the loading DC refused')?.examples[0]).toMatch(/provision_start_ip/);

    // Every CN whole, with its two VMs; nothing staged or being deleted.
    const fleet = ((await get(`${daemon.control}/servers`)) as Obj[]).filter((s) => !s.headnode);
    expect(fleet).toHaveLength(SERVERS);
    expect(fleet.every((s) => s.vms === 2)).toBe(true);
    expect((await fsp.readdir(path.join(dataDir, 'servers'))).filter((n) => n.startsWith('.'))).toEqual([]);
    expect(madeBefore).toBeLessThanOrEqual(SERVERS + 1);
    // NAPI: one admin NIC per CN (and the headnode server's), none of a CN that does not exist.
    // A CN the kill left off boots at the start (DHCP to the dev booter), then registers.
    const cns = await until(async () => {
      const listed = new Set(((await get(`${daemon!.urls.cnapi}/servers`)) as Obj[]).map((s) => s.uuid));
      return listed.size === SERVERS + 1 ? listed : undefined;
    }, 30_000, 'every CN in CNAPI');
    const macs = new Set<string>();
    for (const uuid of cns) {
      const s = await get(`${daemon.urls.cnapi}/servers/${uuid}`);
      for (const nic of Object.values(s.sysinfo['Network Interfaces'] as Obj)) macs.add(nic['MAC Address']);
    }
    // (net-agent may have claimed an admin NIC for its CN meanwhile: belongs_to_type server.)
    const admin = (await get(`${daemon.urls.napi}/networks/admin`)) as Obj;
    const cnNics = ((await get(`${daemon.urls.napi}/nics?limit=1000`)) as Obj[]).filter((n) => n.belongs_to_type !== 'zone');
    for (const n of cnNics) expect(macs.has(n.mac), `NIC ${n.mac} (${n.belongs_to_type}) of a CN`).toBe(true);
    expect(cnNics.filter((n) => n.network_uuid === admin.uuid)).toHaveLength(SERVERS + 1);
    // The VMs' NICs: one each, at their captured addresses on the loaded network.
    const vmNics = (await get(`${daemon.urls.napi}/nics?belongs_to_type=zone&limit=1000`)) as Obj[];
    expect(vmNics).toHaveLength(2 * SERVERS);
    expect(vmNics.every((n) => n.network_uuid === NET && n.ip.startsWith('10.77.1.'))).toBe(true);
  }, 90_000);

  it('a damaged capture is refused before anything is made', async () => {
    const other = path.join(tmp, 'other.mirror.gz');
    await writeCapture(other);
    const bytes = await fsp.readFile(other);
    const cut = path.join(tmp, 'cut.mirror.gz');
    await fsp.writeFile(cut, bytes.subarray(0, Math.floor(bytes.length * 0.7)));
    const before = ((await get(`${daemon!.control}/servers`)) as Obj[]).length;
    const res = await runCli(['mirror', 'load', cut, '--data-dir', dataDir]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/is not a usable capture: (not gzip or cut short|it is cut short)/);
    expect(((await get(`${daemon!.control}/servers`)) as Obj[]).length).toBe(before);
  });

  it('a VM the loading DC cannot take is reported as not reproduced, not as a failure a second run would mend', async () => {
    const f = path.join(tmp, 'refused.mirror.gz');
    const w = new CaptureWriter(f);
    const uuid = newUuid();
    const sysinfo = buildSysinfo({
      uuid, profile: getProfile('small'), datacenterName: 'east', platform: '20240101T000000Z', adminMac: '00:10:fe:ab:00:02',
      adminIp: '10.99.99.90', extraMac: '00:10:fe:ab:00:03',
    });
    await w.write('server', { uuid, hostname: 'refuser', sysinfo, status: 'running', setup: true });
    const vm = { server_uuid: uuid, brand: 'joyent-minimal', owner_uuid: OWNER, ram: 256, max_physical_memory: 256, quota: 10, state: 'stopped', autoboot: false, nics: [] };
    await w.write('vm', { ...vm, uuid: 'not-a-uuid', alias: 'bad-uuid' });
    await w.write('vm', { ...vm, uuid: newUuid(), alias: 'bad-quota', quota: 'lots' });
    await w.finish({ source: { cnapi: 'x', vmapi: 'x', napi: 'x' }, capturedAt: new Date().toISOString(), durationMs: 0, redacted: false, vmStates: ['active'], adminUuid: '930896af-bf8c-48d4-885c-6573a94b1853', skipped: [] });
    const res = await runCli(['mirror', 'load', f, '--data-dir', dataDir]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/vm +0 created, 0 already there, 2 skipped, 0 failed/);
    expect(res.stdout).toMatch(/VMs whose uuid is not a UUID/);
    expect(res.stdout).toMatch(/VMs the loading DC refused: 1 \(e\.g\. .*quota/);
    expect(res.stderr).not.toMatch(/run the load again/);
  });

  it('a 64 MiB line and a gzip bomb are refused naming the line, in one line, never read whole', async () => {
    const other = path.join(tmp, 'other.mirror.gz');
    const header = zlib.gunzipSync(await fsp.readFile(other)).toString().split('\n')[0]!;
    const opening = `${header}\n{"kind":"nic_tag","data":{"name":"`;
    // A line of 64 MiB, whole in the file.
    const long = path.join(tmp, 'long-line.mirror.gz');
    await fsp.writeFile(long, Buffer.concat([zlib.gzipSync(opening), zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x61), { level: 1 }), zlib.gzipSync('"}}\n')]));
    // 2 MB of gzip that expand to one line of 2 GiB (gzip members one after the other are one stream).
    const member = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x61), { level: 9 });
    const bomb = path.join(tmp, 'bomb.mirror.gz');
    await fsp.writeFile(bomb, Buffer.concat([zlib.gzipSync(opening), ...Array.from({ length: 32 }, () => member)]));
    expect((await fsp.stat(bomb)).size).toBeLessThan(4 * 1024 * 1024);

    const before = ((await get(`${daemon!.control}/servers`)) as Obj[]).length;
    for (const f of [long, bomb]) {
      // A heap far smaller than the line: the load must never hold it.
      const res = await runCli(['mirror', 'load', f, '--data-dir', dataDir], { env: { ...CLI_ENV, NODE_OPTIONS: '--max-old-space-size=96' } });
      expect(res.code, res.stderr).toBe(1);
      // Past the line naming the daemon it talks to, the error is one line.
      const lines = res.stderr.trim().split('\n').filter((l) => !l.startsWith('daemon pid '));
      expect(lines, res.stderr.slice(0, 2000)).toHaveLength(1);
      expect(res.stderr).toMatch(/is not a usable capture: line 2 is over 8 MiB .*--max-line-mib/);
      expect(res.stderr).not.toMatch(/\n\s+at /);
    }
    expect(((await get(`${daemon!.control}/servers`)) as Obj[]).length).toBe(before);
  });

  it("finishes only its own unactivated image: one of that uuid that is someone else's is left alone and reported", async () => {
    const imgapi = daemon!.urls.imgapi as string;
    const image = (name: string, owner: string, uuid = newUuid()): Obj => ({
      v: 2, uuid, owner, name, version: '1.0.0', type: 'zone-dataset', os: 'smartos', requirements: { min_platform: { '7.0': '20240101T000000Z' } },
    });
    // Someone's upload under way in the loading DC, with the uuid of a captured image.
    const theirs = image('their-image', '7e6f5d4c-3b2a-4190-8f7e-6d5c4b3a2910');
    const imported = await fetch(`${imgapi}/images/${theirs.uuid}?action=import`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(theirs) });
    expect(imported.status, await imported.text()).toBeLessThan(300);
    // The capture's own image, cut off after its import by an earlier load: finished.
    const mine = image('my-image', OWNER);
    await fetch(`${imgapi}/images/${mine.uuid}?action=import`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(mine) });
    const f = path.join(tmp, 'images.mirror.gz');
    const w = new CaptureWriter(f);
    await w.write('image', { ...image('my-copy-of-it', OWNER, theirs.uuid as string), state: 'active' });
    await w.write('image', { ...mine, state: 'active' });
    await w.finish({ source: { cnapi: 'x', vmapi: 'x', napi: 'x' }, capturedAt: new Date().toISOString(), durationMs: 0, redacted: false, vmStates: ['active'], adminUuid: '930896af-bf8c-48d4-885c-6573a94b1853', skipped: [] });
    const res = await runCli(['mirror', 'load', f, '--data-dir', dataDir]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/images whose uuid the loading DC gives another, unactivated image \(left alone\): 1/);
    expect(await get(`${imgapi}/images/${theirs.uuid}`)).toMatchObject({ state: 'unactivated', owner: theirs.owner, name: 'their-image' });
    expect(await get(`${imgapi}/images/${mine.uuid}`)).toMatchObject({ state: 'active', owner: OWNER, name: 'my-image' });
  });
});
