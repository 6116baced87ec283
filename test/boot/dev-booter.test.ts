/**
 * Booting like a real CN against the dev DC's booter (issue 30), black box: the daemon with its
 * embedded dev headnode, driven over its control API and through sdc-clients' CNAPI and NAPI
 * clients; booter's side seen over UDP (its counts and leases) and HTTP (its boot files).
 *
 * - a new CN's first boot: booter makes its admin NIC in NAPI, CNAPI's default boot params;
 * - a reboot onto the platform newly assigned in CNAPI (`sdcadm platform assign`: POST /boot/:uuid);
 * - a storm: 200 CNs lose power at once and every one boots by booter and runs again;
 * - a rack: the relay's circuit id makes booter provision from the admin pool's rack network;
 * - bounded input: a DHCP packet over 1,500 bytes is not read, and booter's HTTP side closes
 *   the oldest idle connections at its cap of 1024 while it serves boot files.
 *
 * The DHCP schedule is scaled down (config `bootTimings`) so a lost packet costs little time.
 */
import dgram from 'node:dgram';
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTREQUEST, decodeDhcp, DHCPDISCOVER, DHCPOFFER, encodeDhcp, messageType, OPT, relayAgentInfo } from '../../src/common/dhcp/wire.js';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { call, closeClient, cnapiClient, napiClient, waitFor, type Client } from '../headnode/helpers/sdc-clients.js';

type Obj = Record<string, any>;

const TIMINGS = { heartbeatIntervalMs: 500, statusThrottleMs: 200, startSpreadMs: 200, sysinfoBackoff: { minMs: 50, maxMs: 500 } };
const BOOT_TIMINGS = { dhcpTimeoutsMs: [500, 1000, 2000], retryMinMs: 200, retryMaxMs: 1000, fetchTimeoutMs: 5000 };
const NEW_PLATFORM = '20991231T235959Z';

