/**
 * Issue 4 end to end: the embedded dev headnode (CNAPI, VMAPI, NAPI, IMGAPI) and a daemon
 * with 20 mock CNs (real cn-agent, real file-backed vmadm), driven only through
 * sdc-clients' CNAPI, VMAPI and NAPI classes and the daemon's control API. Each VM action
 * must be visible in VMAPI and in the VM's file on the chosen CN.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDevDc, type DevDc, type Obj } from './helpers/dev-dc.js';
import { call, closeClient, napiClient, raw, vmapiClient, waitFor, type Client } from './helpers/sdc-clients.js';

const CN_COUNT = 20;
const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

describe('dev headnode + daemon end to end', () => {
  let dc: Omit<DevDc, 'servers'>;
  let cnapi: Client;
  let vmapi: Client;
  let napi: Client;
  let image: Obj;
  let image2: Obj;
  let vmUuid: string;
  let serverUuid: string;

  /** The VM's file on its CN, as vmadm stores it. */
  const vmFile = async (): Promise<Obj | undefined> => {
    const file = path.join(dc.dataDir, 'servers', serverUuid, 'vms', `${vmUuid}.json`);
    try {
      return JSON.parse(await fsp.readFile(file, 'utf8')) as Obj;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  };

  const getVm = (): Promise<Obj> => call<Obj>(vmapi, 'getVm', { uuid: vmUuid });

  /** Start a VMAPI action and wait for its job; returns the finished job. */
  async function act(method: string, args: Obj): Promise<Obj> {
    const res = await call<{ job_uuid: string; vm_uuid: string }>(vmapi, method, { uuid: vmUuid, ...args });
    expect(res.vm_uuid).toBe(vmUuid);
    const job = await waitFor(async () => {
      const j = await call<Obj>(vmapi, 'getJob', res.job_uuid);
      return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
    }, 30_000);
    if (job.execution !== 'succeeded') {
      throw new Error(`${method} job failed: ${JSON.stringify(job.chain_results[job.chain_results.length - 1])}`);
    }
    return job;
  }

  beforeAll(async () => {
    // The CNs are asked for here; the first test waits for them to register.
    dc = await openDevDc(CN_COUNT);
    cnapi = dc.cnapi;
    vmapi = vmapiClient(dc.urls.vmapi);
    napi = napiClient(dc.urls.napi);
  }, 120_000);

  afterAll(async () => {
    closeClient(vmapi);
    closeClient(napi);
    await dc?.close();
  }, 60_000);

  it(`shows all ${CN_COUNT} mock CNs running in CNAPI's listServers`, async () => {
    const servers = await waitFor(async () => {
      const list = await call<Obj[]>(cnapi, 'listServers', { extras: 'sysinfo,agents' });
      // Registration makes a server `running` at once; cn-agent posts its agents right after.
      const ready = list.filter(
        (s) => s.status === 'running' && s.setup === true && (s.agents as Obj[]).some((a) => a.name === 'cn-agent'),
      );
      return ready.length === CN_COUNT ? list : undefined;
    }, 60_000, 200);
    for (const s of servers) {
      expect(s.sysinfo['System Type']).toBe('Virtual');
      expect(typeof s.sysinfo['CN Agent Port']).toBe('number');
      const cnAgent = (s.agents as Obj[]).find((a) => a.name === 'cn-agent');
      expect(cnAgent?.version).toBeTruthy();
    }
    // The admin NIC tag came from the registrations, through CNAPI into NAPI.
    const tags = await call<Obj[]>(napi, 'listNicTags', {});
    expect(tags.map((t) => t.name)).toContain('admin');
  }, 90_000);

  it('tags every CN external the way add_externals does (PUT /servers/:uuid/nics)', async () => {
    const servers = await call<Obj[]>(cnapi, 'listServers', { extras: 'sysinfo' });
    for (const s of servers) {
      const dnet1 = s.sysinfo['Network Interfaces'].dnet1;
      const res = await raw<{ job_uuid: string }>(cnapi, 'put', `/servers/${s.uuid}/nics`, {
        action: 'update',
        nics: [{ mac: dnet1['MAC Address'], nic_tags_provided: ['external'] }],
      });
      expect(res.statusCode).toBe(202);
      expect(typeof res.body.job_uuid).toBe('string');
    }
    await waitFor(async () => {
      const list = await call<Obj[]>(cnapi, 'listServers', { extras: 'sysinfo' });
      return list.every((s) => s.sysinfo['Network Interfaces'].dnet1['NIC Names'].includes('external'));
    }, 30_000, 200);
  }, 60_000);

  it('provisions a VM through VMAPI that lands as a file on the chosen CN and runs', async () => {
    const images = await (await fetch(`${dc.urls.imgapi}/images?type=zone-dataset`)).json() as Obj[];
    expect(images.length).toBeGreaterThan(0);
    image = images[0]!;
    image2 = images[1] ?? images[0]!;
    const res = await call<{ vm_uuid: string; job_uuid: string }>(vmapi, 'createVm', {
      owner_uuid: OWNER,
      image_uuid: image.uuid,
      brand: 'joyent-minimal',
      ram: 512,
      alias: 'e2e-web0',
      networks: [{ name: 'external' }],
      customer_metadata: { 'user-script': 'true' },
    });
    vmUuid = res.vm_uuid;
    const job = await waitFor(async () => {
      const j = await call<Obj>(vmapi, 'getJob', res.job_uuid);
      return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
    }, 30_000);
    expect(job.execution, JSON.stringify(job.chain_results)).toBe('succeeded');

    const vm = await getVm();
    expect(vm.state).toBe('running');
    serverUuid = vm.server_uuid;
    expect(vm.nics).toHaveLength(1);
    const file = await vmFile();
    expect(file).toBeDefined();
    expect(file).toMatchObject({ uuid: vmUuid, alias: 'e2e-web0', image_uuid: image.uuid, state: 'running' });
    expect(file!.nics[0].mac).toBe(vm.nics[0].mac);
    expect(file!.nics[0].ip).toBe(vm.nics[0].ip);

    // NAPI holds the NIC for the VM, on the CN it landed on.
    const nics = await call<Obj[]>(napi, 'listNics', { belongs_to_uuid: vmUuid });
    expect(nics).toHaveLength(1);
    expect(nics[0]).toMatchObject({ belongs_to_type: 'zone', owner_uuid: OWNER, cn_uuid: serverUuid });
    // CNAPI reports the VM in the CN's status (the VM inventory from cn-agent).
    await waitFor(async () => (await call<Obj>(cnapi, 'getServer', serverUuid)).vms?.[vmUuid], 15_000, 200);
  }, 60_000);

  it('stops and starts the VM', async () => {
    await act('stopVm', {});
    expect((await getVm()).state).toBe('stopped');
    expect((await vmFile())!.state).toBe('stopped');
    await act('startVm', {});
    expect((await getVm()).state).toBe('running');
    expect((await vmFile())!.state).toBe('running');
  }, 60_000);

  it('reboots the VM', async () => {
    const job = await act('rebootVm', {});
    expect(job.name).toMatch(/^reboot-/);
    expect((await getVm()).state).toBe('running');
    expect((await vmFile())!.state).toBe('running');
  }, 60_000);

  it('creates a snapshot and rolls back to it', async () => {
    await act('snapshotVm', { name: 'before-change' });
    expect((await getVm()).snapshots.map((s: Obj) => s.name)).toContain('before-change');
    expect(((await vmFile())!.snapshots ?? []).map((s: Obj) => s.name)).toContain('before-change');
    const job = await act('rollbackVm', { name: 'before-change' });
    // VMAPI's rollback workflow stops a running VM before it rolls back.
    expect(job.chain_results.map((r: Obj) => r.name)).toEqual(
      expect.arrayContaining(['cnapi.stop_vm', 'cnapi.rollback_vm', 'vmapi.put_vm']),
    );
    const vm = await getVm();
    expect(vm.snapshots.map((s: Obj) => s.name)).toContain('before-change');
    // VMAPI shows what the CN has.
    expect(vm.state).toBe((await vmFile())!.state);
  }, 60_000);

  it('updates customer metadata', async () => {
    await act('updateVm', { payload: { customer_metadata: { 'user-script': 'true', role: 'db' } } });
    expect((await getVm()).customer_metadata).toMatchObject({ role: 'db' });
    expect((await vmFile())!.customer_metadata).toMatchObject({ role: 'db' });
  }, 60_000);

  it('adds a NIC from the admin network', async () => {
    await act('addNics', { networks: [{ name: 'admin' }] });
    const vm = await getVm();
    expect(vm.nics).toHaveLength(2);
    expect((await vmFile())!.nics).toHaveLength(2);
    const nics = await call<Obj[]>(napi, 'listNics', { belongs_to_uuid: vmUuid });
    expect(nics).toHaveLength(2);
  }, 60_000);

  it('reprovisions the VM', async () => {
    await act('reprovisionVm', { image_uuid: image2.uuid });
    const vm = await getVm();
    expect(vm.image_uuid).toBe(image2.uuid);
    const file = (await vmFile())!;
    expect(file.image_uuid).toBe(image2.uuid);
    expect(vm.state).toBe(file.state);
  }, 60_000);

  it('destroys the VM: destroyed in VMAPI, gone from disk, NICs released', async () => {
    await act('deleteVm', {});
    // As on a real DC, VMAPI learns of a non-docker VM's end from vm-agent, not from the
    // destroy job (sdc-vmapi lib/workflows/destroy.js marks only docker VMs destroyed).
    await waitFor(async () => ((await getVm()).state === 'destroyed' ? true : undefined), 30_000, 200);
    expect(await vmFile()).toBeUndefined();
    const nics = await call<Obj[]>(napi, 'listNics', { belongs_to_uuid: vmUuid });
    expect(nics).toHaveLength(0);
  }, 60_000);
});
