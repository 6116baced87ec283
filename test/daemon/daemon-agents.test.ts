/**
 * The daemon with its default agent plug-ins (vm-agent, net-agent, cmon-agent) and the embedded
 * dev headnode, in-process, seen the way Triton sees it: sdc-clients CNAPI / VMAPI / NAPI, the
 * agent address from triton-netconfig's agentIpFromSysinfo, CMON-style scrapes.
 *
 *   shared mode    a VM created by a cn-agent task reaches VMAPI and its NIC NAPI; deleting
 *                  CNs leaves none of their NICs in NAPI; daemon.json says where cmon listens;
 *   loopback mode  each CN its own 127.x.y.z: the registered sysinfo leads to that CN's
 *                  cn-agent, `GET /v1/gz/metrics` on that address answers for that CN, and the
 *                  addresses stay the same across a restart.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { resolveConfig, type DaemonConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { readDaemonJson } from '../../src/daemon/daemon-json.js';
import { defaultPlugins } from '../../src/daemon/default-plugins.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { AGENT_IPS_FILE } from '../../src/daemon/agent-ips.js';
import { parsePrometheus, single } from '../agents/helpers/prometheus-parser.js';
import { waitFor } from './helpers/fakes.js';
import { createServers } from './helpers/control.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const sdc = require('sdc-clients') as { CNAPI: any; VMAPI: any; NAPI: any };
const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };
const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';
const log = createQuietLogger('daemon-agents-test');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;

/** A callback-style sdc-clients call; resolves undefined on 404. */
function call(client: Obj, method: string, ...args: unknown[]): Promise<any> {
  return new Promise((resolve, reject) => {
    client[method](...args, (err: { statusCode?: number } | null, result: unknown) => {
      if (err?.statusCode === 404) resolve(undefined);
      else if (err) reject(err);
      else resolve(result);
    });
  });
}

