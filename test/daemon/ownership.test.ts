/**
 * Never delete what you did not check (issue 24): a NAPI and a VMAPI that ignore every filter
 * answer each list with the whole DC. Deleting one CN must still remove only that CN's NICs,
 * its own VMs and its own CNAPI record; everything else is left alone and counted in /status.
 * Against a recording CNAPI + VMAPI + NAPI; the daemon's own control API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { FakeCnAgent, FakeVmadm, waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';

const TIMINGS = { heartbeatIntervalMs: 200, statusThrottleMs: 200, startSpreadMs: 50, sysinfoBackoff: { minMs: 30, maxMs: 200 } };

function mac(i: number, prefix = 'aa'): string {
  return `${prefix}:00:00:00:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;
}
function uuidOf(i: number, prefix = 'b'): string {
  return `${prefix.repeat(8)}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
}

describe('deleting a CN against a NAPI and VMAPI that ignore every filter', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: Daemon;

  const api = async (method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${daemon.controlAddress.url}${p}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-ownership-'));
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS }));
    triton = await new RecordingTriton().start();
    const config = await resolveConfig({
      flags: { dataDir, cnapiUrl: triton.url, napiUrl: triton.url, vmapiUrl: triton.url, bindIp: '127.0.0.1', datacenterName: 'testdc' },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: createQuietLogger(), cnAgent: () => new FakeCnAgent(), vmadm: () => new FakeVmadm(), plugins: [] });
    await daemon.start();
  });

  afterAll(async () => {
    await daemon?.stop();
    await triton?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('removes only the CN\'s own NICs, VMs and record; the rest of the DC is left alone and counted', async () => {
    const created = await api('POST', '/servers', { count: 3 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const [doomed, ...others] = created.body.created.map((c: { uuid: string }) => c.uuid) as string[];
    await waitFor(() => triton.servers.size === 3, 10_000, 'CNs registered with CNAPI');
    const adminMacOf = (uuid: string): string =>
      String(daemon.fleet.get(uuid)!.sysinfo['Network Interfaces'].dnet0!['MAC Address']).replace(/:/g, '');

    // The doomed CN's admin NIC as net-agent leaves it (claimed: belongs to the server), a
    // second NIC of it, and two VMs of it with a NIC each.
    const doomedAdmin = adminMacOf(doomed!);
    Object.assign(triton.nics.get(doomedAdmin)!, { belongs_to_uuid: doomed, belongs_to_type: 'server' });
    const own = new Set([doomedAdmin]);
    const addNic = (m: string, nic: Record<string, unknown>): void => void triton.nics.set(m.replace(/:/g, ''), { mac: m, ...nic });
    addNic(mac(1, 'ee'), { belongs_to_uuid: doomed, belongs_to_type: 'server', owner_uuid: 'admin' });
    own.add(mac(1, 'ee').replace(/:/g, ''));
    for (let i = 0; i < 2; i++) {
      const vm = uuidOf(i, 'd');
      triton.vms.set(vm, { uuid: vm, server_uuid: doomed, state: 'running', brand: 'joyent' });
      addNic(mac(100 + i, 'ee'), { belongs_to_uuid: vm, belongs_to_type: 'zone', cn_uuid: doomed });
      own.add(mac(100 + i, 'ee').replace(/:/g, ''));
    }
    // The rest of the DC: other servers' NICs, other VMs and their NICs, one VM that migrated
    // away with its NIC still naming... the doomed CN's uuid as its owner must not match a zone.
    for (let i = 0; i < 300; i++) addNic(mac(i, 'aa'), { belongs_to_uuid: uuidOf(i, 'c'), belongs_to_type: 'server' });
    for (let i = 0; i < 200; i++) {
      const vm = uuidOf(i, 'e');
      triton.vms.set(vm, { uuid: vm, server_uuid: uuidOf(i % 7, 'c'), state: 'running', brand: 'joyent' });
      addNic(mac(i, 'ab'), { belongs_to_uuid: vm, belongs_to_type: 'zone', cn_uuid: uuidOf(i % 7, 'c') });
    }
    // A NIC whose owner uuid is the CN's but of another type (a VM must never be taken for the CN).
    addNic(mac(7, 'ac'), { belongs_to_uuid: doomed, belongs_to_type: 'other' });
    triton.ignoreFilters = true;
    const nicsBefore = new Set(triton.nics.keys());

    const res = await api('DELETE', `/servers/${doomed}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    // Exactly the CN's NICs went; every other NIC of the DC is still there.
    const gone = [...nicsBefore].filter((m) => !triton.nics.has(m));
    expect(gone.sort()).toEqual([...own].sort());
    for (const other of others) expect(triton.nics.has(adminMacOf(other))).toBe(true);
    expect(triton.nics.has(mac(7, 'ac').replace(/:/g, ''))).toBe(true);
    // Its two VMs are destroyed in VMAPI, no other VM is.
    const destroyed = [...triton.vms.values()].filter((vm) => vm.state === 'destroyed').map((vm) => vm.uuid);
    expect(destroyed.sort()).toEqual([uuidOf(0, 'd'), uuidOf(1, 'd')]);
    // Its CNAPI record went; the other CNs' stayed.
    expect(triton.servers.has(doomed!)).toBe(false);
    for (const other of others) expect(triton.servers.has(other)).toBe(true);
    // What was left alone is counted.
    const status = (await api('GET', '/status')).body;
    expect(status.leftAlone['napi-nic']).toBeGreaterThanOrEqual(500);
    expect(status.leftAlone['vmapi-vm']).toBe(200);
    expect(status.deletingServers).toEqual([]);
  });

  it('leaves a CNAPI record alone that is another daemon\'s or a real CN\'s', async () => {
    const created = await api('POST', '/servers', { count: 1 });
    const uuid = created.body.created[0].uuid as string;
    await waitFor(() => triton.servers.has(uuid), 10_000, 'registered');
    // Meanwhile CNAPI's record of that uuid says a real CN has it.
    const rec = triton.servers.get(uuid)!;
    rec.sysinfo = { ...(rec.sysinfo as object), 'System Type': 'SunOS' };
    // (Its registration must not put the mock's sysinfo back while it is being removed.)
    const before = (await api('GET', '/status')).body.leftAlone['cnapi-server'] ?? 0;
    const res = await api('DELETE', `/servers/${uuid}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(triton.find('DELETE', new RegExp(`^/servers/${uuid}$`))).toHaveLength(0);
    expect(triton.servers.has(uuid)).toBe(true);
    expect((await api('GET', '/status')).body.leftAlone['cnapi-server']).toBe(before + 1);
  });

  it("sets a placement only on the CN's own CNAPI record: one a real CN holds is refused (412) and left as it was", async () => {
    const created = await api('POST', '/servers', { count: 1 });
    const uuid = created.body.created[0].uuid as string;
    await waitFor(() => triton.servers.has(uuid), 10_000, 'registered');
    const rec = triton.servers.get(uuid)!;
    const mine = rec.sysinfo;
    rec.sysinfo = { ...(rec.sysinfo as object), 'System Type': 'SunOS' };
    const updates = (): unknown[] => triton.find('POST', new RegExp(`^/servers/${uuid}$`)).filter((r) => (r.body as { reserved?: unknown } | undefined)?.reserved === true);
    const refused = await api('POST', `/servers/${uuid}/placement`, { reserved: true });
    expect(refused.status, JSON.stringify(refused.body)).toBe(412);
    expect(refused.body.message).toContain('left alone');
    expect(updates()).toHaveLength(0);
    // Its own record again: the same request goes through.
    rec.sysinfo = mine;
    const set = await api('POST', `/servers/${uuid}/placement`, { reserved: true });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(updates()).toHaveLength(1);
  });

  // The double answers a stale If-Match with 412, as NAPI does (sdc-napi lib/endpoints/nics.js);
  // sdc-vmapi's PutVm (lib/endpoints/vms.js) ignores If-Match, so against it the read just
  // before the write is the check: the test holds the clean-up to both.
  it('destroys a VM in VMAPI only with If-Match of what it read: one that moved to another server meanwhile (412) is left alone with its NIC, and counted', async () => {
    triton.ignoreFilters = false;
    const created = await api('POST', '/servers', { count: 1 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const uuid = created.body.created[0].uuid as string;
    await waitFor(() => triton.servers.has(uuid), 10_000, 'registered');
    const [stays, moves] = [uuidOf(0x70, 'f'), uuidOf(0x71, 'f')];
    const elsewhere = uuidOf(0x72, 'c');
    for (const vm of [stays, moves]) triton.vms.set(vm, { uuid: vm, server_uuid: uuid, state: 'running', brand: 'joyent' });
    const movedNic = mac(0x71, 'ef');
    triton.nics.set(movedNic.replace(/:/g, ''), { mac: movedNic, belongs_to_uuid: moves, belongs_to_type: 'zone', cn_uuid: uuid });
    // Read on this CN, then migrated before the write (as a migration's switch-over does).
    triton.afterNext('GET', new RegExp(`^/vms/${moves}$`), () => {
      Object.assign(triton.vms.get(moves)!, { server_uuid: elsewhere, last_modified: new Date().toISOString() });
    });
    const before = (await api('GET', '/status')).body.leftAlone['vmapi-vm'] ?? 0;

    const res = await api('DELETE', `/servers/${uuid}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    const puts = (vm: string) => triton.find('PUT', new RegExp(`^/vms/${vm}$`));
    expect(puts(stays)).toHaveLength(1);
    expect(puts(stays)[0]!.headers['if-match']).toMatch(/^".+"$/);
    expect(triton.vms.get(stays)!.state).toBe('destroyed');
    // The moved VM's write was refused (its etag changed), it was read again and left alone.
    expect(puts(moves).map((r) => r.headers['if-match'])).toEqual([expect.stringMatching(/^".+"$/)]);
    expect(triton.vms.get(moves)).toMatchObject({ server_uuid: elsewhere, state: 'running' });
    expect(triton.find('GET', new RegExp(`^/vms/${moves}$`))).toHaveLength(2);
    expect(triton.nics.has(movedNic.replace(/:/g, ''))).toBe(true);
    expect(res.body.vms, "the VMs the removal names as the CN's").toEqual([stays]);
    expect((await api('GET', '/status')).body.leftAlone['vmapi-vm']).toBe(before + 1);
  });
});
