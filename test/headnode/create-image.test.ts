/**
 * Image creation from a VM, end to end, the way IMGAPI's create-from-vm workflow drives it
 * (sdc-imgapi lib/workflows/create-from-vm.js `queueCreateFromVmTask` and `pollTask`):
 * sdc-clients' CNAPI posts `POST /servers/:s/vms/:uuid/images` with
 * {jobid, compression, imgapi_url, incremental, manifest, prepare_image_script} to the dev
 * headnode's CNAPI (sdc-cnapi lib/endpoints/vms.js VmImagesCreate), whose
 * `machine_create_image` task runs on a mock CN (sdc-cn-agent lib/backends/smartos/tasks/
 * machine_create_image.js, imgadm.js) and publishes to the dev IMGAPI as `imgadm create
 * --publish` does (smartos-live src/img/lib/imgadm.js createImage / publishImage).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { call, callError, type Client } from './helpers/sdc-clients.js';
import { cnapiTask, startDevDc, taskError, type DevDc, type Obj } from './helpers/dev-dc.js';

const require = createRequire(import.meta.url);
const { IMGAPI } = require('sdc-clients') as { IMGAPI: new (o: object) => Client };

const OWNER = '5d2b3c8e-6a41-4f0c-9b7e-2c1d0e9f8a7b';

describe('create an image from a VM through CNAPI (machine_create_image)', () => {
  let dc: DevDc;
  let imgapi: Client;
  let server: string;
  let base: Obj;
  let vm: string;

  const vmLoad = (): Promise<Obj> => call<Obj>(dc.cnapi, 'getVm', server, vm);

  /** The payload the create-from-vm workflow sends. */
  const imagePayload = (manifest: Obj, extra: Obj = {}): Obj => ({
    jobid: randomUUID(),
    compression: 'gzip',
    imgapi_url: dc.urls.imgapi,
    incremental: false,
    manifest,
    ...extra,
  });

  beforeAll(async () => {
    dc = await startDevDc(1);
    server = dc.servers[0]!;
    imgapi = new IMGAPI({ url: dc.urls.imgapi, agent: false, log: createQuietLogger('sdc-imgapi') });
    [base] = await call<Obj[]>(imgapi, 'listImages', { name: 'base-64-lts' });
    vm = randomUUID();
    const created = await cnapiTask(dc.cnapi, `/servers/${server}/vms`, {
      uuid: vm,
      owner_uuid: OWNER,
      brand: 'joyent-minimal',
      image_uuid: base!.uuid,
      ram: 256,
      quota: 10,
    });
    expect(created.status, JSON.stringify(created.history)).toBe('complete');
  }, 120_000);

  afterAll(async () => {
    imgapi?.client?.close?.();
    imgapi?.rawClient?.close?.();
    await dc?.close();
  }, 60_000);

  it('refuses a running VM without a prepare-image script (imgadm VmNotStopped) and publishes nothing', async () => {
    expect((await vmLoad()).state).toBe('running');
    const manifest = { uuid: randomUUID(), owner: OWNER, name: 'refused', version: '1.0.0' };
    const task = await cnapiTask(dc.cnapi, `/servers/${server}/vms/${vm}/images`, imagePayload(manifest));
    expect(task.status).toBe('failure');
    // The workflow's setErrorObject parses the JSON that imgadm -E gave the task.
    const error = JSON.parse(taskError(task)!);
    expect(error).toMatchObject({ code: 'VmNotStopped', message: `vm "${vm}" is not stopped` });
    const missing = await callError(imgapi, 'getImage', manifest.uuid);
    expect(missing.statusCode).toBe(404);
  }, 60_000);

  it('publishes a stopped VM as an active image with the given owner, name and version', async () => {
    const stopped = await cnapiTask(dc.cnapi, `/servers/${server}/vms/${vm}/stop`, {});
    expect(stopped.status).toBe('complete');
    const manifest = { uuid: randomUUID(), owner: OWNER, name: 'my-web-image', version: '1.2.3', description: 'made by a test' };
    const task = await cnapiTask(dc.cnapi, `/servers/${server}/vms/${vm}/images`, imagePayload(manifest));
    expect(task.status, taskError(task)).toBe('complete');

    const image = await call<Obj>(imgapi, 'getImage', manifest.uuid);
    expect(image).toMatchObject({
      uuid: manifest.uuid,
      owner: OWNER,
      name: 'my-web-image',
      version: '1.2.3',
      description: 'made by a test',
      state: 'active',
      // Inherited from the origin image, as imgadm create does.
      type: base.type,
      os: base.os,
    });
    expect(image.origin).toBeUndefined();
    const sysinfo = (await call<Obj>(dc.cnapi, 'getServer', server)).sysinfo as Obj;
    expect(image.requirements.min_platform).toEqual({ [sysinfo['SDC Version']]: sysinfo['Live Image'] });
    expect(Date.parse(image.published_at)).toBeGreaterThan(0);
    const listed = await call<Obj[]>(imgapi, 'listImages', { owner: OWNER });
    expect(listed.map((i) => i.uuid)).toContain(manifest.uuid);

    // The file IMGAPI holds is the one the manifest describes.
    const chunks: Buffer[] = [];
    const stream = await call<NodeJS.ReadableStream>(imgapi, 'getImageFileStream', manifest.uuid);
    for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
    const data = Buffer.concat(chunks);
    expect(image.files).toEqual([{ sha1: createHash('sha1').update(data).digest('hex'), size: data.length, compression: 'gzip' }]);
    expect(data.length).toBeGreaterThan(100_000);
    expect(data.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect((await vmLoad()).state).toBe('stopped');
  }, 60_000);

  it('makes an incremental image of a running VM with a prepare-image script; the VM runs again after', async () => {
    const started = await cnapiTask(dc.cnapi, `/servers/${server}/vms/${vm}/start`, {});
    expect(started.status).toBe('complete');
    const before = await vmLoad();
    const manifest = { uuid: randomUUID(), owner: OWNER, name: 'my-web-image', version: '1.2.4' };
    const task = await cnapiTask(
      dc.cnapi,
      `/servers/${server}/vms/${vm}/images`,
      imagePayload(manifest, { incremental: true, prepare_image_script: '#!/bin/sh\nexit 0\n' }),
    );
    expect(task.status, taskError(task)).toBe('complete');
    const image = await call<Obj>(imgapi, 'getImage', manifest.uuid);
    expect(image).toMatchObject({ state: 'active', origin: base.uuid, name: 'my-web-image', version: '1.2.4' });
    const after = await vmLoad();
    expect(after.state).toBe('running');
    // It was stopped for the snapshot and started again.
    expect(after.boot_timestamp).not.toBe(before.boot_timestamp);
  }, 60_000);

  it('fails the way imgadm does for a bad compression and for IMGAPI refusing the manifest', async () => {
    await cnapiTask(dc.cnapi, `/servers/${server}/vms/${vm}/stop`, {});
    const badCompression = await cnapiTask(
      dc.cnapi,
      `/servers/${server}/vms/${vm}/images`,
      imagePayload({ uuid: randomUUID(), owner: OWNER, name: 'x', version: '1' }, { compression: 'zip' }),
    );
    expect(badCompression.status).toBe('failure');
    expect(JSON.parse(taskError(badCompression)!)).toMatchObject({ code: 'Usage' });

    // A uuid IMGAPI already has: the import is refused and nothing is left behind.
    const dup = await cnapiTask(
      dc.cnapi,
      `/servers/${server}/vms/${vm}/images`,
      imagePayload({ uuid: base.uuid, owner: OWNER, name: 'dup', version: '1' }),
    );
    expect(dup.status).toBe('failure');
    expect(JSON.parse(taskError(dup)!)).toMatchObject({ code: 'ImageUuidAlreadyExists' });
    expect((await call<Obj>(imgapi, 'getImage', base.uuid)).name).toBe('base-64-lts');

    // CNAPI checks its own parameters before any task is sent.
    const noManifest = await new Promise<Obj>((resolve) => {
      dc.cnapi.post(`/servers/${server}/vms/${vm}/images`, { compression: 'gzip', imgapi_url: dc.urls.imgapi }, (err: Obj) =>
        resolve(err),
      );
    });
    // sdc-cnapi lib/validation/endpoints.js sends InvalidParameters with status 500.
    expect(noManifest.statusCode).toBe(500);
    expect(noManifest.body.errors.map((e: Obj) => e.field)).toEqual(['manifest']);
  }, 60_000);
});
