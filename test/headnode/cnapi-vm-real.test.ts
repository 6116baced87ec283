/**
 * Issue 13, vmadm as a real CN: the dev headnode's CNAPI and a daemon with a real mock CN
 * (cn-agent and the file-backed vmadm), driven only through sdc-clients' CNAPI client
 * (its JSON client for the routes it has no method for). Upstream facts:
 * - sdc-cnapi lib/endpoints/vms.js (VmInfo passes machine_info's text on; VmVnc
 *   JSON.parses it and answers `{host, port}`), lib/models/vm.js (info task params);
 * - sdc-cn-agent lib/backends/smartos/tasks/machine_info.js, machine_create.js,
 *   machine_rollback_snapshot.js and node-vmadm lib/index.sunos.js;
 * - smartos-live src/vm/node_modules/VM.js (rollback_snapshot starts the VM, docker: true).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { startDevDc, type DevDc, type Obj } from './helpers/dev-dc.js';
import { call, raw, rawError, type Client } from './helpers/sdc-clients.js';

describe('dev CNAPI against a mock CN that behaves like a real one', () => {
  let dc: DevDc;
  let cnapi: Client;
  let server: Obj;
  let image: Obj;

  /** CNAPI VmCreate, then the task to its end; returns the VM as CNAPI's VmLoad shows it. */
  async function createVm(params: Obj): Promise<Obj> {
    const uuid = newUuid();
    const { id } = await call<{ id: string }>(cnapi, 'createVm', server.uuid, { uuid, ...params });
    const task = await call<Obj>(cnapi, 'waitTask', id, { timeout: 30 });
    expect(task.status, JSON.stringify(task.history?.at?.(-1))).toBe('complete');
    return call<Obj>(cnapi, 'getVm', server.uuid, uuid);
  }

  /** An asynchronous VM route, then its task to its end. */
  async function vmTask(method: 'post' | 'put' | 'del', route: string, body?: Obj): Promise<Obj> {
    const res = await raw<{ id: string }>(cnapi, method, route, body);
    return call<Obj>(cnapi, 'waitTask', res.body.id, { timeout: 30 });
  }

  beforeAll(async () => {
    dc = await startDevDc(1);
    cnapi = dc.cnapi;
    server = await call<Obj>(cnapi, 'getServer', dc.servers[0]);
    const images = (await (await fetch(`${dc.urls.imgapi}/images`)).json()) as Obj[];
    image = images[0]!;
  }, 120_000);

  afterAll(async () => {
    await dc?.close();
  }, 60_000);

  const bhyve = (extra: Obj = {}): Obj => ({
    brand: 'bhyve',
    ram: 1024,
    vcpus: 1,
    owner_uuid: newUuid(),
    disks: [{ image_uuid: image.uuid, image_size: 10240, boot: true, model: 'virtio' }],
    nics: [],
    ...extra,
  });
  const zone = (extra: Obj = {}): Obj => ({ brand: 'joyent-minimal', image_uuid: image.uuid, ram: 256, owner_uuid: newUuid(), nics: [], ...extra });

  it('GET .../vnc answers {host, port} of a bhyve VM from the JSON text machine_info returns', async () => {
    const vm = await createVm(bhyve({ vnc_port: 5911 }));
    const vnc = await raw<Obj>(cnapi, 'get', `/servers/${server.uuid}/vms/${vm.uuid}/vnc`);
    expect(vnc.statusCode).toBe(200);
    expect(vnc.body).toEqual({ host: server.sysinfo['Admin IP'], port: 5911 });
    // VmInfo hands on the text `vmadm info` printed, as a JSON string.
    const info = await raw<unknown>(cnapi, 'get', `/servers/${server.uuid}/vms/${vm.uuid}/info`);
    expect(typeof info.body).toBe('string');
    expect(JSON.parse(info.body as string)).toEqual({ vnc: { host: server.sysinfo['Admin IP'], port: 5911, display: 11 } });
  }, 60_000);

  it('GET .../vnc fails as the real CNAPI does for a zone (500) and a missing VM (404)', async () => {
    const vm = await createVm(zone());
    const err = await rawError(cnapi, 'get', `/servers/${server.uuid}/vms/${vm.uuid}/vnc`);
    expect(err.statusCode).toBe(500);
    expect(err.body?.code).toBe('InternalError');
    expect(err.body?.message).toContain('vmadm.info error: vmadm exited with code: 1 signal: null');
    const missing = newUuid();
    const nf = await rawError(cnapi, 'get', `/servers/${server.uuid}/vms/${missing}/vnc`);
    expect(nf.statusCode).toBe(404);
    expect(nf.body?.message).toBe(`VM ${missing} not found`);
  }, 60_000);

  it('a docker container keeps docker: true, its filesystems and its docker internal_metadata', async () => {
    const vm = await createVm(
      zone({
        brand: 'lx',
        kernel_version: '3.13.0',
        docker: true,
        filesystems: [{ source: '/zones/a/volumes/b', target: '/data', type: 'lofs', options: [] }],
        internal_metadata: { 'docker:cmd': '["sh"]', 'docker:entrypoint': '[]' },
      }),
    );
    expect(vm).toMatchObject({
      docker: true,
      filesystems: [{ source: '/zones/a/volumes/b', target: '/data', type: 'lofs', options: [] }],
      internal_metadata: { 'docker:cmd': '["sh"]', 'docker:entrypoint': '[]', 'docker:id': expect.stringMatching(/^[0-9a-f]{64}$/) },
      init_name: '/native/usr/vm/sbin/dockerinit',
    });
  }, 60_000);

  it('a snapshot rollback of a stopped VM (as VMAPI stops it first) ends with the VM running', async () => {
    const vm = await createVm(zone());
    const base = `/servers/${server.uuid}/vms/${vm.uuid}`;
    expect((await vmTask('put', `${base}/snapshots`, { snapshot_name: 'before' })).status).toBe('complete');
    expect((await vmTask('post', `${base}/stop`)).status).toBe('complete');
    expect((await call<Obj>(cnapi, 'getVm', server.uuid, vm.uuid)).state).toBe('stopped');
    expect((await vmTask('put', `${base}/snapshots/before/rollback`)).status).toBe('complete');
    expect(await call<Obj>(cnapi, 'getVm', server.uuid, vm.uuid)).toMatchObject({ state: 'running', autoboot: true });
    // Deleting a snapshot that does not exist is a failed task on a real CN.
    const del = await vmTask('del', `${base}/snapshots/nope`);
    expect(del.status).toBe('failure');
  }, 60_000);
});
