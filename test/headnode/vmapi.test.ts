/**
 * The dev headnode's VMAPI, driven by sdc-clients' VMAPI class, with the real dev CNAPI
 * in front of recording fake CNs (a small stateful VM engine) and fake NAPI/IMGAPI peers.
 * Checks the VMAPI wire behaviour and that its jobs drive CNAPI and NAPI as VMAPI's
 * workflows do.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callError, raw, rawError, vmapiClient } from './helpers/sdc-clients.js';
import {
  action,
  ADMIN,
  EXTERNAL,
  IMAGE,
  IMAGE2,
  OWNER,
  provision,
  startServices,
  startVmapiEnv,
  stopServices,
  stopVmapiEnv,
  tasksOf,
  TINY,
  waitJob,
  type Env,
} from './helpers/vmapi-env.js';

describe('dev headnode VMAPI', () => {
  let env: Env;

  beforeAll(async () => {
    env = await startVmapiEnv();
  });

  afterAll(async () => {
    await stopVmapiEnv(env);
  });

  describe('provisioning', () => {
    it('provisions through CNAPI and NAPI and stores the running VM', async () => {
      const ensureBefore = tasksOf(env, 'image_ensure_present').length;
      const { vm_uuid, job } = await provision(env, { alias: 'web0', customer_metadata: { role: 'web' } });
      expect(job.execution).toBe('succeeded');
      expect(job.name).toBe('provision-8.2.4');
      expect(job.params.vm_uuid).toBe(vm_uuid);
      // The provision-8.2.4 chain of sdc-vmapi lib/workflows/provision.js, step for step.
      expect(job.chain_results.map((r: { name: string }) => r.name)).toEqual([
        'common.validate_params',
        'workflow.set_job_action',
        'imgapi.generate_passwords',
        'cnapi.acquire_fabric_nat_tickets',
        'napi.provision_fabric_nats',
        'cnapi.ensure_image',
        'cnapi.wait_task_ensure_image',
        'cnapi.wait_for_fabric_nat_provisions',
        'volapi.provision_nfs_volumes',
        'cnapi.wait_for_nfs_volumes_provisions',
        'cnapi.build_nfs_volumes_metadata',
        'prepare_payload',
        'cnapi.provision_vm',
        'cnapi.wait_task',
        'volapi.add_volumes_references',
        'vmapi.put_vm',
        'fwapi.update',
        'cnapi.release_vm_ticket',
        'cnapi.release_fabric_nat_tickets',
      ]);
      expect(job.chain_results.every((r: { error: string }) => r.error === '')).toBe(true);

      const vm = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid });
      expect(vm).toMatchObject({
        uuid: vm_uuid,
        alias: 'web0',
        state: 'running',
        owner_uuid: OWNER,
        image_uuid: IMAGE,
        brand: 'joyent-minimal',
        customer_metadata: { role: 'web' },
        max_physical_memory: 256,
      });
      expect(env.servers).toContain(vm.server_uuid);
      expect(vm.nics).toHaveLength(1);
      expect(vm.nics[0].ip).toMatch(/^10\.88\.88\.\d+$/);
      // VMAPI's full objects carry every always-present field.
      for (const k of ['destroyed', 'datasets', 'snapshots', 'zpool', 'tags', 'firewall_enabled']) expect(vm).toHaveProperty(k);

      // The NIC lives in NAPI, owned by the VM.
      const nic = env.peers.nics.get(vm.nics[0].mac.replace(/:/g, ''))!;
      expect(nic).toMatchObject({ belongs_to_type: 'zone', belongs_to_uuid: vm_uuid, owner_uuid: OWNER, cn_uuid: vm.server_uuid });

      // CNAPI got ensure-image, then machine_create with the provision payload.
      expect(tasksOf(env, 'image_ensure_present').length).toBe(ensureBefore + 1);
      const create = tasksOf(env, 'machine_create').find((r) => (r.body as any).params.uuid === vm_uuid)!;
      expect(create.headers['x-server-uuid']).toBe(vm.server_uuid);
      const params = (create.body as any).params;
      expect(params).toMatchObject({
        uuid: vm_uuid,
        server_uuid: vm.server_uuid,
        image_uuid: IMAGE,
        archive_on_delete: true,
        resolvers: ['8.8.8.8'],
        dataset_url_compression: 'gzip',
      });
      expect(params.nics[0].mac).toBe(vm.nics[0].mac);
      expect(params.dataset_url).toBe(`${env.peers.url}/images/${IMAGE}/file`);
    });

    it('answers createVm with 202, vm_uuid, job_uuid and the workflow-api header', async () => {
      const res = await raw<{ vm_uuid: string; job_uuid: string }>(env.vm, 'post', '/vms', {
        owner_uuid: OWNER,
        image_uuid: IMAGE,
        brand: 'joyent',
        ram: 128,
        networks: [{ name: 'external' }],
      });
      expect(res.statusCode).toBe(202);
      expect(Object.keys(res.body).sort()).toEqual(['job_uuid', 'vm_uuid']);
      // sdc-clients' createVmAndWait polls /jobs/:uuid at this address.
      expect(res.headers['workflow-api']).toBe(env.vmapi.url);
      const polled = await raw<{ uuid: string }>(vmapiClient(res.headers['workflow-api'] as string), 'get', `/jobs/${res.body.job_uuid}`);
      expect(polled.body.uuid).toBe(res.body.job_uuid);
      const job = await waitJob(env, res.body.job_uuid);
      expect(job.execution).toBe('succeeded');
    });

    // sdc-vmapi lib/endpoints/vms.js allocateServer: the server is chosen under CNAPI's global
    // allocation ticket, and a `vm`/`provision` ticket on that server (with the VM's resources in
    // `extra`) stays open until the provision job's cnapi.release_vm_ticket.
    it('takes the allocation ticket and a provision ticket on the chosen server, released by the job', async () => {
      const { vm_uuid, job } = await provision(env, { ram: 512 });
      const server = (await call<{ server_uuid: string }>(env.vm, 'getVm', { uuid: vm_uuid })).server_uuid;
      const tickets = (await raw<Record<string, any>[]>(env.cn, 'get', `/servers/${server}/tickets`)).body;
      const mine = tickets.find((t) => t.id === vm_uuid)!;
      expect(mine).toMatchObject({ scope: 'vm', action: 'provision', status: 'finished', server_uuid: server });
      expect(mine.extra).toMatchObject({ owner_uuid: OWNER, max_physical_memory: 512, brand: 'joyent-minimal' });
      expect(job.params.vmTicket).toMatchObject({ uuid: mine.uuid, scope: 'vm', id: vm_uuid });
      const alloc = (await raw<Record<string, any>[]>(env.cn, 'get', '/servers/default/tickets')).body;
      expect(alloc.length).toBeGreaterThan(0);
      expect(alloc.every((t) => t.scope === 'vm-allocate' && t.id === 'global' && t.status === 'finished')).toBe(true);
    });

    // DAPI counts the VMs of open provision tickets (sdc-designation calculate-ticketed-vms): a
    // server whose RAM an in-flight provision holds is not chosen.
    it('places a provision away from a server an open provision ticket fills', async () => {
      const [full, free] = env.servers as [string, string];
      const ticket = await call<{ uuid: string }>(env.cn, 'waitlistTicketCreate', full, {
        scope: 'vm', id: randomUUID(), action: 'provision', expires_at: new Date(Date.now() + 60_000).toISOString(),
        extra: { owner_uuid: OWNER, max_physical_memory: 6000, cpu_cap: 100, quota: 10, brand: 'joyent' },
      });
      try {
        const { vm_uuid } = await provision(env, { ram: 2048 });
        expect((await call<{ server_uuid: string }>(env.vm, 'getVm', { uuid: vm_uuid })).server_uuid).toBe(free);
      } finally {
        await call(env.cn, 'waitlistTicketRelease', ticket.uuid);
      }
    });

    // sdc-vmapi lib/endpoints/vms.js createVm: DAPI runs inside CreateVm, so "no server" is the
    // HTTP answer (CNAPI's error relayed), and both tickets are released.
    it("answers a provision no server can take with CNAPI's 409, leaving no NIC or open ticket", async () => {
      const nicsBefore = env.peers.nics.size;
      const err = await callError(env.vm, 'createVm', {
        owner_uuid: OWNER, image_uuid: IMAGE, brand: 'joyent', ram: 128, networks: [EXTERNAL],
        internal_metadata: { force_designation_failure: true },
      });
      expect(err.statusCode).toBe(409);
      expect(err.body).toEqual({ code: 'NoAllocatableServersError', message: 'No compute resources available: forced failure' });
      expect(env.peers.nics.size).toBe(nicsBefore);
      const alloc = (await raw<Record<string, any>[]>(env.cn, 'get', '/servers/default/tickets')).body;
      expect(alloc.every((t) => t.status === 'finished')).toBe(true);
    });

    it('refuses invalid provisions with ValidationFailed naming each field', async () => {
      // sdc-vmapi lib/common/validation.js validateCreateVmParams: every field, in VM_FIELDS order.
      const err = await callError(env.vm, 'createVm', { brand: 'zebra', owner_uuid: 'nobody' });
      expect(err.statusCode).toBe(409);
      expect(err.body).toEqual({
        code: 'ValidationFailed',
        message: 'Invalid VM parameters',
        errors: [
          { field: 'brand', code: 'Invalid', message: 'Must be one of: bhyve, joyent, joyent-minimal, kvm, lx' },
          { field: 'networks', code: 'MissingParameter' },
          { field: 'owner_uuid', code: 'Invalid', message: 'Invalid UUID' },
          { field: 'ram', code: 'MissingParameter' },
          { field: 'image_uuid', code: 'MissingParameter' },
        ],
      });

      const noNet = await callError(env.vm, 'createVm', { owner_uuid: OWNER, image_uuid: IMAGE, brand: 'joyent', ram: 128 });
      expect(noNet.body?.errors).toEqual([{ field: 'networks', code: 'MissingParameter' }]);

      const noImage = await callError(env.vm, 'createVm', {
        owner_uuid: OWNER, image_uuid: randomUUID(), brand: 'joyent', ram: 128, networks: [EXTERNAL],
      });
      expect(noImage.statusCode).toBe(409);
      expect(noImage.body?.errors?.[0]?.field).toBe('image_uuid');

      const badNet = await callError(env.vm, 'createVm', {
        owner_uuid: OWNER, image_uuid: IMAGE, brand: 'joyent', ram: 128, networks: [{ name: 'nope' }],
      });
      expect(badNet.statusCode).toBe(422);
      expect(badNet.body).toEqual({ code: 'UnprocessableEntityError', message: 'No such Network or Pool with id/name: "nope"' });

      const { vm_uuid } = await provision(env, { alias: 'unique1' });
      const dup = await callError(env.vm, 'createVm', {
        owner_uuid: OWNER, image_uuid: IMAGE, brand: 'joyent', ram: 128, networks: [EXTERNAL], alias: 'unique1', uuid: vm_uuid,
      });
      expect(dup.body?.errors?.map((e) => `${e.field}:${e.code}`).sort()).toEqual(['alias:Duplicate', 'uuid:Duplicate']);
    });

    it('fails a provision when the network has no free IP, cleans up and marks the VM failed', async () => {
      const first = await provision(env, { networks: [{ uuid: TINY }] });
      expect(first.job.execution).toBe('succeeded');
      const nicsBefore = env.peers.nics.size;
      const err = await callError(env.vm, 'createVm', {
        owner_uuid: OWNER, image_uuid: IMAGE, brand: 'joyent', ram: 128, networks: [{ uuid: EXTERNAL }, { uuid: TINY }],
      });
      expect(err.statusCode).toBe(507);
      expect(err.body?.code).toBe('SubnetFull');
      expect(env.peers.nics.size).toBe(nicsBefore);
      const failed = await call<unknown[]>(env.vm, 'listVms', { owner_uuid: OWNER, state: 'active' });
      expect(failed.length).toBeGreaterThan(0);
    });
  });

  describe('actions', () => {
    it('stops, starts and reboots a VM through jobs that drive CNAPI', async () => {
      const { vm_uuid } = await provision(env);
      const stop = await action(env, 'stopVm', { uuid: vm_uuid });
      expect(stop.execution).toBe('succeeded');
      expect(stop.name).toBe('stop-7.0.8');
      expect((await call<{ state: string }>(env.vm, 'getVm', { uuid: vm_uuid })).state).toBe('stopped');

      // VMAPI's ensure_vm_state: stopping a stopped VM fails the job (unless idempotent).
      const again = await action(env, 'stopVm', { uuid: vm_uuid });
      expect(again.execution).toBe('failed');
      const last = again.chain_results[again.chain_results.length - 1];
      expect(last.name).toBe('common.ensure_vm_state');
      expect(last.error.message).toBe("Cannot stop a VM from a 'stopped' state");
      expect((await action(env, 'stopVm', { uuid: vm_uuid, idempotent: true })).execution).toBe('succeeded');

      expect((await action(env, 'startVm', { uuid: vm_uuid })).execution).toBe('succeeded');
      expect((await call<{ state: string }>(env.vm, 'getVm', { uuid: vm_uuid })).state).toBe('running');
      const start = tasksOf(env, 'machine_boot').pop()!;
      expect((start.body as any).params).toMatchObject({ uuid: vm_uuid, task: 'start', vm_uuid });

      expect((await action(env, 'rebootVm', { uuid: vm_uuid })).execution).toBe('succeeded');
      expect((await action(env, 'killVm', { uuid: vm_uuid, signal: 'SIGKILL' })).execution).toBe('succeeded');
      expect((await call<{ state: string }>(env.vm, 'getVm', { uuid: vm_uuid })).state).toBe('stopped');
      const bad = await callError(env.vm, 'killVm', { uuid: vm_uuid, signal: 'SIGNOPE' });
      expect(bad.statusCode).toBe(409);
    });

    it('updates metadata as set/remove diffs', async () => {
      const { vm_uuid } = await provision(env, { customer_metadata: { a: '1', b: '2' } });
      const job = await action(env, 'updateVm', { uuid: vm_uuid, payload: { customer_metadata: { a: '1', c: '3' } } });
      expect(job.execution).toBe('succeeded');
      expect(job.params.payload).toEqual({ set_customer_metadata: { a: '1', c: '3' }, remove_customer_metadata: ['b'] });
      const vm = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid });
      expect(vm.customer_metadata).toEqual({ a: '1', c: '3' });
      const none = await callError(env.vm, 'updateVm', { uuid: vm_uuid, payload: {} });
      expect(none.statusCode).toBe(409);
      expect(none.body?.message).toBe('No VM parameters provided');
    });

    it('creates, rolls back and deletes snapshots', async () => {
      const { vm_uuid } = await provision(env);
      expect((await action(env, 'snapshotVm', { uuid: vm_uuid, name: 'snap1' })).execution).toBe('succeeded');
      let vm = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid });
      expect(vm.snapshots.map((s: { name: string }) => s.name)).toEqual(['snap1']);

      const rb = await action(env, 'rollbackVm', { uuid: vm_uuid, name: 'snap1' });
      expect(rb.execution).toBe('succeeded');
      expect(rb.name).toBe('rollback-7.0.5');
      // The running VM was stopped first, as the rollback workflow does.
      const names = rb.chain_results.map((r: { name: string }) => r.name);
      expect(names).toEqual(expect.arrayContaining(['cnapi.stop_vm', 'cnapi.rollback_vm']));
      const rollback = tasksOf(env, 'machine_rollback_snapshot').pop()!;
      expect((rollback.body as any).params).toMatchObject({ uuid: vm_uuid, snapshot_name: 'snap1' });

      expect((await action(env, 'deleteSnapshot', { uuid: vm_uuid, name: 'snap1' })).execution).toBe('succeeded');
      vm = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid });
      expect(vm.snapshots).toEqual([]);
    });

    it('adds and removes NICs with NAPI', async () => {
      const { vm_uuid } = await provision(env);
      const add = await action(env, 'addNics', { uuid: vm_uuid, networks: [{ uuid: ADMIN }] });
      expect(add.execution).toBe('succeeded');
      let vm = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid });
      expect(vm.nics).toHaveLength(2);
      const adminNic = vm.nics.find((n: { ip: string }) => n.ip.startsWith('10.99.99.'));
      expect(env.peers.nics.get(adminNic.mac.replace(/:/g, ''))).toMatchObject({ belongs_to_uuid: vm_uuid });

      const rm = await action(env, 'removeNics', { uuid: vm_uuid, macs: [adminNic.mac] });
      expect(rm.execution).toBe('succeeded');
      vm = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid });
      expect(vm.nics).toHaveLength(1);
      expect(env.peers.nics.has(adminNic.mac.replace(/:/g, ''))).toBe(false);
    });

    it('reprovisions to another image', async () => {
      const { vm_uuid } = await provision(env);
      const job = await action(env, 'reprovisionVm', { uuid: vm_uuid, image_uuid: IMAGE2 });
      expect(job.execution).toBe('succeeded');
      expect((await call<{ image_uuid: string }>(env.vm, 'getVm', { uuid: vm_uuid })).image_uuid).toBe(IMAGE2);
    });

    // sdc-vmapi lib/workflows/destroy.js: the job deletes the VM on its CN and its NICs; VMAPI learns
    // the VM is gone from vm-agent, or from a `GET ?sync=true` (there is no vm-agent here).
    it('destroys a VM, frees its NICs, and shows it destroyed once the CN is asked', async () => {
      const { vm_uuid } = await provision(env);
      const vm = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid });
      const job = await action(env, 'deleteVm', { uuid: vm_uuid });
      expect(job.execution).toBe('succeeded');
      expect(job.chain_results.find((r: { name: string }) => r.name === 'vmapi.refresh_vm').result).toBe(
        'markAsFailedOnError set, not doing sync GET',
      );
      const destroyed = await call<Record<string, any>>(env.vm, 'getVm', { uuid: vm_uuid, sync: true });
      expect(destroyed.state).toBe('destroyed');
      expect(typeof destroyed.destroyed).toBe('string');
      expect(env.peers.nics.has(vm.nics[0].mac.replace(/:/g, ''))).toBe(false);
      const del = tasksOf(env, 'machine_destroy').pop()!;
      expect((del.body as any).params).toEqual({ server_uuid: vm.server_uuid, uuid: vm_uuid, jobid: job.uuid });
      const active = await call<{ uuid: string }[]>(env.vm, 'listVms', { owner_uuid: OWNER, state: 'active' });
      expect(active.map((v) => v.uuid)).not.toContain(vm_uuid);
    });

    it('lists a VM\'s jobs newest first and validates actions', async () => {
      const { vm_uuid, job_uuid } = await provision(env);
      await action(env, 'stopVm', { uuid: vm_uuid });
      const jobs = await call<{ uuid: string; name: string }[]>(env.vm, 'listJobs', { vm_uuid });
      expect(jobs.map((j) => j.name)).toEqual(['stop-7.0.8', 'provision-8.2.4']);
      expect(jobs[1]!.uuid).toBe(job_uuid);
      const viaVm = await raw<{ uuid: string }[]>(env.vm, 'get', `/vms/${vm_uuid}/jobs`);
      expect(viaVm.body.map((j) => j.uuid)).toEqual(jobs.map((j) => j.uuid));

      const noAction = await rawError(env.vm, 'post', `/vms/${vm_uuid}`, {});
      expect(noAction.body).toMatchObject({ code: 'ValidationFailed', errors: [{ field: 'action', code: 'MissingParameter' }] });
      const badAction = await rawError(env.vm, 'post', `/vms/${vm_uuid}?action=fly`, {});
      expect(badAction.body?.errors?.[0]).toMatchObject({ field: 'action', code: 'Invalid' });
      expect((await rawError(env.vm, 'get', '/jobs/' + randomUUID())).statusCode).toBe(404);
    });
  });

  describe('reads and vm-agent writes', () => {
    it("serves CNAPI's deprecated VmList from VMAPI", async () => {
      const { vm_uuid } = await provision(env);
      const server = (await call<{ server_uuid: string }>(env.vm, 'getVm', { uuid: vm_uuid })).server_uuid;
      const res = await raw<Record<string, unknown>[]>(env.cn, 'get', `/servers/${server}/vms`);
      const mine = res.body.find((v) => v.uuid === vm_uuid)!;
      expect(Object.keys(mine).sort()).toEqual(
        ['brand', 'cpu_cap', 'last_modified', 'max_physical_memory', 'owner_uuid', 'quota', 'state', 'uuid', 'zone_state'],
      );
      const onServer = await call<{ uuid: string }[]>(env.vm, 'listVms', { server_uuid: server });
      expect(res.body.map((v) => v.uuid).sort()).toEqual(onServer.map((v) => v.uuid).sort());
    });

    it('answers 404 "VM not found" and 409 for a bad uuid', async () => {
      const missing = await callError(env.vm, 'getVm', { uuid: randomUUID() });
      expect(missing.statusCode).toBe(404);
      expect(missing.body).toEqual({ code: 'ResourceNotFound', message: 'VM not found' });
      const bad = await rawError(env.vm, 'get', '/vms/not-a-uuid');
      expect(bad.statusCode).toBe(409);
      expect(bad.body?.code).toBe('ValidationFailed');
    });

    it('reloads a VM from its CN with sync=true', async () => {
      const { vm_uuid } = await provision(env);
      const server = (await call<{ server_uuid: string }>(env.vm, 'getVm', { uuid: vm_uuid })).server_uuid;
      const agent = env.agents[env.servers.indexOf(server)]!;
      agent.vms.get(vm_uuid)!.alias = 'renamed-on-cn';
      expect((await call<{ alias?: string }>(env.vm, 'getVm', { uuid: vm_uuid })).alias).not.toBe('renamed-on-cn');
      // VMAPI answers the sync request with the VM it had, and stores the CN's copy (vms.js getVm).
      expect((await call<{ alias: string }>(env.vm, 'getVm', { uuid: vm_uuid, sync: true })).alias).not.toBe('renamed-on-cn');
      expect((await call<{ alias: string }>(env.vm, 'getVm', { uuid: vm_uuid })).alias).toBe('renamed-on-cn');
      agent.vms.delete(vm_uuid);
      expect((await call<{ state: string }>(env.vm, 'getVm', { uuid: vm_uuid, sync: true })).state).toBe('destroyed');
    });

    it('stores vm-agent\'s PUT /vms and PUT /vms/:uuid', async () => {
      const server = randomUUID();
      const a = randomUUID();
      const b = randomUUID();
      const vmObj = (uuid: string, state: string) => ({
        uuid, brand: 'joyent', state, zone_state: state, owner_uuid: OWNER, server_uuid: server,
        max_physical_memory: 64, quota: 5, alias: `agent-${uuid.slice(0, 4)}`, last_modified: new Date().toISOString(),
      });
      const put = await raw(env.vm, 'put', `/vms?server_uuid=${server}`, { vms: { [a]: vmObj(a, 'running'), [b]: vmObj(b, 'stopped') } });
      expect(put.statusCode).toBe(200);
      const onServer = await call<{ uuid: string; state: string }[]>(env.vm, 'listVms', { server_uuid: server });
      expect(onServer.map((v) => v.uuid).sort()).toEqual([a, b].sort());
      const one = await raw<Record<string, unknown>>(env.vm, 'put', `/vms/${a}`, vmObj(a, 'destroyed'));
      expect(one.body.state).toBe('destroyed');
      expect((await call<{ state: string }>(env.vm, 'getVm', { uuid: a })).state).toBe('destroyed');

      const noServer = await rawError(env.vm, 'put', '/vms', { vms: {} });
      expect(noServer.body).toMatchObject({ code: 'ValidationFailed', errors: [{ field: 'server_uuid', code: 'MissingParameter' }] });
      const noVms = await rawError(env.vm, 'put', `/vms?server_uuid=${server}`, {});
      expect(noVms.body?.errors?.[0]?.field).toBe('vms');
    });

    it('filters, pages and counts ListVms like VMAPI', async () => {
      const server = randomUUID();
      const owner = randomUUID();
      const vms: Record<string, unknown> = {};
      const uuids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const u = randomUUID();
        uuids.push(u);
        vms[u] = {
          uuid: u, brand: i % 2 ? 'joyent' : 'lx', state: i === 6 ? 'failed' : i % 3 ? 'running' : 'stopped',
          owner_uuid: owner, server_uuid: server, alias: `pg-${i}`, max_physical_memory: 128 * (i + 1),
        };
      }
      await raw(env.vm, 'put', `/vms?server_uuid=${server}`, { vms });
      const all = await call<{ uuid: string }[]>(env.vm, 'listVms', { owner_uuid: owner });
      expect(all.map((v) => v.uuid)).toEqual([...uuids].sort().reverse());
      const active = await call<unknown[]>(env.vm, 'listVms', { owner_uuid: owner, state: 'active' });
      expect(active).toHaveLength(6);
      const running = await call<{ state: string }[]>(env.vm, 'listVms', { owner_uuid: owner, state: 'running' });
      expect(running.every((v) => v.state === 'running')).toBe(true);
      expect((await call<unknown[]>(env.vm, 'listVms', { owner_uuid: owner, brand: 'lx' })).length).toBe(4);
      expect((await call<unknown[]>(env.vm, 'listVms', { owner_uuid: owner, alias: 'pg-' })).length).toBe(7);
      expect((await call<unknown[]>(env.vm, 'listVms', { owner_uuid: owner, uuid: uuids[3] })).length).toBe(1);

      const page = await raw<{ uuid: string }[]>(env.vm, 'get', `/vms?owner_uuid=${owner}&limit=3&offset=2`);
      expect(page.body.map((v) => v.uuid)).toEqual(all.slice(2, 5).map((v) => v.uuid));
      const fields = await raw<Record<string, unknown>[]>(env.vm, 'get', `/vms?owner_uuid=${owner}&limit=1&fields=uuid,state`);
      expect(Object.keys(fields.body[0]!).sort()).toEqual(['state', 'uuid']);

      const bad = await callError(env.vm, 'listVms', { owner_uuid: owner, colour: 'red' });
      expect(bad.statusCode).toBe(409);
      expect(bad.body?.errors?.[0]).toMatchObject({ field: 'colour', code: 'Invalid' });
      expect((await callError(env.vm, 'listVms', { state: 'sleeping' })).statusCode).toBe(409);
      expect((await rawError(env.vm, 'get', '/vms?limit=1001')).statusCode).toBe(409);
    });
  });

  describe('persistence', () => {
    it('keeps VMs and jobs across a restart', async () => {
      const { vm_uuid, job_uuid } = await provision(env);
      await stopServices(env);
      await startServices(env);
      expect((await call<{ state: string }>(env.vm, 'getVm', { uuid: vm_uuid })).state).toBe('running');
      expect((await call<{ execution: string }>(env.vm, 'getJob', job_uuid)).execution).toBe('succeeded');
      // And the restarted VMAPI/CNAPI still drive the CN.
      expect((await action(env, 'stopVm', { uuid: vm_uuid })).execution).toBe('succeeded');
    });
  });
});
