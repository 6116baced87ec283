/**
 * What a booting mock CN sends, and what it does with what comes back, seen from a booter the
 * test plays on a loopback UDP socket (black box over UDP and the control API):
 *
 * - every packet is a relayed DHCP request sent by unicast to the configured booter address
 *   only (option 82, giaddr the relay's, PXE class and iPXE user class, the CN's MAC);
 * - a booter that is silent gets PXE's retransmissions on the (scaled) schedule, then a new
 *   transaction after a backoff; the CN stays booting, and the status says so;
 * - answers the CN cannot use (not DHCP, another transaction, another MAC, a NAK, from another
 *   address) are dropped and counted;
 * - an OFFER and an ACK then boot it: the boot file from booter's HTTP names its platform.
 *
 * The DHCP packets the test builds and reads are the `dhcp` package's, not the daemon's code.
 */
import dgram from 'node:dgram';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { waitFor } from '../headnode/helpers/sdc-clients.js';

const require = createRequire(import.meta.url);
const protocol = require('dhcp/lib/protocol.js') as { parse(b: Buffer): any; format(p: any): { _data: Buffer; _w: number } };

type Obj = Record<string, any>;

/** Scaled PXE: 3 sends 150, 300 and 600 ms apart, then 200 ms before a new transaction. */
const BOOT_TIMINGS = { dhcpTimeoutsMs: [150, 300, 600], retryMinMs: 200, retryMaxMs: 200, fetchTimeoutMs: 1000 };
const PLATFORM = '20300101T000000Z';

interface Received {
  at: number;
  from: dgram.RemoteInfo;
  packet: Obj;
}

