/**
 * The dev VMAPI looks packages up in the dev PAPI where sdc-vmapi does
 * (lib/common/validation.js validatePackageValues): a provision with `billing_id` takes what
 * it did not give from the package, an unknown package or a package of another brand is a
 * field error, and a resize to a package takes the package's values. Black box, through
 * sdc-clients' VMAPI and PAPI classes against a dev DC with a real mock CN; follows sdc-vmapi
 * test/vms.resize.test.js.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { newUuid } from '../../src/common/uuid.js';
import { startDevDc, type DevDc, type Obj } from './helpers/dev-dc.js';
import { call, callError, closeClient, papiClient, vmapiClient, waitFor, type Client } from './helpers/sdc-clients.js';

describe('dev VMAPI with the dev PAPI', () => {
  let dc: DevDc;
  let vmapi: Client;
  let papi: Client;
  let image: Obj;
  let bhyveImage: Obj;
  const pkg: Record<string, Obj> = {};

  async function waitJob(jobUuid: string): Promise<Obj> {
    return waitFor(async () => {
      const j = await call<Obj>(vmapi, 'getJob', jobUuid);
      return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
    }, 30_000);
  }

  const zone = (extra: Obj = {}): Obj => ({
    owner_uuid: DEFAULT_ADMIN_UUID,
    image_uuid: image.uuid,
    brand: 'joyent-minimal',
    networks: [{ name: 'admin' }],
    ...extra,
  });

  beforeAll(async () => {
    dc = await startDevDc(1);
    vmapi = vmapiClient(dc.urls.vmapi);
    papi = papiClient(dc.urls.papi);
    image = ((await (await fetch(`${dc.urls.imgapi}/images?type=zone-dataset`)).json()) as Obj[])[0]!;
    bhyveImage = ((await (await fetch(`${dc.urls.imgapi}/images?type=zvol`)).json()) as Obj[])[0]!;
    for (const name of ['sample-256M', 'sample-512M', 'sample-bhyve-flexible-1G']) {
      pkg[name] = (await call<Obj[]>(papi, 'list', { name, active: true }, {}))[0]!;
    }
  }, 120_000);

  afterAll(async () => {
    closeClient(vmapi);
    closeClient(papi);
    await dc?.close();
  }, 60_000);

  it("provisions with a billing_id, taking the package's values the provision did not give", async () => {
    const res = await call<{ vm_uuid: string; job_uuid: string }>(vmapi, 'createVm', zone({ billing_id: pkg['sample-256M']!.uuid }));
    const job = await waitJob(res.job_uuid);
    expect(job.execution, JSON.stringify(job.chain_results?.at?.(-1))).toBe('succeeded');
    const vm = await call<Obj>(vmapi, 'getVm', { uuid: res.vm_uuid });
    // sample-256M: 256 MiB, swap 1024, 6144 MiB of disk (6 GiB), cap 25, fss and io priority 16.
    expect(vm).toMatchObject({
      billing_id: pkg['sample-256M']!.uuid,
      ram: 256,
      max_physical_memory: 256,
      max_swap: 1024,
      quota: 6,
      cpu_cap: 25,
      cpu_shares: 16,
      zfs_io_priority: 16,
      max_lwps: 4000,
    });
  }, 60_000);

  it('refuses an unknown package and a package of another brand as VMAPI does', async () => {
    const ghost = newUuid();
    const unknown = await callError(vmapi, 'createVm', zone({ billing_id: ghost }));
    expect(unknown.statusCode).toBe(409);
    expect(unknown.body).toMatchObject({ code: 'ValidationFailed', message: 'Invalid VM parameters' });
    expect(unknown.body?.errors).toContainEqual({ field: 'billing_id', code: 'Invalid', message: `Package ${ghost} does not exist` });
    const brand = await callError(vmapi, 'createVm', zone({ billing_id: pkg['sample-bhyve-flexible-1G']!.uuid }));
    expect(brand.body?.errors).toContainEqual({
      field: 'brand',
      code: 'Invalid',
      message: 'Package requires brand "bhyve", but brand "joyent-minimal" was specified',
    });
  });

  it("resizes a VM to a package's values (vms.resize.test.js), and refuses an unknown one", async () => {
    const res = await call<{ vm_uuid: string; job_uuid: string }>(vmapi, 'createVm', zone({ billing_id: pkg['sample-256M']!.uuid }));
    expect((await waitJob(res.job_uuid)).execution).toBe('succeeded');
    const resized = await call<{ job_uuid: string }>(vmapi, 'updateVm', { uuid: res.vm_uuid, payload: { billing_id: pkg['sample-512M']!.uuid } });
    const job = await waitJob(resized.job_uuid);
    expect(job.execution, JSON.stringify(job.chain_results?.at?.(-1))).toBe('succeeded');
    expect(job.params.payload).toMatchObject({ billing_id: pkg['sample-512M']!.uuid, max_physical_memory: 512, max_swap: 2048, quota: 12, cpu_cap: 50 });
    expect(job.params.payload).not.toHaveProperty('package');
    const vm = await waitFor(async () => {
      const v = await call<Obj>(vmapi, 'getVm', { uuid: res.vm_uuid });
      return v.max_physical_memory === 512 ? v : undefined;
    }, 15_000);
    expect(vm).toMatchObject({ billing_id: pkg['sample-512M']!.uuid, ram: 512, max_swap: 2048, quota: 12, cpu_cap: 50 });

    const ghost = newUuid();
    const refused = await callError(vmapi, 'updateVm', { uuid: res.vm_uuid, payload: { billing_id: ghost } });
    expect(refused.statusCode).toBe(409);
    expect(refused.body?.errors).toContainEqual({ field: 'billing_id', code: 'Invalid', message: `Package ${ghost} does not exist` });
  }, 60_000);

  it("sizes a bhyve VM by the package's RAM as `ram`, over a caller's `ram`, on provision and on resize", async () => {
    const flex1G = pkg['sample-bhyve-flexible-1G']!;
    const res = await call<{ vm_uuid: string; job_uuid: string }>(vmapi, 'createVm', {
      owner_uuid: DEFAULT_ADMIN_UUID,
      brand: 'bhyve',
      billing_id: flex1G.uuid,
      // sdc-vmapi's validatePackageValues writes the package's max_physical_memory over this.
      ram: 2048,
      vcpus: 1,
      disks: [{ image_uuid: bhyveImage.uuid, boot: true }],
      networks: [{ name: 'admin' }],
    });
    const job = await waitJob(res.job_uuid);
    expect(job.execution, JSON.stringify(job.chain_results?.at?.(-1))).toBe('succeeded');
    expect(job.params).toMatchObject({ ram: 1024, flexible_disk_size: 24576 });
    expect(job.params).not.toHaveProperty('quota');
    expect(await call<Obj>(vmapi, 'getVm', { uuid: res.vm_uuid })).toMatchObject({ billing_id: flex1G.uuid, ram: 1024 });

    const flex2G = await call<Obj>(papi, 'add', {
      name: 'mc-bhyve-flexible-2G',
      version: '1.0.0',
      active: true,
      brand: 'bhyve',
      flexible_disk: true,
      cpu_cap: 100,
      max_lwps: 1000,
      max_physical_memory: 2048,
      max_swap: 8192,
      quota: 24576,
      zfs_io_priority: 10,
    });
    // VMAPI resizes a bhyve VM's CPU or memory only when it is stopped.
    const stop = await call<{ job_uuid: string }>(vmapi, 'stopVm', { uuid: res.vm_uuid });
    expect((await waitJob(stop.job_uuid)).execution).toBe('succeeded');
    const resized = await call<{ job_uuid: string }>(vmapi, 'updateVm', { uuid: res.vm_uuid, payload: { billing_id: flex2G.uuid } });
    const resizeJob = await waitJob(resized.job_uuid);
    expect(resizeJob.execution, JSON.stringify(resizeJob.chain_results?.at?.(-1))).toBe('succeeded');
    expect(resizeJob.params.payload).toMatchObject({ billing_id: flex2G.uuid, ram: 2048 });
    expect(resizeJob.params.payload).not.toHaveProperty('max_physical_memory');
    const vm = await waitFor(async () => {
      const v = await call<Obj>(vmapi, 'getVm', { uuid: res.vm_uuid });
      return v.ram === 2048 ? v : undefined;
    }, 15_000);
    expect(vm).toMatchObject({ billing_id: flex2G.uuid, ram: 2048 });
  }, 60_000);
});