/** GET with an explicit Host header (fetch does not let a caller set one). */
function get(url: string, host?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, host ? { headers: { host } } : {}, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

/** Short agent intervals so the test sees the first syncs at once; the wiring is the real one. */
function plugins(config: DaemonConfig) {
  return defaultPlugins(config, {
    vmAgent: { startSpreadMs: 0, retryMinMs: 50, retryMaxMs: 500 },
    netAgent: { startSpreadMs: 0, retryMinMs: 50, retryMaxMs: 500, changefeedBackoffMinMs: 100, changefeedBackoffMaxMs: 500 },
  });
}

describe('daemon with vm-agent, net-agent and cmon-agent', () => {
  const dirs: string[] = [];
  const daemons: Daemon[] = [];

  afterEach(async () => {
    for (const d of daemons.splice(0)) await d.stop();
    for (const dir of dirs.splice(0)) await fsp.rm(dir, { recursive: true, force: true });
  });

  async function startDaemon(dataDir: string, flags: Record<string, string | number> = {}, ports?: Record<string, number>): Promise<Daemon> {
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: { startSpreadMs: 50 } }));
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0, ...flags }, env: {}, mdata: noMdata });
    const daemon = new Daemon({ config, log, plugins: plugins(config), embeddedHeadnode: ports ? { ports } : {} });
    daemons.push(daemon);
    await daemon.start();
    return daemon;
  }

  async function newDataDir(): Promise<string> {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-daemon-agents-'));
    dirs.push(dir);
    return dir;
  }

  function clients(daemon: Daemon): { cnapi: Obj; vmapi: Obj; napi: Obj } {
    const { urls } = daemon.config;
    return {
      cnapi: new sdc.CNAPI({ url: urls.cnapi, log, agent: false }),
      vmapi: new sdc.VMAPI({ url: urls.vmapi, log, agent: false }),
      napi: new sdc.NAPI({ url: urls.napi, log, agent: false }),
    };
  }

  /** As CNAPI does it: the registered sysinfo gives the agent address. */
  async function agentUrl(cnapi: Obj, uuid: string): Promise<string> {
    const server = await waitFor(async () => {
      const s = await call(cnapi, 'getServer', uuid);
      return s?.sysinfo?.['CN Agent Port'] ? s : undefined;
    }, 10_000, `server ${uuid} registered`);
    // cn-agent takes tasks once the CN has seen CNAPI accept its registration (404 before).
    await waitFor(() => daemons.some((d) => d.state === 'running' && d.fleet.get(uuid)?.registered), 10_000, `server ${uuid} knows it is registered`);
    return `http://${netconfig.agentIpFromSysinfo(server.sysinfo)}:${server.sysinfo['CN Agent Port']}`;
  }

  it('shared mode: a VM made by a cn-agent task reaches VMAPI and NAPI; removed CNs leave no NIC in NAPI', async () => {
    const daemon = await startDaemon(await newDataDir());
    const { cnapi, vmapi, napi } = clients(daemon);
    const [a, b] = (await createServers(daemon, { count: 2 })) as [string, string];

    // daemon.json says where cmon-agent listens (an ephemeral port here) and the mode.
    const json = await waitFor(async () => {
      const j = await readDaemonJson(daemon.config.dataDir);
      return j?.state === 'running' && j.cmonAgent ? j : undefined;
    }, 5000, 'daemon.json with cmonAgent');
    expect(json.agentIps).toBe('shared');
    expect(json.cmonAgent!.port).toBeGreaterThan(0);
    expect(json.cmonAgent!.port).not.toBe(9163);
    expect(json.cmonAgent!.addresses).toEqual([{ ip: '127.0.0.1', port: json.cmonAgent!.port }]);

    // net-agent claims each CN's admin NIC for the CN.
    for (const uuid of [a, b]) {
      const adminMac = daemon.fleet.get(uuid)!.sysinfo['Network Interfaces'] as Obj;
      const mac = Object.values(adminMac).find((n: Obj) => (n['NIC Names'] ?? []).includes('admin'))!['MAC Address'] as string;
      await waitFor(async () => (await call(napi, 'getNic', mac))?.belongs_to_uuid === uuid, 10_000, `admin NIC of ${uuid} claimed`);
    }

    // Provision as VMAPI's workflow does: a NIC from NAPI, then machine_create on the CN.
    const external = ((await call(napi, 'listNetworks', { name: 'external' })) as Obj[])[0]!;
    const vmUuid = newUuid();
    const nic = await call(napi, 'provisionNic', external.uuid, { belongs_to_type: 'zone', belongs_to_uuid: vmUuid, owner_uuid: OWNER, state: 'provisioning' });
    const url = await agentUrl(cnapi, a);
    const task = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        task: 'machine_create',
        params: {
          uuid: vmUuid,
          brand: 'joyent-minimal',
          owner_uuid: OWNER,
          alias: 'wired',
          ram: 512,
          max_physical_memory: 512,
          quota: 10,
          nics: [{ mac: nic.mac, ip: nic.ip, netmask: nic.netmask, gateway: nic.gateway, nic_tag: nic.nic_tag, vlan_id: nic.vlan_id, network_uuid: nic.network_uuid, primary: true, interface: 'net0' }],
        },
      }),
    });
    expect(task.status, await task.clone().text()).toBe(200);

    const vm = await waitFor(async () => {
      const v = await call(vmapi, 'getVm', { uuid: vmUuid });
      return v?.state === 'running' ? v : undefined;
    }, 10_000, 'the VM in VMAPI (vm-agent)');
    expect(vm).toMatchObject({ server_uuid: a, alias: 'wired', owner_uuid: OWNER });
    const napiNic = await waitFor(async () => {
      const n = await call(napi, 'getNic', nic.mac);
      return n?.state === 'running' ? n : undefined;
    }, 10_000, 'the VM NIC running in NAPI (net-agent)');
    expect(napiNic).toMatchObject({ belongs_to_type: 'zone', belongs_to_uuid: vmUuid, cn_uuid: a });

    // Removing the CNs takes every NIC of theirs with it, even with net-agent at work on them.
    for (const uuid of [a, b]) {
      const res = await fetch(`${daemon.controlAddress.url}/servers/${uuid}`, { method: 'DELETE' });
      expect(res.status, await res.clone().text()).toBe(200);
    }
    await new Promise((r) => setTimeout(r, 500));
    const left = ((await call(napi, 'listNics', { limit: 1000 })) as Obj[]).filter(
      (n) => n.belongs_to_uuid === a || n.belongs_to_uuid === b || n.belongs_to_uuid === vmUuid || n.cn_uuid === a || n.cn_uuid === b,
    );
    expect(left).toEqual([]);
    expect((await call(vmapi, 'getVm', { uuid: vmUuid }))?.state).toBe('destroyed');
  }, 60_000);

  it.runIf(process.platform === 'linux')('loopback mode: each CN its own 127.x agent IP, reached through its registered sysinfo, scraped by CMON there, kept across restarts', async () => {
    const dataDir = await newDataDir();
    let daemon = await startDaemon(dataDir, { agentIps: 'loopback' });
    let { cnapi } = clients(daemon);
    const [a, b] = (await createServers(daemon, { count: 2 })) as [string, string];

    const ipOf = (d: Daemon, uuid: string): string => d.fleet.get(uuid)!.agentAddress!.ip;
    const [ipA, ipB] = [ipOf(daemon, a), ipOf(daemon, b)];
    expect(ipA).not.toBe(ipB);
    for (const ip of [ipA, ipB]) {
      expect(ip).toMatch(/^127\.\d+\.\d+\.\d+$/);
      expect(ip).not.toBe('127.0.0.1');
    }

    // CNAPI's way to a CN's cn-agent leads to that CN: a VM created there lands on it alone.
    const urlA = await agentUrl(cnapi, a);
    const urlB = await agentUrl(cnapi, b);
    expect(new URL(urlA).hostname).toBe(ipA);
    expect(new URL(urlB).hostname).toBe(ipB);
    const made: Record<string, string> = {};
    for (const [uuid, url] of [[a, urlA], [b, urlB]] as const) {
      const vmUuid = newUuid();
      made[uuid] = vmUuid;
      const task = await fetch(`${url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          task: 'machine_create',
          params: { uuid: vmUuid, brand: 'joyent-minimal', owner_uuid: OWNER, ram: 256, max_physical_memory: 256, quota: 5, nics: [] },
        }),
      });
      expect(task.status, await task.clone().text()).toBe(200);
    }
    expect(daemon.fleet.get(a)!.vms.get(made[a]!)).toBeDefined();
    expect(daemon.fleet.get(a)!.vms.get(made[b]!)).toBeUndefined();
    expect(daemon.fleet.get(b)!.vms.get(made[b]!)).toBeDefined();
    expect(daemon.fleet.get(b)!.vms.get(made[a]!)).toBeUndefined();

    // CMON: http://<CN Agent IP>:<cmon port>/v1/gz/metrics answers for that CN. The pool figures
    // depend only on the CN (its uuid, its VMs), so the same CN named by Host elsewhere agrees.
    const json = await waitFor(async () => {
      const j = await readDaemonJson(dataDir);
      return j?.state === 'running' && (j.cmonAgent?.addresses.length ?? 0) >= 3 ? j : undefined;
    }, 5000, 'daemon.json with the cmon addresses of both CNs and the headnode server');
    expect(json.agentIps).toBe('loopback');
    const port = json.cmonAgent!.port;
    // The dev DC's headnode server has its own address too.
    const hn = daemon.fleet.headnode()!;
    const ipHn = ipOf(daemon, hn.uuid);
    expect([ipA, ipB]).not.toContain(ipHn);
    expect(json.cmonAgent!.addresses.map((x) => x.ip).sort()).toEqual([ipA, ipB, ipHn].sort());
    const scrape = async (ip: string, host?: string): Promise<{ allocated: number; frag: number }> => {
      const res = await get(`http://${ip}:${port}/v1/gz/metrics`, host);
      expect(res.status, res.body).toBe(200);
      const fams = parsePrometheus(res.body);
      return { allocated: single(fams, 'zpool_allocated_bytes'), frag: single(fams, 'zpool_fragmentation_percent') };
    };
    const gzA = await scrape(ipA);
    const gzB = await scrape(ipB);
    expect(gzA).not.toEqual(gzB);
    expect(await scrape(ipB, a)).toEqual(gzA);
    expect(await scrape(ipA, b)).toEqual(gzB);
    // A VM's metrics are found on its own CN's address only (CMON sends its opts header).
    const cmonOpts = { headers: { 'x-joyent-cmon-opts': Buffer.from(JSON.stringify({ isCoreZone: false })).toString('base64') } };
    expect((await fetch(`http://${ipA}:${port}/v1/${made[a]}/metrics`, cmonOpts)).status).toBe(200);
    expect((await fetch(`http://${ipA}:${port}/v1/${made[b]}/metrics`, cmonOpts)).status).toBe(404);

    // The addresses are kept in the data dir and survive a restart.
    const file = JSON.parse(await fsp.readFile(path.join(dataDir, AGENT_IPS_FILE), 'utf8')) as { servers: Record<string, string> };
    expect(file.servers).toEqual({ [a]: ipA, [b]: ipB, [hn.uuid]: ipHn });
    await daemon.stop();
    daemons.splice(daemons.indexOf(daemon), 1);
    daemon = await startDaemon(dataDir, { agentIps: 'loopback' });
    expect([ipOf(daemon, a), ipOf(daemon, b)]).toEqual([ipA, ipB]);
    ({ cnapi } = clients(daemon));
    await waitFor(async () => new URL(await agentUrl(cnapi, a)).hostname === ipA, 10_000, 'CN a registered again on its address');
    const [c] = (await createServers(daemon, { count: 1 })) as [string];
    const ipC = ipOf(daemon, c);
    expect([ipA, ipB]).not.toContain(ipC);

    // A deleted CN's address is never handed out again.
    const del = await fetch(`${daemon.controlAddress.url}/servers/${c}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    const [d] = (await createServers(daemon, { count: 1 })) as [string];
    expect([ipA, ipB, ipC]).not.toContain(ipOf(daemon, d));
  }, 60_000);
});
