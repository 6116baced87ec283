/**
 * `mockcloud mirror capture` and `load` through the built CLI, between two daemons with their
 * own dev headnodes: daemon A gets a varied fleet (three profiles, one with a NIC tag of its
 * own and traits, one reserved), networks of its own (an owned one on a new NIC tag, a VLAN of
 * the external tag) and a pool, an lx image of a customer, and VMs of five brands in both
 * states through its VMAPI; A is captured (redacted) and loaded into daemon B. B's CNAPI,
 * VMAPI and NAPI (read with sdc-clients) then answer A's inventory field by field, modulo what
 * redaction replaces; nothing A's customers wrote is in the file; a second load changes
 * nothing; a load killed while its VMs are being made, run again with --remap-uuids, finishes.
 */
import { promises as fsp } from 'node:fs';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { capture as captureDc } from '../../src/mirror/capture.js';
import { readCapture, readCaptureHeader } from '../../src/mirror/format.js';
import { startBuiltDaemon, until, type BuiltDaemon, CLI_ENV, MAIN } from '../cli/helpers/built-daemon.js';
import { runCli } from '../cli/helpers/run-cli.js';
import { call, closeClient, cnapiClient, napiClient, vmapiClient, type Client } from '../headnode/helpers/sdc-clients.js';

type Obj = Record<string, any>;

const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';
const OWNER = '5b6e4f7c-1d2e-4a3b-8c9d-0e1f2a3b4c5d';
const OWNER2 = '6c7f5a8d-2e3f-4b4c-9dae-1f2a3b4c5d6e';
const BASE_IMAGE = 'cb4ad938-37d4-5d50-b4e9-7c02c6799ffd';
const UBUNTU_IMAGE = '083f0682-c577-5b7d-8717-6e09e1f447bb';
const LX_IMAGE = newUuid();
const CUSTOM_PACKAGE = newUuid();
/** What A's customers wrote: none of it may be in a redacted capture. */
const SECRETS = ['alias-secret-web0', 'alias-secret-lx0', 'alias-secret-bh0', 'alias-secret-kvm0', 'alias-secret-res0', 'meta-secret-1', 'meta-secret-2', 'tag-secret-db', 'tag-secret-team'];

