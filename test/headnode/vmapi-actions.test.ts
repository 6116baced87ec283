/**
 * The dev VMAPI's VM writes that sdc-vmapi's own tests (test/vms.full.test.js) exercise, black
 * box through sdc-clients' VMAPI class and plain HTTP, against the dev CNAPI and fake CNs:
 * a provision failing in its job (lib/workflows/provision.js: `force_provision_failure`, the
 * onerror clean-up and post-back), the metadata routes (lib/endpoints/metadata.js), CreateVm's
 * field checks (lib/common/validation.js, triton-tags), update_nics
 * (lib/workflows/update-nics.js), a `sync` action whose job fails (lib/common/util.js
 * waitForJob) and wf-api's answer for an unknown job.
 * Follows sdc-vmapi test/vms.full.test.js.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, callError, raw, rawError } from './helpers/sdc-clients.js';
import { action, EXTERNAL, IMAGE, OWNER, provision, startVmapiEnv, stopVmapiEnv, waitJob, type Env } from './helpers/vmapi-env.js';

type Obj = Record<string, any>;

describe('dev VMAPI writes as sdc-vmapi answers them', () => {
  let env: Env;

  beforeAll(async () => {
    env = await startVmapiEnv();
  });

  afterAll(async () => {
    await stopVmapiEnv(env);
  });

  it('fails a provision in its job, deletes its NICs, marks the VM failed and releases its ticket', async () => {
    const nicsBefore = env.peers.nics.size;
    const res = await raw<Obj>(env.vm, 'post', '/vms', {
      owner_uuid: OWNER, image_uuid: IMAGE, brand: 'joyent', ram: 128, networks: [EXTERNAL],
      internal_metadata: { force_provision_failure: true },
    });
    expect(res.statusCode).toBe(202);
    const job = await waitJob(env, res.body.job_uuid);
    expect(job.execution).toBe('failed');
    const last = job.chain_results[job.chain_results.length - 1];
    expect(last).toMatchObject({ name: 'cnapi.provision_vm', error: 'force_provision_failure set, failing' });
    expect(env.peers.nics.size).toBe(nicsBefore);
    const vm = await call<Obj>(env.vm, 'getVm', { uuid: res.body.vm_uuid });
    expect(vm.state).toBe('failed');
    const tickets = (await raw<Obj[]>(env.cn, 'get', `/servers/${vm.server_uuid}/tickets`)).body;
    expect(tickets.find((t) => t.id === res.body.vm_uuid)?.status).toBe('finished');
  });

  it('serves tags, customer and internal metadata under /vms/:uuid, writing through update jobs', async () => {
    const { vm_uuid } = await provision(env, { tags: { role: 'db', 'docker:label:com.docker.x': 'y' } });
    const path = `/vms/${vm_uuid}/tags`;
    expect((await raw<Obj>(env.vm, 'get', path)).body).toEqual({ role: 'db', 'docker:label:com.docker.x': 'y' });
    expect((await raw<Obj>(env.vm, 'get', `${path}/role`)).body).toBe('db');
    expect((await rawError(env.vm, 'get', `${path}/nope`)).body).toEqual({ code: 'ResourceNotFound', message: 'tag "nope" not found' });
    expect((await rawError(env.vm, 'get', `/vms/${vm_uuid}/colours`)).body).toEqual({ code: 'ResourceNotFound', message: 'Route does not exist' });

    const add = await raw<Obj>(env.vm, 'post', path, { tier: 'gold' });
    expect(add.statusCode).toBe(202);
    const job = await waitJob(env, add.body.job_uuid);
    expect(job.execution).toBe('succeeded');
    expect(job.params).toMatchObject({ task: 'update', subtask: 'metadata', payload: { set_tags: { tier: 'gold' } } });
    expect((await raw<Obj>(env.vm, 'get', `${path}/tier`)).body).toBe('gold');

    const docker = await rawError(env.vm, 'del', `${path}/docker:label:com.docker.x`);
    expect(docker.statusCode).toBe(409);
    expect(docker.body).toEqual({
      code: 'ValidationFailed',
      message: 'Invalid tag parameters',
      errors: [{ field: 'tags', code: 'Invalid', message: 'Special tag "docker:label:com.docker.x" may not be deleted' }],
    });
    const empty = await rawError(env.vm, 'post', `/vms/${vm_uuid}/customer_metadata`, {});
    expect(empty.body).toEqual({
      code: 'ValidationFailed',
      message: 'Invalid metadatum parameters',
      errors: [{ field: 'customer_metadata', code: 'Invalid', message: 'Invalid parameter' }],
    });
  });

  it('checks Triton tags, locality and firewall rules as CreateVm does', async () => {
    const base = { owner_uuid: OWNER, image_uuid: IMAGE, brand: 'joyent', ram: 128, networks: [EXTERNAL] };
    const expectOne = async (extra: Obj, field: string, message: string) => {
      const err = await callError(env.vm, 'createVm', { ...base, ...extra });
      expect(err.statusCode).toBe(409);
      expect(err.body).toEqual({ code: 'ValidationFailed', message: 'Invalid VM parameters', errors: [{ field, code: 'Invalid', message }] });
    };
    await expectOne({ tags: { 'triton.foo': true } }, 'tags', 'Unrecognized special triton tag "triton.foo"');
    await expectOne({ tags: { 'triton.cns.disable': 'true' } }, 'tags', 'Triton tag "triton.cns.disable" value must be a boolean: "true" (string)');
    await expectOne({ tags: { 'triton.cns.services': 'foo,$#foo.bar' } }, 'tags', 'invalid "triton.cns.services" tag: Expected DNS name but "$" found.');
    await expectOne({ locality: { near: 'asdasd' } }, 'locality', 'locality contains malformed UUID');
    await expectOne({ firewall_rules: [{ uuid: randomUUID() }] }, 'firewall_rules', 'Invalid rule: rule must be a string');
    await expectOne({ customer_metadata: { root_pw: 'x' } }, 'customer_metadata.root_pw', 'Forbidden Metadata Key');
  });

  it('updates NICs in NAPI and on the VM with update_nics', async () => {
    const { vm_uuid } = await provision(env);
    const vm = await call<Obj>(env.vm, 'getVm', { uuid: vm_uuid });
    const mac = vm.nics[0].mac as string;
    const job = await action(env, 'updateNics', { uuid: vm_uuid, nics: [{ mac, allow_ip_spoofing: true }] });
    expect(job.execution).toBe('succeeded');
    expect(job.name).toBe('update-nics-7.0.5');
    expect(job.chain_results.find((r: Obj) => r.name === 'napi.update_nics')?.result).toBe('Updated NAPI NICs');
    expect(env.peers.nics.get(mac.replace(/:/g, ''))?.allow_ip_spoofing).toBe(true);
    const bad = await rawError(env.vm, 'post', `/vms/${vm_uuid}?action=update_nics`, { nics: [{ mac, colour: 'red' }] });
    expect(bad.body).toEqual({
      code: 'ValidationFailed',
      message: 'Invalid VM update parameters',
      errors: [{ field: 'nics', code: 'Invalid', message: "'colour' is not a valid property to update" }],
    });
  });

  it('answers a sync action whose job fails with the failed step\'s error, and an unknown job as wf-api does', async () => {
    const { vm_uuid } = await provision(env);
    expect((await action(env, 'stopVm', { uuid: vm_uuid })).execution).toBe('succeeded');
    const again = await rawError(env.vm, 'post', `/vms/${vm_uuid}?action=stop&sync=true`, {});
    expect(again.statusCode).toBe(500);
    expect(again.body).toEqual({ code: 'Error', message: "Cannot stop a VM from a 'stopped' state" });
    const badSync = await rawError(env.vm, 'post', `/vms/${vm_uuid}?action=stop&sync=yes`, {});
    expect(badSync.body?.errors).toEqual([{ field: 'sync', code: 'Invalid', message: 'Invalid parameter' }]);
    const id = randomUUID();
    expect((await rawError(env.vm, 'get', `/jobs/${id}`)).body).toEqual({
      code: 'ResourceNotFound',
      message: `Job with uuid '${id}' does not exist`,
    });
  });

  it('refuses to migrate a core instance with 412 before anything else, as lib/vm-migration/migrate.js does', async () => {
    const { vm_uuid: core } = await provision(env, { tags: { smartdc_type: 'core', smartdc_role: 'assets' } });
    const migrate = (uuid: string, query: string) => rawError(env.vm, 'post', `/vms/${uuid}?action=migrate&${query}`, {});
    // sdc-vmapi test/vms.migrate.test.js bad_migrate_core_zone.
    const refused = await migrate(core, 'migration_action=begin');
    expect(refused.statusCode).toBe(412);
    expect(refused.body).toEqual({ code: 'PreconditionFailed', message: 'Cannot migrate a core instance' });
    expect((await migrate(core, 'migration_action=estimate')).statusCode).toBe(412);
    // validateMigrationBegin's earlier checks come first.
    expect((await migrate(core, 'migration_action=begin&override_uuid=nope')).body).toEqual({
      code: 'ValidationFailed',
      message: 'Invalid parameters: override_uuid (nope) is not a valid UUID',
      errors: [{ field: 'override_uuid', code: 'Invalid', message: 'Invalid UUID' }],
    });
    expect((await migrate(core, `migration_action=begin&owner_uuid=${OWNER}`)).body).toEqual({
      code: 'PreconditionFailed',
      message: 'User migration on this VM not allowed',
    });
    // Without a migration record, other actions find none; a bad action is refused first.
    expect((await migrate(core, 'migration_action=sync')).body).toEqual({ code: 'ResourceNotFound', message: 'migration not found' });
    expect((await migrate(core, 'migration_action=fly')).body).toEqual({ code: 'InvalidArgument', message: 'Invalid migration action' });
    // A NAT zone may move: the dev headnode then says it cannot.
    const { vm_uuid: nat } = await provision(env, { tags: { smartdc_type: 'core', smartdc_role: 'nat' } });
    expect((await migrate(nat, 'migration_action=begin')).statusCode).toBe(501);
  });
});
