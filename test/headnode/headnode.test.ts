/**
 * The dev headnode as one piece: all four services start, `headnode.json` names addresses
 * that answer (checked with sdc-clients' CNAPI, VMAPI, NAPI and IMGAPI classes), CNAPI's
 * sysinfo registration creates NIC tags in this NAPI, configured ports are used, state
 * survives a stop and start on the same data dir, and a clean stop removes headnode.json.
 */
import { randomUUID } from 'node:crypto';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { Headnode } from '../../src/headnode/index.js';
import { DEFAULT_HEADNODE_ADMIN_UUID } from '../../src/headnode/napi/service.js';
import { call, closeClient, cnapiClient, napiClient, vmapiClient, type Client } from './helpers/sdc-clients.js';
import { pinnablePorts } from '../common/helpers/ports.js';
import { http } from './helpers/napi-env.js';

const require = createRequire(import.meta.url);
const { IMGAPI } = require('sdc-clients') as { IMGAPI: new (o: object) => Client };

describe('dev headnode', () => {
  const cleanup: (() => Promise<void>)[] = [];

  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(opts: { ports?: Record<string, number> } = {}) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-headnode-'));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const make = () => new Headnode({ dataDir, log: createQuietLogger(), ...(opts.ports ? { ports: opts.ports } : {}) });
    const hn = make();
    cleanup.push(() => hn.stop());
    return { dataDir, hn, make };
  }

  it("writes headnode.json with the seven addresses, FWAPI's update stream and booter's, and each one answers", async () => {
    const { dataDir, hn } = await setup();
    const urls = await hn.start();
    const { booter, ...file } = JSON.parse(await readFile(path.join(dataDir, 'headnode.json'), 'utf8'));
    expect(file).toEqual(urls);
    expect(Object.keys(file).sort()).toEqual(['cnapi', 'fwapi', 'fwapiFast', 'imgapi', 'napi', 'papi', 'sapi', 'vmapi']);
    for (const [k, u] of Object.entries(file)) expect(u).toMatch(k === 'fwapiFast' ? /^tcp:\/\/127\.0\.0\.1:\d+$/ : /^http:\/\/127\.0\.0\.1:\d+$/);
    // Booter: DHCP on a loopback UDP port, its boot files over HTTP (none for an unknown MAC).
    expect(booter).toEqual({ dhcp: { ip: '127.0.0.1', port: expect.any(Number) }, http: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    expect((await fetch(`${booter.http}/boot.ipxe.01001122334455`)).status).toBe(404);

    const cnapi = cnapiClient(file.cnapi);
    const vmapi = vmapiClient(file.vmapi);
    const napi = napiClient(file.napi);
    const imgapi = new IMGAPI({ url: file.imgapi, agent: false, log: createQuietLogger() });
    try {
      expect(await call(cnapi, 'listServers')).toEqual([]);
      expect(await call(vmapi, 'listVms', {})).toEqual([]);
      expect((await call(napi, 'listNetworks', {})).map((n: { name: string }) => n.name).sort()).toEqual(['admin', 'external']);
      const images = await call(imgapi, 'listImages', {});
      expect(images.some((i: { type: string }) => i.type === 'zone-dataset')).toBe(true);
      // SAPI's ping (sdc-sapi lib/server/endpoints/ping.js).
      const ping = await fetch(`${file.sapi}/ping`);
      expect(ping.status).toBe(200);
      expect(await ping.json()).toMatchObject({ mode: 'full', storAvailable: true });
      // PAPI's ping (sdc-papi lib/papi.js) and a fresh DC's packages.
      expect(await (await fetch(`${file.papi}/ping`)).json()).toMatchObject({ backend: 'up' });
      const sdc128 = await (await fetch(`${file.papi}/packages?name=sdc_128`)).json();
      expect(sdc128).toMatchObject([{ uuid: '73a1ca34-1e30-48c7-8681-70314a9c67d3', owner_uuids: ['930896af-bf8c-48d4-885c-6573a94b1853'] }]);
    } finally {
      for (const c of [cnapi, vmapi, napi, imgapi]) closeClient(c);
    }
  });

  it('lets CNAPI register NIC tags in its NAPI when a server posts its sysinfo', async () => {
    const { hn } = await setup();
    const urls = await hn.start();
    const uuid = randomUUID();
    const sysinfo = {
      UUID: uuid,
      Hostname: 'VC00000001',
      'System Type': 'Virtual',
      'MiB of Memory': '4096',
      Setup: 'true',
      'Network Interfaces': {
        dnet0: { 'MAC Address': '00:10:fe:00:00:01', ip4addr: '10.99.99.40', 'Link Status': 'up', 'NIC Names': ['admin', 'hn_test_tag'] },
      },
    };
    const r = await http(`${urls.cnapi}/servers/${uuid}/sysinfo`, { method: 'POST', body: { sysinfo } });
    expect(r.status).toBeLessThan(300);
    const napi = napiClient(urls.napi);
    try {
      expect(await call(napi, 'getNicTag', 'hn_test_tag')).toMatchObject({ name: 'hn_test_tag', mtu: 1500 });
    } finally {
      closeClient(napi);
    }
  });

  it('listens on configured ports', async () => {
    const [napi, imgapi] = await pinnablePorts(2);
    const ports = { napi: napi!, imgapi: imgapi! };
    const { hn } = await setup({ ports });
    const urls = await hn.start();
    expect(urls.napi).toBe(`http://127.0.0.1:${ports.napi}`);
    expect(urls.imgapi).toBe(`http://127.0.0.1:${ports.imgapi}`);
    expect((await http(`${urls.napi}/ping`)).body.status).toBe('OK');
  });

  it('keeps its state across a stop and start on the same data dir; a clean stop removes headnode.json', async () => {
    const { dataDir, hn, make } = await setup();
    const first = await hn.start();
    let napi = napiClient(first.napi);
    const nic = await call(napi, 'provisionNic', 'admin', { belongs_to_type: 'zone', belongs_to_uuid: randomUUID(), owner_uuid: DEFAULT_HEADNODE_ADMIN_UUID });
    closeClient(napi);
    await hn.stop();
    await expect(access(path.join(dataDir, 'headnode.json'))).rejects.toThrow();

    const again = make();
    cleanup.push(() => again.stop());
    const second = await again.start();
    expect(JSON.parse(await readFile(path.join(dataDir, 'headnode.json'), 'utf8'))).toEqual({ ...second, booter: again.booterAddresses });
    napi = napiClient(second.napi);
    try {
      expect(await call(napi, 'getNic', nic.mac)).toEqual(nic);
      expect(await call(napi, 'listNetworks', { name: 'admin' })).toHaveLength(1);
    } finally {
      closeClient(napi);
    }
  });

  it('fails to start cleanly when a port is taken, releasing what it had started', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const napiPort = (await pinnablePorts(1))[0]!;
    // NAPI starts first and gets its port; IMGAPI's is taken.
    const ports = { napi: napiPort, imgapi: (blocker.address() as net.AddressInfo).port };
    const { dataDir, hn } = await setup({ ports });
    await expect(hn.start()).rejects.toThrow(/EADDRINUSE/);
    await expect(access(path.join(dataDir, 'headnode.json'))).rejects.toThrow();

    // NAPI's port was released again: a headnode using it (IMGAPI elsewhere) starts.
    const retry = new Headnode({ dataDir, log: createQuietLogger(), ports: { napi: napiPort } });
    cleanup.push(() => retry.stop());
    expect((await retry.start()).napi).toBe(`http://127.0.0.1:${napiPort}`);
  });
});