async function json(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': Buffer.isBuffer(body) ? 'application/octet-stream' : 'application/json' },
    ...(body === undefined ? {} : { body: Buffer.isBuffer(body) ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function ok(method: string, url: string, body?: unknown): Promise<any> {
  const res = await json(method, url, body);
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function controlUrl(d: BuiltDaemon): Promise<string> {
  return (JSON.parse(await fsp.readFile(path.join(d.dataDir, 'daemon.json'), 'utf8')) as Obj).control.url;
}

interface Side {
  daemon: BuiltDaemon;
  control: string;
  cnapi: Client;
  vmapi: Client;
  napi: Client;
}

async function side(daemon: BuiltDaemon): Promise<Side> {
  return { daemon, control: await controlUrl(daemon), cnapi: cnapiClient(daemon.urls.cnapi), vmapi: vmapiClient(daemon.urls.vmapi), napi: napiClient(daemon.urls.napi) };
}

/** The fleet's CNs (not the DC's own headnode server), with sysinfo, by uuid. */
async function servers(s: Side): Promise<Map<string, Obj>> {
  const list = await call<Obj[]>(s.cnapi, 'listServers', { extras: 'sysinfo' });
  return new Map(list.filter((x) => x.sysinfo?.['Headnode ID'] === undefined).map((x) => [x.uuid, x]));
}

async function vms(s: Side): Promise<Map<string, Obj>> {
  const list = await call<Obj[]>(s.vmapi, 'listVms', { state: 'active' });
  return new Map(list.map((v) => [v.uuid, v]));
}

async function networks(s: Side): Promise<Map<string, Obj>> {
  return new Map((await call<Obj[]>(s.napi, 'listNetworks', {})).map((n) => [n.uuid, n]));
}

function ipNum(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

/** An address's place in its network's subnet. */
function offsetIn(net: Obj, ip: string): number {
  return ipNum(ip) - ipNum(String(net.subnet).split('/')[0]!);
}

async function provision(a: Side, params: Obj): Promise<string> {
  const res = await ok('POST', `${a.daemon.urls.vmapi}/vms`, params);
  await waitJob(a, res.job_uuid);
  return res.vm_uuid;
}

async function waitJob(a: Side, job: string): Promise<void> {
  const done = await until(async () => {
    const j = await ok('GET', `${a.daemon.urls.vmapi}/jobs/${job}`);
    return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
  }, 30_000, `job ${job}`);
  if (done.execution !== 'succeeded') throw new Error(`job ${job} failed: ${JSON.stringify(done.chain_results?.slice(-1))}`);
}

describe('mirror capture and load, daemon A to daemon B', () => {
  let tmp: string;
  let a: Side;
  let b: Side;
  let capture: string;
  let loadReport: Obj;
  const blue = newUuid();
  const green = newUuid();
  const pool = newUuid();

  beforeAll(async () => {
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-mirror-'));
    const profiles = path.join(tmp, 'profiles');
    await fsp.mkdir(profiles);
    await fsp.writeFile(
      path.join(profiles, 'tagged.yaml'),
      'name: tagged\nextends: large\nnics: [{tags: [external]}, {tags: [blue]}]\ntraits: {ssd: true}\noverprovisionRatios: {cpu: 2}\n',
    );
    const [da, db] = await Promise.all([
      startBuiltDaemon({ servers: 0, args: ['--profiles-dir', profiles] }),
      startBuiltDaemon({ servers: 0 }),
    ]);
    [a, b] = await Promise.all([side(da), side(db)]);
    capture = path.join(tmp, 'dc.mirror.gz');

    await ok('POST', `${a.daemon.urls.napi}/nic_tags`, { name: 'blue', mtu: 9000 });
    // A's fleet: three profiles, one with its own NIC tag and traits, one reserved.
    for (const req of [
      { count: 2, profile: 'small' },
      { count: 1, profile: 'tagged' },
      { count: 1, profile: 'storage', placement: { reserved: true } },
    ]) {
      const res = await ok('POST', `${a.control}/servers`, req);
      expect(res.errors).toEqual([]);
    }
    const fleet = (await ok('GET', `${a.control}/servers`)) as Obj[];
    const byProfile = (p: string): string[] => fleet.filter((s) => s.profile === p).map((s) => s.uuid);
    await until(async () => (await servers(a)).size === 4, 20_000, "A's CNs in CNAPI");

    // A's networks: an owned one on a NIC tag of its own, a VLAN of the external tag, a pool.
    const napi = a.daemon.urls.napi;
    await ok('POST', `${napi}/networks`, {
      uuid: blue, name: 'blue-net', nic_tag: 'blue', vlan_id: 12, subnet: '10.20.0.0/24', provision_start_ip: '10.20.0.10',
      provision_end_ip: '10.20.0.200', gateway: '10.20.0.1', resolvers: ['10.20.0.2', '8.8.8.8'], owner_uuids: [OWNER], mtu: 9000,
    });
    await ok('POST', `${napi}/networks`, {
      uuid: green, name: 'green-net', nic_tag: 'external', vlan_id: 5, subnet: '10.30.0.0/23', provision_start_ip: '10.30.0.20',
      provision_end_ip: '10.30.1.250', gateway: '10.30.0.1', routes: { '10.40.0.0/16': '10.30.0.5' },
    });
    await ok('POST', `${napi}/network_pools`, { uuid: pool, name: 'blue-pool', networks: [blue] });

    // A customer's lx image.
    const imgapi = a.daemon.urls.imgapi;
    await ok('POST', `${imgapi}/images/${LX_IMAGE}?action=import`, {
      v: 2, uuid: LX_IMAGE, owner: OWNER, name: 'alpine-lx', version: '3.19', type: 'lx-dataset', os: 'linux', public: false,
      requirements: { brand: 'lx' },
    });
    await ok('PUT', `${imgapi}/images/${LX_IMAGE}/file?compression=gzip`, zlib.gzipSync(Buffer.from('lx')));
    await ok('POST', `${imgapi}/images/${LX_IMAGE}?action=activate`);

    // A customer's package in A's PAPI (beside a fresh DC's sdc_* and sample-* ones).
    await ok('POST', `${a.daemon.urls.papi}/packages`, {
      uuid: CUSTOM_PACKAGE, name: 'mc-mirror-4G', version: '1.0.0', active: true, cpu_cap: 400, max_lwps: 4000,
      max_physical_memory: 4096, max_swap: 8192, quota: 102400, zfs_io_priority: 100, owner_uuids: [OWNER],
    });

    // VMs of four brands, in both states, through A's VMAPI.
    const [small0, small1] = byProfile('small');
    const vmsMade = await Promise.all([
      provision(a, {
        server_uuid: byProfile('tagged')[0], owner_uuid: OWNER, brand: 'joyent-minimal', image_uuid: BASE_IMAGE, ram: 512, quota: 20, alias: 'alias-secret-web0',
        networks: [{ uuid: blue, primary: true }, { name: 'external' }], customer_metadata: { 'user-data': 'meta-secret-1' }, tags: { role: 'tag-secret-db', billing: 7, ha: true },
      }),
      provision(a, {
        server_uuid: byProfile('tagged')[0], owner_uuid: OWNER2, brand: 'lx', image_uuid: LX_IMAGE, kernel_version: '4.3.0', ram: 1024, alias: 'alias-secret-lx0',
        networks: [{ uuid: green }], customer_metadata: { note: 'meta-secret-2' }, tags: { team: 'tag-secret-team' },
      }),
      provision(a, {
        server_uuid: small0, owner_uuid: OWNER, brand: 'bhyve', ram: 2048, alias: 'alias-secret-bh0',
        disks: [{ image_uuid: UBUNTU_IMAGE, boot: true }, { size: 4096 }], networks: [{ name: 'external' }],
      }),
      provision(a, {
        server_uuid: small1, owner_uuid: ADMIN, brand: 'kvm', ram: 1024, alias: 'alias-secret-kvm0',
        disks: [{ image_uuid: UBUNTU_IMAGE, boot: true }, { size: 2048 }], networks: [{ name: 'external' }],
      }),
      provision(a, {
        server_uuid: byProfile('storage')[0], owner_uuid: OWNER, brand: 'joyent', image_uuid: BASE_IMAGE, ram: 256, alias: 'alias-secret-res0',
        networks: [{ uuid: green }],
      }),
    ]);
    // Two stopped: an lx and a kvm.
    for (const uuid of [vmsMade[1]!, vmsMade[3]!]) {
      const res = await ok('POST', `${a.daemon.urls.vmapi}/vms/${uuid}?action=stop`, {});
      await waitJob(a, res.job_uuid);
    }
    await until(async () => {
      const all = await vms(a);
      return all.size === 5 && [...all.values()].filter((v) => v.state === 'stopped').length === 2;
    }, 20_000, "A's VMs settled in VMAPI");
  }, 90_000);

  afterAll(async () => {
    for (const s of [a, b]) {
      if (!s) continue;
      for (const c of [s.cnapi, s.vmapi, s.napi]) closeClient(c);
    }
    await Promise.all([a?.daemon.stop(), b?.daemon.stop()]);
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  }, 60_000);

  it('captures A (redacted) and loads it into B, reporting what B cannot reproduce', async () => {
    const cap = await runCli(['mirror', 'capture', '--data-dir', a.daemon.dataDir, '-o', capture]);
    expect(cap.code, cap.stderr).toBe(0);
    expect(cap.stdout).toMatch(/5 servers, 5 VMs, 4 networks, 1 pools, 3 NIC tags, .* \(redacted\)/);
    const load = await runCli(['mirror', 'load', capture, '--data-dir', b.daemon.dataDir, '--json']);
    expect(load.code, load.stderr).toBe(0);
    loadReport = JSON.parse(load.stdout);
    expect(loadReport.counts.server).toEqual({ created: 4, existing: 0, failed: 0, skipped: 1 });
    expect(loadReport.counts.vm).toEqual({ created: 5, existing: 0, failed: 0, skipped: 0 });
    expect(loadReport.counts.network).toMatchObject({ created: 3, existing: 1, failed: 0 });
    expect(loadReport.counts.image).toMatchObject({ created: 1, failed: 0 });
    // Packages, into B's dev PAPI without --papi-url: the sdc_* ones B has (a DC's fixed
    // uuids), A's sample-* ones and its customer's package made with their uuids.
    expect(loadReport.counts.package).toEqual({ created: 14, existing: 12, failed: 0, skipped: 0 });
    const custom = await ok('GET', `${b.daemon.urls.papi}/packages/${CUSTOM_PACKAGE}`);
    expect(custom).toMatchObject({ name: 'mc-mirror-4G', max_physical_memory: 4096, quota: 102400, cpu_cap: 400 });
    expect(custom.owner_uuids).toHaveLength(1);
    expect(custom.owner_uuids[0]).not.toBe(OWNER);
    // Every VM NIC checked in B's NAPI after its VM was made.
    const vmNics = [...(await vms(a)).values()].reduce((n, v) => n + v.nics.length, 0);
    expect(loadReport.counts.nic).toMatchObject({ existing: vmNics, failed: 0 });
    const lost = loadReport.notReproduced.map((n: Obj) => n.what).join('\n');
    expect(lost).toContain('network names taken in the loading DC');
    expect(lost).toContain("the DC's headnode server");
  });

  it("B's CNAPI answers A's servers: hardware, NIC tags, platform, placement; hostnames redacted", async () => {
    const [sa, sb] = await Promise.all([servers(a), servers(b)]);
    expect([...sb.keys()].sort()).toEqual([...sa.keys()].sort());
    const hostnames = new Set<string>();
    for (const [uuid, x] of sa) {
      const y = sb.get(uuid)!;
      expect(y.hostname).toMatch(/^cn-[0-9a-f]{12}$/);
      expect(y.hostname).not.toBe(x.hostname);
      hostnames.add(y.hostname);
      for (const f of ['ram', 'current_platform', 'reserved', 'reservoir', 'traits', 'overprovision_ratios', 'headnode', 'setup', 'status']) {
        expect(y[f], `${uuid} ${f}`).toEqual(x[f]);
      }
      for (const k of ['Manufacturer', 'Product', 'CPU Type', 'CPU Socket Count', 'CPU Core Count', 'CPU Count', 'MiB of Memory', 'Zpool Profile', 'Zpool Size in GiB', 'VM Capable', 'Bhyve Capable', 'Bhyve Max Vcpus', 'Live Image']) {
        expect(y.sysinfo[k], `${uuid} sysinfo ${k}`).toEqual(x.sysinfo[k]);
      }
      const disks = (s: Obj): number[] => Object.values(s.sysinfo.Disks as Obj).map((d: Obj) => d['Size in GB']).sort();
      expect(disks(y)).toEqual(disks(x));
      const tags = (s: Obj): string[][] =>
        Object.keys(s.sysinfo['Network Interfaces']).sort().map((n) => [...s.sysinfo['Network Interfaces'][n]['NIC Names']].sort());
      expect(tags(y)).toEqual(tags(x));
    }
    expect(hostnames.size).toBe(sa.size);
  });

  it("B's VMAPI answers A's VMs on the same servers with their properties and states, modulo redaction", async () => {
    const [va, vb, na, nb] = await Promise.all([vms(a), until(async () => {
      const v = await vms(b);
      return v.size === 5 && [...v.values()].every((x) => x.nics.every((n: Obj) => n.ip)) ? v : undefined;
    }, 20_000, "B's VMs in VMAPI"), networks(a), networks(b)]);
    expect([...vb.keys()].sort()).toEqual([...va.keys()].sort());
    const owners = new Map<string, string>();
    const aliases = new Set<string>();
    for (const [uuid, x] of va) {
      const y = vb.get(uuid)!;
      for (const f of ['server_uuid', 'brand', 'ram', 'max_physical_memory', 'max_swap', 'max_lwps', 'quota', 'cpu_cap', 'cpu_shares', 'zfs_io_priority', 'image_uuid', 'state', 'autoboot', 'billing_id', 'firewall_enabled']) {
        expect(y[f], `${x.alias} ${f}`).toEqual(x[f]);
      }
      if (x.disks) {
        expect(y.disks.map((d: Obj) => [d.size, d.image_uuid ?? null, d.boot, d.model])).toEqual(x.disks.map((d: Obj) => [d.size, d.image_uuid ?? null, d.boot, d.model]));
      }
      // Redacted: the same keys, values replaced; owners mapped one to one, the admin kept.
      expect(Object.keys(y.customer_metadata).sort()).toEqual(Object.keys(x.customer_metadata).sort());
      for (const v of Object.values(y.customer_metadata)) expect(v).toBe('redacted');
      expect(Object.keys(y.tags).sort()).toEqual(Object.keys(x.tags).sort());
      for (const [k, v] of Object.entries(x.tags)) expect(y.tags[k]).toEqual(typeof v === 'string' ? 'redacted' : v);
      expect(y.alias).toMatch(/^vm-[0-9a-f]{12}$/);
      aliases.add(y.alias);
      if (x.owner_uuid === ADMIN) expect(y.owner_uuid).toBe(ADMIN);
      else expect(y.owner_uuid).not.toBe(x.owner_uuid);
      if (owners.has(x.owner_uuid)) expect(y.owner_uuid).toBe(owners.get(x.owner_uuid));
      owners.set(x.owner_uuid, y.owner_uuid);
      // NICs: the same MACs on the same networks, at the same place in their (moved) subnets.
      expect(y.nics).toHaveLength(x.nics.length);
      for (const nx of x.nics) {
        const ny = y.nics.find((n: Obj) => n.mac === nx.mac);
        expect(ny, `${x.alias} NIC ${nx.mac}`).toBeDefined();
        for (const f of ['network_uuid', 'nic_tag', 'vlan_id', 'netmask', 'primary', 'mtu']) expect(ny[f], `${x.alias} NIC ${f}`).toEqual(nx[f]);
        expect(offsetIn(nb.get(ny.network_uuid)!, ny.ip)).toBe(offsetIn(na.get(nx.network_uuid)!, nx.ip));
        expect(ny.ip).not.toBe(nx.ip);
      }
    }
    expect(new Set(owners.values()).size).toBe(owners.size);
    expect(aliases.size).toBe(va.size);
  });

  it("B's NAPI answers A's networks, pool, NIC tags and VM NICs", async () => {
    const [na, nb] = await Promise.all([networks(a), networks(b)]);
    for (const uuid of [blue, green, [...na.values()].find((n) => n.name === 'external')!.uuid]) {
      const x = na.get(uuid)!;
      const y = nb.get(uuid)!;
      expect(y, x.name).toBeDefined();
      for (const f of ['nic_tag', 'vlan_id', 'mtu', 'netmask', 'description']) expect(y[f], `${x.name} ${f}`).toEqual(x[f]);
      expect(y.subnet.split('/')[1]).toBe(x.subnet.split('/')[1]);
      expect(y.subnet.startsWith('10.128.')).toBe(true);
      for (const f of ['gateway', 'provision_start_ip', 'provision_end_ip']) expect(offsetIn(y, y[f]), `${x.name} ${f}`).toBe(offsetIn(x, x[f]));
      expect(y.owner_uuids?.length ?? 0).toBe(x.owner_uuids?.length ?? 0);
    }
    expect(nb.get(blue)!.name).toBe('blue-net');
    // The external network's name is B's own external's: loaded under a suffixed name.
    expect([...nb.values()].filter((n) => n.name === 'external')).toHaveLength(1);
    expect(nb.get(green)!.resolvers).toEqual([]);
    expect(Object.values(nb.get(green)!.routes ?? {})).toHaveLength(1);
    const pb = await call<Obj>(b.napi, 'getNetworkPool', pool);
    expect(pb.networks).toEqual([blue]);
    const tags = await call<Obj[]>(b.napi, 'listNicTags', {});
    expect(tags.find((t) => t.name === 'blue')).toMatchObject({ mtu: 9000 });
    // Every VM NIC is in NAPI, owned by its VM on its server, in the VM's state.
    const vb = await vms(b);
    for (const vm of vb.values()) {
      const nics = await until(async () => {
        const list = await call<Obj[]>(b.napi, 'listNics', { belongs_to_uuid: vm.uuid });
        return list.length === vm.nics.length && list.every((n) => n.state === vm.state) ? list : undefined;
      }, 15_000, `NAPI NICs of ${vm.uuid}`);
      for (const n of nics) {
        expect(n).toMatchObject({ belongs_to_type: 'zone', cn_uuid: vm.server_uuid, owner_uuid: vm.owner_uuid });
        expect(vm.nics.find((x: Obj) => x.mac === n.mac)?.ip).toBe(n.ip);
      }
    }
  });

  it('the capture holds nothing A\'s customers wrote (metadata, tag values, aliases) nor their addresses', async () => {
    const text = zlib.gunzipSync(await fsp.readFile(capture)).toString('utf8');
    for (const s of SECRETS) expect(text).not.toContain(s);
    expect(text).not.toContain(OWNER);
    expect(text).not.toContain(OWNER2);
    for (const vm of (await vms(a)).values()) for (const n of vm.nics) expect(text).not.toContain(`"${n.ip}"`);
    for (const s of (await servers(a)).values()) expect(text).not.toContain(s.hostname);
    const header = JSON.parse(text.slice(0, text.indexOf('\n')));
    expect(header).toMatchObject({ format: 'mockcloud-mirror', version: 1, redacted: true, counts: { server: 5, vm: 5 } });
    expect(text.trimEnd().endsWith('{"kind":"end"}')).toBe(true);
  });

  it('pages every list (a page of 2 here) and, unredacted, keeps what A has', async () => {
    const file = path.join(tmp, 'small-pages.gz');
    {
      const header = await captureDc({
        urls: { cnapi: a.daemon.urls.cnapi, vmapi: a.daemon.urls.vmapi, napi: a.daemon.urls.napi, imgapi: a.daemon.urls.imgapi, papi: a.daemon.urls.papi },
        output: file,
        vmStates: ['running', 'stopped'],
        redact: false,
        adminUuid: ADMIN,
        pageSize: 2,
      });
      // NICs against A's NAPI now (its CNs' own NICs may have come in since the first capture).
      const full = await readCaptureHeader(capture);
      expect({ ...header.counts, nic: 0 }).toEqual({ ...full.counts, nic: 0 });
      expect(header.counts.nic).toBe((await call<Obj[]>(a.napi, 'listNics', {})).length);
      expect(header.redacted).toBe(false);
    }
    const seen = new Map<string, Obj>();
    for await (const item of readCapture(file)) if (item.kind === 'vm') seen.set(String(item.data.uuid), item.data);
    const va = await vms(a);
    expect([...seen.keys()].sort()).toEqual([...va.keys()].sort());
    for (const [uuid, vm] of va) expect(seen.get(uuid)).toMatchObject({ alias: vm.alias, owner_uuid: vm.owner_uuid, customer_metadata: vm.customer_metadata, tags: vm.tags });
  });

  it('a second load changes nothing', async () => {
    // What each record last became: a VM's and a NIC's modification time, a network's etag-free self.
    const snapshot = async (): Promise<string> => {
      const v = [...(await vms(b)).values()].map((x) => [x.uuid, x.state, x.last_modified]).sort();
      const n = (await call<Obj[]>(b.napi, 'listNics', {})).map((x) => [x.mac, x.ip, x.state, x.modified_timestamp]).sort();
      const nets = [...(await networks(b)).values()].map((x) => JSON.stringify(x)).sort();
      return JSON.stringify([v, n, nets]);
    };
    const before = await snapshot();
    const fleetBefore = (await ok('GET', `${b.control}/servers`)) as Obj[];
    const again = await runCli(['mirror', 'load', capture, '--data-dir', b.daemon.dataDir, '--json']);
    expect(again.code, again.stderr).toBe(0);
    const r = JSON.parse(again.stdout);
    for (const [kind, c] of Object.entries(r.counts as Record<string, Obj>)) expect(c.created, kind).toBe(0);
    expect(r.counts.server.existing).toBe(4);
    expect(r.counts.vm.existing).toBe(5);
    expect(await snapshot()).toBe(before);
    const fleetAfter = (await ok('GET', `${b.control}/servers`)) as Obj[];
    expect(fleetAfter.map((s) => [s.uuid, s.vms]).sort()).toEqual(fleetBefore.map((s) => [s.uuid, s.vms]).sort());
  });

  it("the control API's one-CN form refuses what it cannot make, and changes nothing", async () => {
    const before = ((await ok('GET', `${b.control}/servers`)) as Obj[]).length;
    const taken = [...(await servers(b)).keys()][0]!;
    const cases: [Obj, number, RegExp][] = [
      [{ count: 2, uuid: newUuid() }, 409, /"count" must be 1/],
      [{ count: 1, uuid: 'nope' }, 409, /"uuid" must be a UUID/],
      [{ count: 1, hostname: '-bad-' }, 409, /"hostname" must be/],
      [{ count: 1, hardware: { name: 'x', cpuPhysicalCores: 2, cpuCoreCount: 3 } }, 409, /not a multiple of cpuPhysicalCores/],
      [{ count: 1, hardware: { name: 'x', gpus: 4 } }, 409, /unknown key "gpus"/],
      [{ count: 1, profile: 'small', hardware: { name: 'x' } }, 409, /not two of them/],
      [{ count: 1, uuid: taken }, 409, /already exists/],
    ];
    for (const [body, status, message] of cases) {
      const res = await json('POST', `${b.control}/servers`, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.message).toMatch(message);
    }
    expect(((await ok('GET', `${b.control}/servers`)) as Obj[]).length).toBe(before);
  });

  it('a load killed (-9) while its VMs are being made, run again, finishes the job (--remap-uuids: a second copy)', async () => {
    // Every machine_create on B takes 1.5 s: the kill lands while VMs are being made.
    const fault = await ok('POST', `${b.control}/faults`, { task: 'machine_create', delayMs: 1500 });
    const child = spawn(process.execPath, [MAIN, 'mirror', 'load', capture, '--data-dir', b.daemon.dataDir, '--remap-uuids'], { env: CLI_ENV, stdio: 'ignore' });
    const fleetSize = async (): Promise<number> => ((await ok('GET', `${b.control}/servers`)) as Obj[]).length;
    await until(async () => (await fleetSize()) === 9, 20_000, 'the remapped CNs');
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGKILL');
    await ok('DELETE', `${b.control}/faults/${fault.id}`);
    const rerun = await runCli(['mirror', 'load', capture, '--data-dir', b.daemon.dataDir, '--remap-uuids', '--json']);
    expect(rerun.code, rerun.stderr).toBe(0);
    const r = JSON.parse(rerun.stdout);
    expect(r.counts.server).toMatchObject({ existing: 4, failed: 0 });
    expect(r.counts.vm.created + r.counts.vm.existing).toBe(5);
    expect(r.counts.vm.failed).toBe(0);
    // The copy: 4 more CNs with 5 more VMs.
    const fleet = (await ok('GET', `${b.control}/servers`)) as Obj[];
    expect(fleet).toHaveLength(9);
    expect(fleet.reduce((n, s) => n + s.vms, 0)).toBe(10);
    // The copies are on the copied CNs: none on a CN of the first load.
    const firstCns = new Set((await servers(a)).keys());
    const copiedCns = fleet.filter((s) => !firstCns.has(s.uuid) && !s.headnode);
    expect(copiedCns).toHaveLength(4);
    expect(copiedCns.reduce((n, s) => n + s.vms, 0)).toBe(5);
    // Every VM NIC twice in NAPI (A's MACs and their remapped copies), none left over by the kill.
    const vmNics = [...(await vms(a)).values()].reduce((n, v) => n + v.nics.length, 0);
    expect(await call<Obj[]>(b.napi, 'listNics', { belongs_to_type: 'zone' })).toHaveLength(2 * vmNics);
  });
});
