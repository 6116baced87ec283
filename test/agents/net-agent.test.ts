/**
 * net-agent against the dev headnode's NAPI (src/headnode/napi), behind a recording proxy:
 * what NAPI ends up holding for a mock CN's own NICs and its VMs' NICs, and what NAPI's
 * network and NIC changes do to the VM files.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NetAgentPlugin, type NetAgentOptions } from '../../src/agents/net-agent/index.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { newUuid } from '../../src/common/uuid.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { NapiService } from '../../src/headnode/napi/index.js';
import type { MockCnImpl } from '../../src/mockcn/mock-cn.js';
import { randomMockMac } from '../../src/mockcn/sysinfo-template.js';
import { makeContext, TestFleet, vmPayload, waitFor, type TestContext } from './helpers/fleet.js';
import { RecordingProxy } from './helpers/recording-proxy.js';

const ADMIN = DEFAULT_ADMIN_UUID;
const OWNER = '2f9d8cb7-1b77-4b55-a5a0-1fc8e6f8c6a1';
const FAST: Partial<NetAgentOptions> = {
  retryMinMs: 50,
  retryMaxMs: 400,
  startSpreadMs: 0,
  fullPassIntervalMs: 60_000,
  networkPollMs: 60_000,
  changefeedBackoffMinMs: 100,
  changefeedBackoffMaxMs: 400,
};

type Obj = Record<string, any>;

describe('net-agent', () => {
  let fleet: TestFleet;
  let napi: NapiService;
  let napiUrl: string;
  let proxy: RecordingProxy;
  let tc: TestContext;
  let agent: NetAgentPlugin | undefined;
  let externalNet: Obj;

  async function api(method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; etag: string | null }> {
    const res = await fetch(`${napiUrl}${p}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, etag: res.headers.get('etag') };
  }
  const nic = async (mac: string): Promise<Obj | undefined> => {
    const r = await api('GET', `/nics/${mac.replace(/:/g, '')}`);
    return r.status === 200 ? r.body : undefined;
  };
  const vmFile = async (cn: MockCnImpl, uuid: string): Promise<Obj> => JSON.parse(await fsp.readFile(path.join(cn.paths.vms, `${uuid}.json`), 'utf8'));

  beforeEach(async () => {
    fleet = await TestFleet.create();
    const store = new HeadnodeStore({ dataDir: path.join(fleet.dataDir, 'headnode'), log: fleet.log });
    napi = new NapiService({ log: fleet.log, store, adminUuid: ADMIN });
    await napi.start({ host: '127.0.0.1', port: 0 });
    napiUrl = napi.url;
    proxy = new RecordingProxy(napiUrl);
    await proxy.start();
    tc = makeContext(fleet, { napi: proxy.url });
    const nets = (await api('GET', '/networks?name=external')).body as Obj[];
    externalNet = nets.find((n) => n.name === 'external')!;
  });

  afterEach(async () => {
    agent?.stop();
    agent = undefined;
    tc.close();
    await proxy.stop();
    await napi.stop();
    await fleet.close();
  });

  async function startAgent(opts: Partial<NetAgentOptions> = {}): Promise<NetAgentPlugin> {
    agent = new NetAgentPlugin(tc.ctx, { ...FAST, ...opts });
    await agent.start();
    for (const cn of fleet.list()) agent.attach(cn);
    return agent;
  }

  /** A CN whose admin NIC was made the way create-server makes it (booter-style, owned by admin). */
  async function cnWithAdminNic(): Promise<MockCnImpl> {
    const mac = randomMockMac();
    const r = await api('POST', '/networks/admin/nics', { belongs_to_type: 'other', belongs_to_uuid: ADMIN, owner_uuid: ADMIN, mac, nic_tags_provided: ['admin'] });
    expect(r.status).toBe(200);
    return fleet.addCn({ adminMac: mac, adminIp: r.body.ip });
  }

  /** A VM with one external NIC that NAPI provisioned first, as VMAPI's workflow does. */
  async function provisionedVm(cn: MockCnImpl, extra: Obj = {}) {
    const uuid = newUuid();
    const r = await api('POST', `/networks/${externalNet.uuid}/nics`, { belongs_to_type: 'zone', belongs_to_uuid: uuid, owner_uuid: OWNER, state: 'provisioning' });
    expect(r.status).toBe(200);
    const n = r.body;
    const vm = await cn.vms.create(
      vmPayload({
        uuid,
        owner_uuid: OWNER,
        resolvers: n.resolvers,
        nics: [{ mac: n.mac, ip: n.ip, netmask: n.netmask, gateway: n.gateway, nic_tag: n.nic_tag, vlan_id: n.vlan_id, network_uuid: n.network_uuid, mtu: n.mtu, primary: true, interface: 'net0' }],
        ...extra,
      }),
    );
    return { vm, mac: n.mac as string };
  }

  it('puts the CN’s own NICs in NAPI: claims the booter-made admin NIC, creates the others', async () => {
    const cn = await cnWithAdminNic();
    const nics = cn.sysinfo['Network Interfaces'];
    const adminMac = nics.dnet0!['MAC Address'];
    const extraMac = nics.dnet1!['MAC Address'];
    expect(await nic(extraMac)).toBeUndefined();
    await startAgent();

    const admin = await waitFor('admin NIC claimed', async () => {
      const n = await nic(adminMac);
      return n?.belongs_to_type === 'server' ? n : undefined;
    });
    expect(admin).toMatchObject({ belongs_to_uuid: cn.uuid, owner_uuid: ADMIN, state: 'running', nic_tags_provided: ['admin'], ip: cn.sysinfo['Admin IP'] });
    const extra = await waitFor('dnet1 created', () => nic(extraMac));
    expect(extra).toMatchObject({ belongs_to_type: 'server', belongs_to_uuid: cn.uuid, owner_uuid: ADMIN, state: 'running' });

    const create = proxy.records.find((r) => r.method === 'POST' && r.path === '/nics')!;
    expect(JSON.parse(create.body)).toMatchObject({ mac: extraMac, check_owner: false, belongs_to_type: 'server', cn_uuid: cn.uuid });
    const claim = proxy.forMac(adminMac).find((r) => r.method === 'PUT')!;
    expect(JSON.parse(claim.body)).toMatchObject({ belongs_to_type: 'server', belongs_to_uuid: cn.uuid, check_owner: false });
    expect(String(claim.headers['user-agent'])).toMatch(new RegExp(`^net-agent/2\\.3\\.4 \\(node/[0-9.]+\\) server/${cn.uuid}$`));
  });

  it('keeps VM NICs in NAPI: state with the VM, new NICs created, removed NICs deleted with If-Match', async () => {
    const cn = await cnWithAdminNic();
    const a = await startAgent();
    const { vm, mac } = await provisionedVm(cn);
    await waitFor('NIC running, on this CN', async () => (await nic(mac))?.state === 'running');
    expect(await nic(mac)).toMatchObject({ belongs_to_type: 'zone', belongs_to_uuid: vm.uuid, owner_uuid: OWNER, cn_uuid: cn.uuid, primary: true });

    await cn.vms.stop(vm.uuid);
    await waitFor('NIC stopped', async () => (await nic(mac))?.state === 'stopped');
    await cn.vms.start(vm.uuid);
    await waitFor('NIC running again', async () => (await nic(mac))?.state === 'running');

    const added = '90:b8:d0:aa:bb:01';
    await cn.vms.update(vm.uuid, { add_nics: [{ mac: added, nic_tag: 'external', interface: 'net1' }] });
    const created = await waitFor('added NIC in NAPI', () => nic(added));
    expect(created).toMatchObject({ belongs_to_type: 'zone', belongs_to_uuid: vm.uuid, owner_uuid: OWNER, cn_uuid: cn.uuid, state: 'running' });

    const etagBefore = (await api('GET', `/nics/${added.replace(/:/g, '')}`)).etag;
    await cn.vms.update(vm.uuid, { remove_nics: [added] });
    await waitFor('removed NIC deleted', async () => (await nic(added)) === undefined);
    // NAPI may have dropped the NIC before its answer has passed back through the proxy.
    const del = (await waitFor('DELETE answered', async () => proxy.forMac(added).find((r) => r.method === 'DELETE' && r.status !== undefined)))!;
    expect(del.headers['if-match']).toBe(etagBefore);
    expect(del.status).toBe(204);

    await cn.vms.delete(vm.uuid);
    await waitFor('destroyed VM’s NIC deleted', async () => (await nic(mac)) === undefined);
    expect(proxy.forMac(mac).find((r) => r.method === 'DELETE')!.headers['if-match']).toBeTruthy();
    expect(a.stats().nicFailures).toBe(0);
  });

  it('never deletes a NIC NAPI has given to someone else', async () => {
    const cn = await cnWithAdminNic();
    await startAgent();
    const { vm, mac } = await provisionedVm(cn);
    await waitFor('NIC running', async () => (await nic(mac))?.state === 'running');
    const other = newUuid();
    // Another VM takes the address in NAPI (owner change) while this CN still has it...
    await api('PUT', `/nics/${mac.replace(/:/g, '')}`, { belongs_to_uuid: other, belongs_to_type: 'zone', check_owner: false });
    await cn.vms.delete(vm.uuid);
    // ...so deleting this VM must leave NAPI's NIC alone.
    await new Promise((r) => setTimeout(r, 400));
    expect((await nic(mac))?.belongs_to_uuid).toBe(other);
    // A delete based on the old Etag is refused by NAPI (412) and not retried against the new owner.
    const deletes = proxy.forMac(mac).filter((r) => r.method === 'DELETE');
    expect(deletes.every((r) => r.status === 412 && r.headers['if-match'])).toBe(true);
  });

  it('writes NAPI network changes (gateway, resolvers, routes) into the VM file via the changefeed, once', async () => {
    const cn = await cnWithAdminNic();
    const a = await startAgent();
    const { vm, mac } = await provisionedVm(cn);
    await waitFor('NIC running', async () => (await nic(mac))?.state === 'running');
    await waitFor('changefeed live', () => a.changefeedState === 'live');
    const stats = (await api('GET', '/changefeeds/stats')).body;
    const regs = Object.values(stats.registrations.network ?? {}) as Obj[];
    expect(regs).toHaveLength(1);
    expect(regs[0]!.service).toBe('net-agent');

    const polls = proxy.records.filter((r) => r.path.startsWith('/networks/')).length;
    const r = await api('PUT', `/networks/${externalNet.uuid}`, { gateway: '10.88.88.1', resolvers: ['9.9.9.9'], routes: { '10.0.0.0/8': '10.88.88.1' } });
    expect(r.status).toBe(200);
    const file = await waitFor('VM file updated', async () => {
      const f = await vmFile(cn, vm.uuid);
      return f.nics?.[0]?.gateway === '10.88.88.1' && f.resolvers?.[0] === '9.9.9.9' ? f : undefined;
    }) as Obj;
    expect(file.nics[0].gateways).toEqual(['10.88.88.1']);
    expect(file.resolvers).toEqual(['9.9.9.9']);
    expect(file.routes).toEqual({ '10.0.0.0/8': '10.88.88.1' });
    // It came by the changefeed, not by the (minutes away) network poll.
    expect(a.stats().changefeedItems).toBeGreaterThan(0);
    expect(proxy.records.filter((x) => x.path.startsWith('/networks/')).length - polls).toBeLessThanOrEqual(1);

    // Converged: no further writes to the VM.
    const updates = a.stats().vmUpdates;
    const mtime = (await fsp.stat(path.join(cn.paths.vms, `${vm.uuid}.json`))).mtimeMs;
    await new Promise((res) => setTimeout(res, 400));
    expect(a.stats().vmUpdates).toBe(updates);
    expect((await fsp.stat(path.join(cn.paths.vms, `${vm.uuid}.json`))).mtimeMs).toBe(mtime);
  });

  it('without a changefeed, the shared network poll brings a gateway change, and passes do not rewrite the VM', async () => {
    const cn = await cnWithAdminNic();
    const a = await startAgent({ changefeed: false, networkPollMs: 200, fullPassIntervalMs: 300 });
    const { vm, mac } = await provisionedVm(cn);
    const vm2 = await provisionedVm(cn);
    await waitFor('NICs running', async () => (await nic(mac))?.state === 'running' && (await nic(vm2.mac))?.state === 'running');
    const before = a.stats().vmUpdates;
    await api('PUT', `/networks/${externalNet.uuid}`, { gateway: '10.88.88.254' });
    await waitFor('gateway in both VM files', async () => {
      const f1 = await vmFile(cn, vm.uuid);
      const f2 = await vmFile(cn, vm2.vm.uuid);
      return f1.nics[0].gateway === '10.88.88.254' && f2.nics[0].gateway === '10.88.88.254';
    });
    // A file is visible at its rename, counted once its durable write returns: on a busy host
    // the second count can land after the file is seen.
    await waitFor('both writes counted', () => a.stats().vmUpdates >= before + 2);
    const updates = a.stats().vmUpdates;
    const passes = a.stats().passes;
    await waitFor('two more full passes', () => a.stats().passes >= passes + 2);
    expect(a.stats().vmUpdates).toBe(updates);
    // One poller per network (admin, external) for the whole fleet, not one per NIC or CN.
    expect(a.stats().networks).toBe(2);
  });

  it('pulls NAPI NIC properties (spoofing flags) into the VM and drops a NIC NAPI’s operator deleted', async () => {
    const cn = await cnWithAdminNic();
    const a = await startAgent();
    const { vm, mac } = await provisionedVm(cn);
    await waitFor('NIC running', async () => (await nic(mac))?.state === 'running');
    await waitFor('changefeed live', () => a.changefeedState === 'live');
    await api('PUT', `/nics/${mac.replace(/:/g, '')}`, { allow_ip_spoofing: true });
    await waitFor('flag in VM file', async () => (await vmFile(cn, vm.uuid)).nics[0].allow_ip_spoofing === true);

    await api('DELETE', `/nics/${mac.replace(/:/g, '')}`);
    await waitFor('NIC gone from the VM', async () => (await vmFile(cn, vm.uuid)).nics.length === 0);
    await waitFor('the VM rebooted', () => a.stats().vmReboots === 1);
    expect((await vmFile(cn, vm.uuid)).state).toBe('running');
    await new Promise((r) => setTimeout(r, 200));
    expect(await nic(mac)).toBeUndefined();
  });

  it('a NAPI outage never lets an old update land after the delete of the same NIC', async () => {
    const cn = await cnWithAdminNic();
    const a = await startAgent();
    const { vm, mac } = await provisionedVm(cn);
    await waitFor('NIC running', async () => (await nic(mac))?.state === 'running');
    proxy.down = true;
    await cn.vms.stop(vm.uuid);
    await waitFor('a failed update', () => a.stats().nicFailures > 0);
    await cn.vms.delete(vm.uuid);
    await new Promise((r) => setTimeout(r, 150));
    proxy.down = false;
    await waitFor('NIC deleted', async () => (await nic(mac)) === undefined);
    await new Promise((r) => setTimeout(r, 300));
    const records = proxy.forMac(mac).filter((r) => r.status !== 503);
    const del = records.findIndex((r) => r.method === 'DELETE' && r.status === 204);
    expect(del).toBeGreaterThanOrEqual(0);
    expect(records.slice(del + 1).filter((r) => r.method !== 'GET')).toEqual([]);
    expect(proxy.records.filter((r) => r.method === 'POST' && r.body.includes(mac) && r.at > records[del]!.at)).toEqual([]);
    expect(await nic(mac)).toBeUndefined();
  });
});
