/**
 * vm-agent against a recording VMAPI: what VMAPI is told about a mock CN's VMs, when, and how.
 * Real mock CNs with real file-backed VM stores; the daemon's real Scheduler and HTTP client.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VmAgentPlugin } from '../../src/agents/vm-agent/index.js';
import type { VmAgentOptions } from '../../src/agents/vm-agent/index.js';
import { newUuid } from '../../src/common/uuid.js';
import type { Vm } from '../../src/vmadm/types.js';
import { FakeVmapi } from './helpers/fake-vmapi.js';
import { makeContext, TestFleet, vmPayload, waitFor, type TestContext } from './helpers/fleet.js';

const FAST: Partial<VmAgentOptions> = { resyncIntervalMs: 60_000, retryMinMs: 50, retryMaxMs: 400, startSpreadMs: 0 };

describe('vm-agent', () => {
  let fleet: TestFleet;
  let vmapi: FakeVmapi;
  let tc: TestContext;
  let agent: VmAgentPlugin | undefined;

  beforeEach(async () => {
    fleet = await TestFleet.create();
    vmapi = new FakeVmapi();
    await vmapi.start();
    tc = makeContext(fleet, { vmapi: vmapi.url });
  });

  afterEach(async () => {
    agent?.stop();
    agent = undefined;
    tc.close();
    await vmapi.stop();
    await fleet.close();
  });

  function startAgent(opts: Partial<VmAgentOptions> = {}): VmAgentPlugin {
    agent = new VmAgentPlugin(tc.ctx, { ...FAST, ...opts });
    agent.start();
    for (const cn of fleet.list()) agent.attach(cn);
    return agent;
  }

  it('initial sync PUTs only what differs: new and changed VMs, VMAPI-only VMs as destroyed, never DNI', async () => {
    const cn = await fleet.addCn();
    const fresh = await cn.vms.create(vmPayload({ alias: 'fresh' }));
    const same = await cn.vms.create(vmPayload({ alias: 'same' }));
    const changed = await cn.vms.create(vmPayload({ alias: 'changed' }));
    const dni = await cn.vms.create(vmPayload({ alias: 'dni', do_not_inventory: true }));
    vmapi.vms.set(same.uuid, { ...same });
    vmapi.vms.set(changed.uuid, { ...changed, state: 'stopped', zone_state: 'installed' });
    const gone = newUuid();
    vmapi.vms.set(gone, { uuid: gone, server_uuid: cn.uuid, state: 'running', brand: 'joyent', alias: 'gone' });
    const inFlight = newUuid();
    vmapi.vms.set(inFlight, { uuid: inFlight, server_uuid: cn.uuid, state: 'provisioning', brand: 'joyent' });
    const elsewhere = newUuid();
    vmapi.vms.set(elsewhere, { uuid: elsewhere, server_uuid: newUuid(), state: 'running', brand: 'joyent' });

    const a = startAgent();
    await waitFor('initial sync', () => a.isSynced(cn.uuid));

    const get = vmapi.requests.find((r) => r.method === 'GET' && r.path === '/vms')!;
    expect(get.query.get('server_uuid')).toBe(cn.uuid);
    expect(get.query.get('state')).toBe('active');
    const puts = vmapi.puts();
    expect(puts).toHaveLength(1);
    expect(puts[0]!.path).toBe('/vms');
    expect(puts[0]!.query.get('server_uuid')).toBe(cn.uuid);
    expect(String(puts[0]!.headers['user-agent'])).toMatch(new RegExp(`^vm-agent/1\\.9\\.1 \\(node/[0-9.]+\\) server/${cn.uuid}$`));
    const sent = (puts[0]!.body as { vms: Record<string, Record<string, unknown>> }).vms;
    expect(Object.keys(sent).sort()).toEqual([fresh.uuid, changed.uuid, gone].sort());
    // The full vmadm object, derived fields included.
    expect(sent[fresh.uuid]).toMatchObject({ uuid: fresh.uuid, alias: 'fresh', server_uuid: cn.uuid, zonename: fresh.uuid, state: 'running' });
    expect(sent[fresh.uuid]!.last_modified).toBe(fresh.last_modified);
    expect(sent[changed.uuid]!.state).toBe('running');
    expect(sent[gone]).toMatchObject({ alias: 'gone', state: 'destroyed', zone_state: 'destroyed' });
    expect(sent[dni.uuid]).toBeUndefined();
    expect(vmapi.vms.get(inFlight)!.state).toBe('provisioning');
  });

  it('reflects every VM change in VMAPI: create, stop, add NIC, destroy; DNI VMs never', async () => {
    const cn = await fleet.addCn();
    const a = startAgent();
    await waitFor('initial sync', () => a.isSynced(cn.uuid));

    const vm = await cn.vms.create(vmPayload({ alias: 'web' }));
    await waitFor('create in VMAPI', () => vmapi.vms.get(vm.uuid)?.state === 'running');
    expect(vmapi.vms.get(vm.uuid)).toMatchObject({ alias: 'web', brand: 'joyent-minimal', server_uuid: cn.uuid });

    await cn.vms.stop(vm.uuid);
    await waitFor('stop in VMAPI', () => vmapi.vms.get(vm.uuid)?.state === 'stopped');

    const mac = '90:b8:d0:11:22:33';
    await cn.vms.update(vm.uuid, { add_nics: [{ mac, ip: '10.88.88.9', netmask: '255.255.255.0', nic_tag: 'external' }] });
    await waitFor('new NIC in VMAPI', () => (vmapi.vms.get(vm.uuid)?.nics as { mac: string }[] | undefined)?.some((n) => n.mac === mac));

    const last = cn.vms.get(vm.uuid)!;
    await cn.vms.delete(vm.uuid);
    await waitFor('destroy in VMAPI', () => vmapi.vms.get(vm.uuid)?.state === 'destroyed');
    const destroyed = vmapi.vms.get(vm.uuid)!;
    expect(destroyed.zone_state).toBe('destroyed');
    expect(destroyed.alias).toBe('web');
    expect(destroyed.nics).toEqual(last.nics);

    const perVm = vmapi.puts().filter((r) => r.path === `/vms/${vm.uuid}`);
    for (const r of perVm) expect(String(r.headers['user-agent'])).toContain(`server/${cn.uuid}`);

    const hidden = await cn.vms.create(vmPayload({ alias: 'hidden', do_not_inventory: true }));
    await cn.vms.stop(hidden.uuid);
    await cn.vms.delete(hidden.uuid);
    const marker = await cn.vms.create(vmPayload({ alias: 'marker' }));
    await waitFor('later VM in VMAPI', () => vmapi.vms.has(marker.uuid));
    expect(vmapi.vms.has(hidden.uuid)).toBe(false);
    expect(vmapi.requests.some((r) => r.path === `/vms/${hidden.uuid}`)).toBe(false);
  });

  it('sends one request at a time per CN and coalesces queued changes of a VM into its newest state', async () => {
    const cn1 = await fleet.addCn();
    const cn2 = await fleet.addCn();
    const a = startAgent();
    await waitFor('both synced', () => a.isSynced(cn1.uuid) && a.isSynced(cn2.uuid));
    // VMAPI answers nothing until every change is made, however slow the machine is.
    let release!: () => void;
    vmapi.hold = new Promise<void>((r) => (release = r));
    const vm = await cn1.vms.create(vmPayload({ alias: 'v0' }));
    for (let i = 1; i <= 6; i++) await cn1.vms.update(vm.uuid, { alias: `v${i}` });
    const others: Vm[] = [];
    for (let i = 0; i < 4; i++) others.push(await cn2.vms.create(vmPayload({ alias: `other${i}` })));
    vmapi.hold = undefined;
    release();

    await waitFor('newest alias in VMAPI', () => vmapi.vms.get(vm.uuid)?.alias === 'v6');
    await waitFor('cn2 VMs in VMAPI', () => others.every((o) => vmapi.vms.has(o.uuid)));
    // 7 changes, but the first PUT is in flight while the rest queue up as one.
    expect(vmapi.puts().filter((r) => r.path === `/vms/${vm.uuid}`).length).toBeLessThanOrEqual(3);
    expect(vmapi.maxInFlight.get(cn1.uuid)).toBe(1);
    expect(vmapi.maxInFlight.get(cn2.uuid)).toBe(1);
  });

  it('retries a failing sync with growing delays, without holding up other CNs', async () => {
    const stuck = await fleet.addCn();
    const fine = await fleet.addCn();
    vmapi.failServers.add(stuck.uuid);
    // A low cap keeps the recovery wait short on a loaded machine; growth itself is the next test's.
    const a = startAgent({ retryMaxMs: 2000 });
    const fineVm = await fine.vms.create(vmPayload({ alias: 'fine' }));
    await waitFor('other CN synced', () => a.isSynced(fine.uuid) && vmapi.vms.has(fineVm.uuid));
    const stuckVm = await stuck.vms.create(vmPayload({ alias: 'stuck' }));
    const attempts = (): number => vmapi.requests.filter((r) => r.method === 'GET' && r.query.get('server_uuid') === stuck.uuid).length;
    // The fake sees a request before the agent has read its 500: wait for both sides.
    await waitFor('four failed attempts', () => attempts() >= 4 && (tc.errors['vm-agent.vmapi'] ?? 0) >= 4);
    expect(a.isSynced(stuck.uuid)).toBe(false);
    expect(vmapi.vms.has(stuckVm.uuid)).toBe(false);
    expect(tc.errors['vm-agent.vmapi']).toBeGreaterThanOrEqual(4);

    vmapi.failServers.delete(stuck.uuid);
    await waitFor('stuck CN recovers', () => a.isSynced(stuck.uuid) && vmapi.vms.has(stuckVm.uuid));
  });

  it('backs off 0.5 s-style: each retry waits longer than the one before', async () => {
    const cn = await fleet.addCn();
    const times: number[] = [];
    vmapi.failNext = 4;
    const origPush = vmapi.requests.push.bind(vmapi.requests);
    vmapi.requests.push = (...items) => {
      for (const it of items) if (it.method === 'GET') times.push(Date.now());
      return origPush(...items);
    };
    const a = startAgent({ retryMinMs: 60, retryMaxMs: 10_000 });
    await waitFor('synced after failures', () => a.isSynced(cn.uuid));
    expect(times.length).toBe(5);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    // Each wait at least doubles (60, 120, 240, 480 ms); a slow machine only adds to a gap, so
    // the lower bounds hold however loaded it is, and a fixed retry delay fails them.
    gaps.forEach((gap, i) => expect(gap, `gap ${i}: ${gaps.join(', ')}`).toBeGreaterThanOrEqual(60 * 2 ** i - 2));
  });

  it('a VMAPI restarted empty is refilled by the periodic re-sync, and an unchanged VMAPI gets no PUT', async () => {
    const cn = await fleet.addCn();
    const vms: Vm[] = [];
    for (let i = 0; i < 3; i++) vms.push(await cn.vms.create(vmPayload({ alias: `keep${i}` })));
    await cn.vms.stop(vms[1]!.uuid);
    const a = startAgent({ resyncIntervalMs: 250 });
    await waitFor('initial sync', () => a.isSynced(cn.uuid) && vms.every((v) => vmapi.vms.has(v.uuid)));

    const port = Number(new URL(vmapi.url).port);
    await vmapi.stop();
    vmapi = new FakeVmapi();
    await vmapi.start(port);
    await waitFor('VMAPI refilled', () => vms.every((v) => vmapi.vms.has(v.uuid)), 10_000);
    expect(vmapi.vms.get(vms[1]!.uuid)!.state).toBe('stopped');
    const refill = vmapi.puts();
    expect(refill.every((r) => r.path === '/vms' && r.query.get('server_uuid') === cn.uuid)).toBe(true);

    // Further re-syncs find nothing to change.
    const gets = vmapi.requests.filter((r) => r.method === 'GET').length;
    await waitFor('two more re-syncs', () => vmapi.requests.filter((r) => r.method === 'GET').length >= gets + 2);
    expect(vmapi.puts()).toHaveLength(refill.length);
  });

  it('reads every page of VMAPI’s list', async () => {
    const cn = await fleet.addCn();
    const ghosts = Array.from({ length: 5 }, () => newUuid());
    for (const uuid of ghosts) vmapi.vms.set(uuid, { uuid, server_uuid: cn.uuid, state: 'running', brand: 'joyent' });
    const a = startAgent({ pageLimit: 2 });
    await waitFor('initial sync', () => a.isSynced(cn.uuid));
    const offsets = vmapi.requests.filter((r) => r.method === 'GET').map((r) => [r.query.get('limit'), r.query.get('offset')]);
    expect(offsets).toEqual([
      ['2', '0'],
      ['2', '2'],
      ['2', '4'],
    ]);
    for (const uuid of ghosts) expect(vmapi.vms.get(uuid)!.state).toBe('destroyed');
  });

  it('stops serving a detached CN', async () => {
    const cn = await fleet.addCn();
    const a = startAgent();
    await waitFor('initial sync', () => a.isSynced(cn.uuid));
    a.detach(cn.uuid);
    const before = vmapi.requests.length;
    await cn.vms.create(vmPayload({ alias: 'after-detach' }));
    const marker = await fleet.addCn();
    a.attach(marker);
    await waitFor('marker CN synced', () => a.isSynced(marker.uuid));
    expect(vmapi.requests.slice(before).some((r) => String(r.headers['user-agent']).includes(cn.uuid))).toBe(false);
  });
});
