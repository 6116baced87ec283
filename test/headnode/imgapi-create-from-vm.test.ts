/**
 * CreateImageFromVm on the dev IMGAPI, black-box with sdc-clients' IMGAPI as the client (the
 * same calls as sdc-imgapi test/admincreateimagefromvm.dc-test.js): sdc-imgapi lib/images.js
 * apiCreateImageFromVm answers `{image_uuid, job_uuid}` with the `workflow-api` header, and its
 * create-from-vm job (lib/workflows/create-from-vm.js) has the VM's CN publish the image.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findDaemon } from '../../src/cli/daemon-client.js';
import { createQuietLogger } from '../../src/common/log.js';
import { call, callError, closeClient, vmapiClient, waitFor, type Client } from './helpers/sdc-clients.js';
import { startDevDc, type DevDc, type Obj } from './helpers/dev-dc.js';

const require = createRequire(import.meta.url);
const { IMGAPI } = require('sdc-clients') as { IMGAPI: new (o: object) => Client };

const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

describe('dev IMGAPI CreateImageFromVm (create-from-vm job)', () => {
  let dc: DevDc;
  let imgapi: Client;
  let vmapi: Client;
  let base: Obj;
  let vm: string;

  const manifest = (): Obj => ({ uuid: randomUUID(), owner: OWNER, name: `custom-${randomUUID().slice(0, 8)}`, version: '1.0.0' });

  beforeAll(async () => {
    dc = await startDevDc(1);
    imgapi = new IMGAPI({ url: dc.urls.imgapi, agent: false, log: createQuietLogger('sdc-imgapi') });
    vmapi = vmapiClient(dc.urls.vmapi);
    [base] = await call<Obj[]>(imgapi, 'listImages', { name: 'base-64-lts' });
    const res = await call<{ vm_uuid: string; job_uuid: string }>(vmapi, 'createVm', {
      owner_uuid: OWNER,
      image_uuid: base!.uuid,
      brand: 'joyent-minimal',
      ram: 256,
      networks: [{ name: 'admin' }],
    });
    vm = res.vm_uuid;
    const job = await waitFor(async () => {
      const j = await call<Obj>(vmapi, 'getJob', res.job_uuid);
      return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
    }, 60_000);
    expect(job.execution, JSON.stringify(job.chain_results)).toBe('succeeded');
  }, 120_000);

  afterAll(async () => {
    imgapi?.client?.close?.();
    imgapi?.rawClient?.close?.();
    if (vmapi) closeClient(vmapi);
    await dc?.close();
  }, 60_000);

  it('creates an active image of the VM, its job on the workflow API the header names', async () => {
    const m = manifest();
    const [job, res] = await new Promise<[Obj, Obj]>((resolve, reject) =>
      imgapi.createImageFromVm(m, { vm_uuid: vm }, (err: Error | null, j: Obj, r: Obj) => (err ? reject(err) : resolve([j, r]))),
    );
    expect(job).toEqual({ image_uuid: m.uuid, job_uuid: expect.any(String) });
    expect(res.headers['workflow-api']).toBe(dc.urls.vmapi);
    const done = await waitFor(async () => {
      const j = await call<Obj>(vmapi, 'getJob', job.job_uuid);
      return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
    }, 60_000);
    expect(done.execution, JSON.stringify(done.chain_results)).toBe('succeeded');
    expect(done.name).toMatch(/^create-from-vm-/);
    expect(done.chain_results.map((r: Obj) => r.name)).toEqual(['vmapi.get_vm_server', 'cnapi.queue_create_from_vm_task', 'cnapi.poll_task']);

    const image = await call<Obj>(imgapi, 'getImage', m.uuid);
    expect(image).toMatchObject({ uuid: m.uuid, owner: OWNER, name: m.name, version: '1.0.0', state: 'active', type: 'zone-dataset', os: 'smartos' });
    expect(image.published_at).toEqual(expect.any(String));
    expect(image.files).toHaveLength(1);
  }, 90_000);

  it('createImageFromVmAndWait (sdc-clients) resolves with the published image', async () => {
    const m = manifest();
    const image = await call<Obj>(imgapi, 'createImageFromVmAndWait', m, { vm_uuid: vm });
    expect(image).toMatchObject({ uuid: m.uuid, state: 'active' });
  }, 90_000);

  it("fails the job when the CN's machine_create_image task fails, leaving the image `failed` with the error (create-from-vm.js)", async () => {
    const daemon = await findDaemon(dc.dataDir);
    const fault = await daemon.call<{ id: string }>('POST', '/faults', { task: 'machine_create_image', error: 'zfs send failed: out of space' });
    try {
      const m = manifest();
      const [job] = await new Promise<[Obj, Obj]>((resolve, reject) =>
        imgapi.createImageFromVm(m, { vm_uuid: vm }, (err: Error | null, j: Obj, r: Obj) => (err ? reject(err) : resolve([j, r]))),
      );
      const done = await waitFor(async () => {
        const j = await call<Obj>(vmapi, 'getJob', job.job_uuid);
        return ['succeeded', 'failed'].includes(j.execution) ? j : undefined;
      }, 60_000);
      expect(done.execution).toBe('failed');
      expect(done.chain_results.at(-1)).toMatchObject({ name: 'cnapi.poll_task', error: expect.anything() });
      // update_with_error leaves the placeholder, `failed` with the job's error (String(err)).
      const image = await call<Obj>(imgapi, 'getImage', m.uuid);
      expect(image).toMatchObject({ uuid: m.uuid, state: 'failed', error: { message: 'Error: zfs send failed: out of space' } });
      // sdc-clients' createImageFromVmAndWait answers the task's error as an Error.
      const failed = await new Promise<Error | null>((resolve) =>
        imgapi.createImageFromVmAndWait(manifest(), { vm_uuid: vm }, (err: Error | null) => resolve(err)),
      );
      expect(failed?.message).toBe('zfs send failed: out of space');
    } finally {
      await daemon.call('DELETE', `/faults/${fault.id}`);
    }
    // The fault gone, the same VM publishes again.
    expect(await call<Obj>(imgapi, 'createImageFromVmAndWait', manifest(), { vm_uuid: vm })).toMatchObject({ state: 'active' });
  }, 120_000);

  it('answers bad input as IMGAPI does and stores no placeholder', async () => {
    const post = async (q: string, body: unknown): Promise<Obj> => {
      const r = await fetch(`${dc.urls.imgapi}/images?action=create-from-vm${q}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const m = manifest();
    expect(await post('', m)).toEqual({
      status: 422,
      body: { code: 'ValidationFailed', message: "missing 'vm_uuid' parameter", errors: [{ field: 'vm_uuid', code: 'MissingParameter' }] },
    });
    expect(await post('&vm_uuid=nope', m)).toMatchObject({
      status: 422,
      body: { code: 'InvalidParameter', message: "invalid 'vm_uuid': not a UUID: 'nope'" },
    });
    expect(await post(`&vm_uuid=${vm}&max_origin_depth=1`, m)).toMatchObject({
      status: 422,
      body: { code: 'InvalidParameter', message: 'max_origin_depth query param, 1, must be greater than 1' },
    });
    const missingVm = randomUUID();
    expect(await post(`&vm_uuid=${missingVm}`, m)).toMatchObject({
      status: 422,
      body: { code: 'InvalidParameter', message: `could not get VM "${missingVm}" details` },
    });
    expect(await post(`&vm_uuid=${vm}&account=${randomUUID()}`, m)).toMatchObject({
      status: 422,
      body: { code: 'InvalidParameter', message: expect.stringMatching(/^invalid owner: given owner/) },
    });
    expect((await callError(imgapi, 'getImage', m.uuid)).statusCode).toBe(404);
    // An existing image's uuid is refused, and the image stays as it was.
    expect(await post(`&vm_uuid=${vm}`, { ...m, uuid: base.uuid })).toMatchObject({
      status: 409,
      body: { code: 'ImageUuidAlreadyExists', message: `image uuid "${base.uuid}" already exists` },
    });
    expect(await call<Obj>(imgapi, 'getImage', base.uuid)).toMatchObject({ state: 'active', name: 'base-64-lts' });
  }, 60_000);
});