describe('a booting CN against a booter the test plays', () => {
  let dataDir: string;
  let daemon: Daemon;
  let booter: dgram.Socket;
  let stranger: dgram.Socket;
  let files: http.Server;
  const received: Received[] = [];
  let uuid: string;
  let mac: string;

  const control = async (p: string): Promise<Obj> => (await fetch(`${daemon.controlAddress.url}${p}`)).json() as Promise<Obj>;
  const bind = async (s: dgram.Socket): Promise<number> => {
    await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
    return s.address().port;
  };
  /** A DHCP answer as booter builds one, sent from `via` to where the request came from. */
  const answer = (via: dgram.Socket, to: Received, type: number, over: Obj = {}): Promise<void> => {
    const req = to.packet;
    const sb = protocol.format({
      op: 2, htype: 1, hlen: 6, hops: 0, xid: req.xid, secs: 0, flags: 0,
      ciaddr: '0.0.0.0', yiaddr: '10.99.99.77', siaddr: '127.0.0.1', giaddr: req.giaddr,
      chaddr: req.chaddr, sname: '', file: `boot.ipxe.01${req.chaddr.replace(/-/g, '')}`,
      options: { 1: '255.255.0.0', 3: ['10.99.99.7'], 51: 3600, 53: type, 54: '127.0.0.1', 82: req.options[82] },
      ...over,
    });
    return new Promise((resolve) => via.send(sb._data.subarray(0, sb._w), to.from.port, to.from.address, () => resolve()));
  };
  const unused = async (): Promise<Obj> => (await control('/status')).boot.dhcp.unused;

  beforeAll(async () => {
    booter = dgram.createSocket('udp4');
    booter.on('message', (msg, from) => received.push({ at: Date.now(), from, packet: protocol.parse(msg) }));
    const port = await bind(booter);
    stranger = dgram.createSocket('udp4');
    await bind(stranger);
    // Booter's HTTP root: the iPXE script for the one MAC it will have leased.
    files = http.createServer((req, res) => {
      const wanted = mac ? `/boot.ipxe.01${mac.replace(/:/g, '').toUpperCase()}` : '';
      if (req.url !== wanted) return void res.writeHead(404).end();
      res.end(`#!ipxe\nkernel http://\${next-server}/os/${PLATFORM}/platform/i86pc/kernel/amd64/unix -B rabbitmq=guest:guest:127.0.0.1:5672,admin_nic=${mac},console=text,text-mode="115200,8,n,1,-"\nboot\n`);
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-relay-'));
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ bootTimings: BOOT_TIMINGS }));
    const config = await resolveConfig({
      flags: {
        dataDir,
        bindIp: '127.0.0.1',
        cmonPort: 0,
        uiAddress: '127.0.0.1:0',
        booter: `127.0.0.1:${port}`,
        booterHttpUrl: `http://127.0.0.1:${(files.address() as AddressInfo).port}`,
      },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: createQuietLogger(), plugins: [] });
    await daemon.start();
  });

  afterAll(async () => {
    await daemon?.stop();
    booter?.close();
    stranger?.close();
    files?.close();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('retransmits on the schedule to the booter alone while it is silent, and stays booting', async () => {
    const res = await fetch(`${daemon.controlAddress.url}/servers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"count":1}' });
    const created = ((await res.json()) as Obj).created[0];
    uuid = created.uuid;
    mac = String(daemon.fleet.get(uuid)!.sysinfo['Network Interfaces']!.dnet0!['MAC Address']);
    // Created, but not up: no lease yet.
    expect(created.adminIp).toBe('');
    expect(daemon.fleet.get(uuid)!.power).toBe('down');
    await waitFor(() => new Set(received.map((r) => r.packet.xid)).size >= 2, 10_000);

    const first = received.filter((r) => r.packet.xid === received[0]!.packet.xid);
    expect(first).toHaveLength(3);
    for (const r of received) {
      const p = r.packet;
      expect(r.from.address).toBe('127.0.0.1');
      expect(r.from.port).toBe(received[0]!.from.port); // one relay socket for the fleet
      expect(p.op).toBe(1);
      expect(p.options[53]).toBe(1); // DHCPDISCOVER
      expect(p.chaddr.toLowerCase().replace(/-/g, ':')).toBe(mac);
      expect(p.giaddr).toBe('127.0.0.1');
      expect(p.hops).toBe(1);
      expect(p.options[60]).toMatch(/^PXEClient/);
      // Option 82 (RFC 3046): sub-option 2, the relay's remote id (this daemon), no circuit id (no rack).
      const o82 = p.options[82] as number[];
      expect(o82[0]).toBe(2);
      expect(Buffer.from(o82.slice(2, 2 + o82[1]!)).toString()).toBe(daemon.hostedBy);
    }
    const gaps = first.slice(1).map((r, i) => r.at - first[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(140);
    expect(gaps[1]).toBeGreaterThanOrEqual(290);
    expect(gaps[1]!).toBeGreaterThan(gaps[0]!);

    const boot = (await control(`/boots?servers=${uuid}`)).servers[0];
    expect(boot).toMatchObject({ cause: 'create', path: 'booter', phase: 'dhcp', ip: null });
    expect(boot.dhcpFailedRounds).toBeGreaterThanOrEqual(1);
    expect(boot.dhcpRetransmits).toBeGreaterThanOrEqual(2);
    const status = await control('/status');
    expect(status.boot.booting).toBe(1);
    expect(daemon.fleet.get(uuid)!.registered).toBe(false);
    // The fleet page shows it booting, its DHCP so far, and the boots' summary.
    const page = daemon.uiAddress!.url.replace(/\/$/, '');
    const detail = (await (await fetch(`${page}/api/servers/${uuid}`)).json()) as Obj;
    expect(detail.state).toBe('booting');
    expect(detail.boot).toMatchObject({ phase: 'dhcp', path: 'booter' });
    expect(detail.boot.dhcpRetransmits).toBeGreaterThanOrEqual(2);
    const summary = ((await (await fetch(`${page}/api/boots`)).json()) as Obj).summary;
    expect(summary).toMatchObject({ boots: 1, running: 0, notBack: 1, notBackServers: [uuid] });
  });

  it('drops and counts the answers it cannot use: not DHCP, another xid or MAC, a NAK, another sender', async () => {
    const last = (): Received => received[received.length - 1]!;
    const sends: [string, () => Promise<void>][] = [
      ['unknownXid', () => answer(booter, last(), 2, { xid: (last().packet.xid + 1) >>> 0 })],
      ['wrongMac', () => answer(booter, last(), 2, { chaddr: '00-00-5e-00-53-01' })],
      ['nak', () => answer(booter, last(), 6)],
      ['foreign', () => answer(stranger, last(), 2)],
      ['malformed', () => new Promise<void>((resolve) => booter.send(Buffer.from('not a DHCP packet'), last().from.port, '127.0.0.1', () => resolve()))],
    ];
    // Each answer is for the transaction the CN was last seen in. On a loaded machine the CN may
    // have begun another (its scaled PXE timeouts are short) by the time one arrives, which then
    // counts as another xid: what is not counted yet is sent again, within a bound.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const u = await unused();
      const missing = sends.filter(([counter]) => !(u[counter] >= 1));
      if (missing.length === 0) break;
      if (Date.now() > deadline) throw new Error(`not counted: ${missing.map(([c]) => c).join(', ')}`);
      for (const [, send] of missing) await send();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(daemon.fleet.get(uuid)!.power).toBe('down');
    expect((await control(`/boots?servers=${uuid}`)).servers[0].phase).toBe('dhcp');
  });

  it('boots on an OFFER and an ACK: the lease, then the platform its boot file names', async () => {
    // Offer the latest DISCOVER; then ACK the REQUEST it brings.
    const discover = await waitFor(() => {
      const r = received[received.length - 1];
      return r && r.packet.options[53] === 1 && Date.now() - r.at < 100 ? r : undefined;
    }, 5000, 5);
    await answer(booter, discover, 2);
    const request = await waitFor(() => received.find((r) => r.packet.xid === discover.packet.xid && r.packet.options[53] === 3), 3000, 5);
    expect(request.packet.options[50]).toBe('10.99.99.77');
    expect(request.packet.options[54]).toBe('127.0.0.1');
    await answer(booter, request, 5);

    const cn = daemon.fleet.get(uuid)!;
    await waitFor(() => cn.registered, 5000);
    expect(cn.sysinfo['Admin IP']).toBe('10.99.99.77');
    expect(cn.sysinfo['Live Image']).toBe(PLATFORM);
    expect(cn.sysinfo['Boot Parameters']).toMatchObject({ admin_nic: mac, console: 'text' });
    const boot = await waitFor(async () => {
      const b = (await control(`/boots?servers=${uuid}`)).servers[0];
      return b.phase === 'running' ? b : undefined;
    }, 5000);
    expect(boot).toMatchObject({ ip: '10.99.99.77', platform: PLATFORM, bootFileFrom: 'booter-http' });
    expect((await control('/status')).boot.booting).toBe(0);
  });
});