describe('booting from the dev booter', () => {
  let dataDir: string;
  let daemon: Daemon;
  let cnapi: Client;
  let napi: Client;
  let rackNetwork: string;

  const control = async <T = Obj>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${daemon.controlAddress.url}${p}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  const bootOf = async (uuid: string): Promise<Obj> => (await control<Obj>('GET', `/boots?servers=${uuid}`)).body.servers[0];

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-boot-'));
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS, bootTimings: BOOT_TIMINGS }));
    const config = await resolveConfig({
      flags: { dataDir, bindIp: '127.0.0.1', cmonPort: 0, bootSeconds: 0.2, uiAddress: 'none' },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: createQuietLogger(), embeddedHeadnode: {} });
    await daemon.start();
    cnapi = cnapiClient(daemon.config.urls.cnapi!);
    napi = napiClient(daemon.config.urls.napi!);
    // Rack-aware networking in the dev NAPI, as an operator sets it up (before any boot: booter
    // reads the admin pool once a minute): the rack's NIC tag and admin network, and the `admin`
    // pool holding it beside the admin network. CNs whose relay names no rack are not touched.
    const napiUrl = daemon.config.urls.napi!;
    const post = async (p: string, body: unknown): Promise<Obj> => {
      const res = await fetch(`${napiUrl}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const out = (await res.json()) as Obj;
      if (res.status >= 300) throw new Error(`NAPI POST ${p}: ${res.status} ${JSON.stringify(out)}`);
      return out;
    };
    await post('/nic_tags', { name: 'admin_rack_r1', mtu: 1500 });
    const rack = await post('/networks', {
      name: 'admin-r1', nic_tag: 'admin_rack_r1', vlan_id: 0, subnet: '10.98.0.0/16', provision_start_ip: '10.98.0.10',
      provision_end_ip: '10.98.255.250', gateway: '10.98.0.1', resolvers: [], mtu: 1500, owner_uuids: [daemon.config.adminUuid],
    });
    const admin = (await (await fetch(`${napiUrl}/networks/admin`)).json()) as Obj;
    await post('/network_pools', { name: 'admin', networks: [admin.uuid, rack.uuid] });
    rackNetwork = rack.uuid;

  });

  afterAll(async () => {
    closeClient(cnapi);
    closeClient(napi);
    await daemon?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it("a new CN's first boot: booter provisions its admin NIC in NAPI, it boots CNAPI's default params and registers", async () => {
    const booter = daemon.headnode!.booter!;
    const before = { ...booter.counts };
    const created = await control<Obj>('POST', '/servers', { count: 1 });
    expect(created.status).toBe(200);
    const { uuid, adminIp } = created.body.created[0];
    const cn = daemon.fleet.get(uuid)!;
    const mac = String(cn.sysinfo['Network Interfaces']!.dnet0!['MAC Address']);

    // Booter answered its DISCOVER and REQUEST and keeps its lease; the lease is NAPI's NIC.
    expect(booter.counts.discovers).toBeGreaterThan(before.discovers);
    expect(booter.counts.acks).toBeGreaterThan(before.acks);
    expect(booter.lease(mac)).toMatchObject({ ip: adminIp, netmask: '255.255.0.0', kernel_args: { admin_nic: mac } });
    const nic = await call<Obj>(napi, 'getNic', mac);
    expect(nic).toMatchObject({ mac, ip: adminIp, nic_tag: 'admin', nic_tags_provided: ['admin'] });
    expect(adminIp).toMatch(/^10\.99\./);

    // It came up on the default boot params: CNAPI's record and the CN's sysinfo say so.
    const defaults = (await fetch(`${daemon.config.urls.cnapi}/boot/default`).then((r) => r.json())) as Obj;
    const server = await waitFor(async () => {
      const s = await call<Obj>(cnapi, 'getServer', uuid);
      return s.status === 'running' ? s : undefined;
    }, 15_000);
    expect(server.current_platform).toBe(defaults.platform);
    expect(server.sysinfo['Admin IP']).toBe(adminIp);
    expect(server.sysinfo['Boot Parameters']).toMatchObject({ admin_nic: mac, rabbitmq: defaults.kernel_args.rabbitmq });
    expect(server.setup).toBe(true);

    const boot = await waitFor(async () => {
      const b = await bootOf(uuid);
      return b?.phase === 'running' ? b : undefined;
    }, 15_000);
    expect(boot).toMatchObject({ cause: 'create', path: 'booter', ip: adminIp, platform: defaults.platform, bootFileFrom: 'booter-http' });
    expect(boot.dhcpPackets).toBeGreaterThanOrEqual(2);
    expect(boot.leaseMs).toBeGreaterThanOrEqual(0);
    expect(boot.runningMs).toBeGreaterThanOrEqual(boot.leaseMs);
    const status = (await control<Obj>('GET', '/status')).body;
    expect(status.boot.booter.dhcp).toEqual(daemon.headnode!.booterAddresses!.dhcp);
    expect(status.boot.paths.booter).toBeGreaterThanOrEqual(1);
  });

  it('a reboot boots the platform newly assigned through CNAPI (POST /boot/:uuid), and CNAPI sees it', async () => {
    const created = await control<Obj>('POST', '/servers', { count: 1 });
    const { uuid } = created.body.created[0];
    await waitFor(async () => (await call<Obj>(cnapi, 'getServer', uuid)).status === 'running', 15_000);
    // Booter finds a server's boot params by its admin NIC's owner: the NIC net-agent claimed
    // for the server (before that, booter gives the CN the default params, as a real one).
    const mac = String(daemon.fleet.get(uuid)!.sysinfo['Network Interfaces']!.dnet0!['MAC Address']);
    await waitFor(async () => (await call<Obj>(napi, 'getNic', mac)).belongs_to_uuid === uuid, 15_000);
    const bootTime = (await call<Obj>(cnapi, 'getServer', uuid)).sysinfo['Boot Time'];

    // Not installed on the headnode yet: CNAPI refuses it, as it refuses any platform it does not have.
    await expect(call(cnapi, 'setBootParams', uuid, { platform: NEW_PLATFORM })).rejects.toMatchObject({ statusCode: 500 });
    await fsp.mkdir(path.join(dataDir, 'headnode', 'usbkey', 'os', NEW_PLATFORM), { recursive: true });
    expect(Object.keys(await call<Obj>(cnapi, 'listPlatforms'))).toContain(NEW_PLATFORM);
    await call(cnapi, 'setBootParams', uuid, { platform: NEW_PLATFORM });
    expect((await call<Obj>(cnapi, 'getBootParams', uuid)).platform).toBe(NEW_PLATFORM);

    await call(cnapi, 'rebootServer', uuid);
    const server = await waitFor(async () => {
      const s = await call<Obj>(cnapi, 'getServer', uuid);
      return s.current_platform === NEW_PLATFORM && s.status === 'running' ? s : undefined;
    }, 20_000);
    expect(server.sysinfo['Live Image']).toBe(NEW_PLATFORM);
    expect(Number(server.sysinfo['Boot Time'])).toBeGreaterThan(Number(bootTime));
    // Booter's boot file for it names the new platform's kernel.
    const script = await fetch(`${daemon.headnode!.booterAddresses!.http}/boot.ipxe.01${mac.replace(/:/g, '').toUpperCase()}`).then((r) => r.text());
    expect(script).toContain(`/os/${NEW_PLATFORM}/platform/i86pc/kernel/amd64/unix`);
    expect(await bootOf(uuid)).toMatchObject({ cause: 'reboot', path: 'booter', platform: NEW_PLATFORM });
  });

  it('a boot storm: 200 CNs lose power at once; each boots by booter and runs again', async () => {
    const grown = await daemon.growTo(200);
    expect(grown.errors).toEqual([]);
    const headnode = daemon.fleet.headnode();
    const cns = daemon.fleet.list().filter((cn) => cn !== headnode);
    expect(cns.length).toBeGreaterThanOrEqual(200);
    await waitFor(() => cns.every((cn) => cn.registered), 60_000);

    const ev = await control<Obj>('POST', '/events', { type: 'power-loss', target: { all: true }, params: { bootMs: 100 } });
    expect(ev.status, JSON.stringify(ev.body)).toBe(201);
    expect(ev.body.servers).toHaveLength(cns.length);
    const report = await waitFor(async () => {
      const r = (await control<Obj>('GET', `/boots?event=${ev.body.id}`)).body;
      return r.summary.boots === cns.length && r.summary.notBack === 0 ? r : undefined;
    }, 120_000, 250);
    expect(report.summary.byPath).toEqual({ booter: cns.length, direct: 0 });
    expect(report.summary.dhcpPackets).toBeGreaterThanOrEqual(2 * cns.length);
    expect(report.summary.runningMs.p99).toBeGreaterThanOrEqual(report.summary.leaseMs.p99);
    expect(report.servers.every((s: Obj) => s.cause === 'power-loss' && s.phase === 'running' && s.ip)).toBe(true);
    // CNAPI has every one running again.
    const listed = await call<Obj[]>(cnapi, 'listServers', { extras: 'status' });
    const running = new Set(listed.filter((s) => s.status === 'running').map((s) => s.uuid));
    expect(cns.filter((cn) => !running.has(cn.uuid))).toEqual([]);
  }, 180_000);

  it("a rack (--boot-rack): booter takes the circuit id as NIC tag admin_rack_<rack> and provisions the new CN from the admin pool's rack network", async () => {
    // A second daemon of the DC, its CNs behind the rack's relay (circuit id r1).
    const rackDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-boot-rack-'));
    await fsp.writeFile(path.join(rackDir, 'config.json'), JSON.stringify({ timings: TIMINGS, bootTimings: BOOT_TIMINGS }));
    const booter = daemon.headnode!.booterAddresses!;
    const u = daemon.config.urls;
    const config = await resolveConfig({
      flags: {
        dataDir: rackDir, bindIp: '127.0.0.1', cmonPort: 0, uiAddress: 'none', cnapiUrl: u.cnapi!, vmapiUrl: u.vmapi!, napiUrl: u.napi!,
        imgapiUrl: u.imgapi!, booter: `${booter.dhcp.ip}:${booter.dhcp.port}`, booterHttpUrl: booter.http, bootRack: 'r1',
      },
      env: {},
      mdata: noMdata,
    });
    const rackDaemon = new Daemon({ config, log: createQuietLogger() });
    try {
      await rackDaemon.start();
      const res = await fetch(`${rackDaemon.controlAddress.url}/servers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"count":1}' });
      const created = ((await res.json()) as Obj).created[0];
      expect(created.adminIp).toMatch(/^10\.98\./);
      const cn = rackDaemon.fleet.get(created.uuid)!;
      const mac = String(cn.sysinfo['Network Interfaces']!.dnet0!['MAC Address']);
      expect(await call<Obj>(napi, 'getNic', mac)).toMatchObject({ network_uuid: rackNetwork, nic_tag: 'admin_rack_r1', nic_tags_provided: ['admin_rack_r1'], ip: created.adminIp });
      // The kernel args name the rack tag's NIC; the admin NIC's tag follows in sysinfo.
      expect(cn.sysinfo['Boot Parameters']).toMatchObject({ admin_rack_r1_nic: mac });
      expect(cn.sysinfo['Boot Parameters']).not.toHaveProperty('admin_nic');
      expect(cn.sysinfo['Admin NIC Tag']).toBe('admin_rack_r1');
      expect(cn.sysinfo['Network Interfaces']!.dnet0!['NIC Names']).toEqual(['admin_rack_r1']);
      await waitFor(async () => (await call<Obj>(cnapi, 'getServer', created.uuid)).status === 'running', 15_000);
    } finally {
      await rackDaemon.stop();
      await fsp.rm(rackDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('does not read a DHCP packet over 1,500 bytes; its HTTP side sheds the oldest idle connections at its cap and still serves', async () => {
    const booter = daemon.headnode!.booter!;
    const where = daemon.headnode!.booterAddresses!;
    const relay = dgram.createSocket('udp4');
    const offers: number[] = [];
    relay.on('message', (msg) => {
      const p = decodeDhcp(msg);
      if (messageType(p) === DHCPOFFER) offers.push(p.xid);
    });
    await new Promise<void>((r) => relay.bind(0, '127.0.0.1', r));
    const sockets: net.Socket[] = [];
    try {
      // A PXE ROM's DISCOVER, relayed (giaddr and option 82), as booter answers them.
      const discover = (xid: number, mac: string): Buffer =>
        encodeDhcp({
          op: BOOTREQUEST, xid, chaddr: mac, giaddr: '127.0.0.1', hops: 1,
          options: { [OPT.messageType]: DHCPDISCOVER, [OPT.classId]: 'PXEClient:Arch:00000:UNDI:002001', [OPT.relayAgentInfo]: relayAgentInfo({ remoteId: 'test' }) },
        });
      const send = (b: Buffer): Promise<void> => new Promise((r) => relay.send(b, where.dhcp.port, where.dhcp.ip, () => r()));
      const before = { ...booter.counts };
      // The same DISCOVER padded past an Ethernet frame (pad bytes after the end option), then a plain one.
      await send(Buffer.concat([discover(0x5a5a0001, '02:00:5a:00:00:01'), Buffer.alloc(1300)]));
      await send(discover(0x5a5a0002, '02:00:5a:00:00:02'));
      await waitFor(() => offers.includes(0x5a5a0002), 15_000);
      expect(booter.counts.ignored - before.ignored).toBe(1);
      expect(booter.counts.discovers - before.discovers).toBe(1);
      expect(offers).not.toContain(0x5a5a0001);

      // 1,100 connections that send nothing to booter's HTTP (cap 1024, a sixteenth kept for
      // requests), in two waves: the first fits booter's accept queue (as deep as the cap) and
      // a request after it proves it accepted (the queue is first in, first out); only then the
      // rest. Connections past a full queue are connected for the client but, with the host's
      // SYN cookies, may never reach booter: the guard could not shed what it never got.
      const url = new URL(where.http);
      let closed = 0;
      const idle = (n: number): Promise<unknown> =>
        Promise.all(
          Array.from({ length: n }, () => new Promise<void>((resolve) => {
            const s = net.connect(Number(url.port), url.hostname, () => resolve());
            s.on('error', () => resolve());
            s.on('close', () => closed++);
            sockets.push(s);
          })),
        );
      const bootFile = (): Promise<Response> => fetch(`${where.http}/boot.ipxe.01${'02005a000002'.toUpperCase()}`, { signal: AbortSignal.timeout(10_000) });
      await idle(1000);
      expect((await bootFile()).status).toBe(200);
      await idle(100);
      await waitFor(() => closed >= 1100 - 1024, 30_000);
      const file = await bootFile();
      expect(file.status).toBe(200);
      expect(await file.text()).toMatch(/^#!ipxe/);
    } finally {
      for (const s of sockets) s.destroy();
      relay.close();
    }
  });
});
