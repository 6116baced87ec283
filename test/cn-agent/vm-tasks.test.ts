/**
 * The machine_* tasks over HTTP against the real file-backed vmadm, checked for what VMAPI's
 * workflows and CNAPI read: `{vm}` with the full VM, the real error messages and restCodes,
 * idempotency, and the real CN behaviour where the original dummy fell short (NIC gateways
 * kept, missing nics allowed, include_dni honoured, machine_kill present, machine_update
 * answering with the VM after its reboot). The original dummy vmadm reads what we wrote.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { Harness, history, listTree, postTask, provisionParams, type TestCn } from './helpers.js';

const require = createRequire(import.meta.url);
const DummyVmadm = require('vmadm/lib/index.dummy.js');

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('machine_* tasks', () => {
  let h: Harness;
  let cn: TestCn;

  beforeAll(async () => {
    h = await Harness.create();
    cn = await h.addCn();
  });
  afterAll(async () => {
    await h.close();
  });

  async function create(overrides: Record<string, unknown> = {}) {
    const params = provisionParams(cn.uuid, overrides);
    const r = await postTask(cn, 'machine_create', params);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { params, vm: r.body.vm };
  }

  describe('machine_create', () => {
    it('creates the VM and answers {vm} with the full loaded VM', async () => {
      const dirtyBefore = cn.hooks.statusDirtyCount;
      const { params, vm } = await create();
      expect(vm).toMatchObject({
        uuid: params.uuid,
        brand: 'joyent-minimal',
        alias: 'test-vm',
        owner_uuid: params.owner_uuid,
        image_uuid: params.image_uuid,
        state: 'running',
        zone_state: 'running',
        autoboot: true,
        server_uuid: cn.uuid,
        datacenter_name: 'coal',
        zonename: params.uuid,
        zonepath: `/zones/${params.uuid}`,
        tags: { role: 'test' },
        max_physical_memory: 256,
        quota: 10,
      });
      expect(typeof vm.last_modified).toBe('string');
      expect(typeof vm.create_timestamp).toBe('string');
      expect(cn.cn.vms.get(params.uuid as string)).toBeDefined();
      // Status reports follow VM changes.
      expect(cn.hooks.statusDirtyCount).toBeGreaterThan(dirtyBefore);
    });

    it("keeps NIC gateway/gateways/ips and the payload's firewall_enabled and zfs_io_priority", async () => {
      const { vm } = await create();
      expect(vm.nics).toHaveLength(1);
      const nic = vm.nics[0];
      expect(nic).toMatchObject({
        mac: '90:b8:d0:2f:0a:11',
        ip: '10.88.88.6',
        ips: ['10.88.88.6/24'],
        gateway: '10.88.88.1',
        gateways: ['10.88.88.1'],
        netmask: '255.255.255.0',
        nic_tag: 'external',
        vlan_id: 0,
        mtu: 1500,
        primary: true,
        network_uuid: 'c4a1b4c6-5f7e-4a9a-9b39-6a4b0a4c0d11',
      });
      // NAPI's bookkeeping is not vmadm's.
      for (const k of ['belongs_to_type', 'belongs_to_uuid', 'owner_uuid', 'state', 'resolvers', 'created_timestamp']) {
        expect(nic).not.toHaveProperty(k);
      }
      expect(vm.firewall_enabled).toBe(true);
      expect(vm.zfs_io_priority).toBe(50);
      expect(vm).not.toHaveProperty('dataset_url');
    });

    it('creates a VM without nics (the dummy crashed) and drops keys vmadm refuses for the brand', async () => {
      const { vm } = await create({ nics: undefined, vcpus: 2 });
      expect(vm.nics).toEqual([]);
      expect(vm).not.toHaveProperty('vcpus');
    });

    it('keeps a docker container\'s docker flag, filesystems and docker internal_metadata', async () => {
      // sdc-cn-agent lib/backends/smartos/tasks/machine_create.js hands the params to
      // vmadm create as they are; smartos-live VM.js keeps what proptable.js allows for the
      // brand (docker, filesystems) and adds docker:id, restart_init and init_name.
      const { vm } = await create({
        brand: 'lx',
        kernel_version: '3.13.0',
        docker: true,
        filesystems: [{ source: '/zones/x/volumes/abc', target: '/data', type: 'lofs', options: [] }],
        internal_metadata: { 'docker:cmd': '["nginx"]', 'docker:entrypoint': '[]', 'docker:env': '["A=1"]' },
        restart_init: false,
      });
      expect(vm).toMatchObject({
        brand: 'lx',
        docker: true,
        filesystems: [{ source: '/zones/x/volumes/abc', target: '/data', type: 'lofs', options: [] }],
        internal_metadata: {
          'docker:cmd': '["nginx"]',
          'docker:entrypoint': '[]',
          'docker:env': '["A=1"]',
          'docker:id': expect.stringMatching(/^[0-9a-f]{64}$/),
        },
        internal_metadata_namespaces: ['docker'],
        init_name: '/native/usr/vm/sbin/dockerinit',
        restart_init: false,
        kernel_version: '3.13.0',
      });
      expect(vm.nics[0].interface).toBe('eth0');
    });

    it('writes a VM file the original dummy vmadm loads', async () => {
      const { params } = await create();
      const dummy = new DummyVmadm({
        log: createQuietLogger('dummy'),
        serverRoot: path.join(h.dataDir, 'servers'),
        sysinfo: cn.cn.sysinfo,
      });
      const loaded = await new Promise<any>((resolve, reject) =>
        dummy.load({ uuid: params.uuid }, (err: Error | null, vm: unknown) => (err ? reject(err) : resolve(vm))),
      );
      expect(loaded).toMatchObject({ uuid: params.uuid, state: 'running', brand: 'joyent-minimal', server_uuid: cn.uuid });
      expect(loaded.nics[0].gateway).toBe('10.88.88.1');
    });

    it('refuses an existing VM with the real message', async () => {
      const { params } = await create();
      const r = await postTask(cn, 'machine_create', params);
      expect(r.status).toBe(500);
      expect(r.body.error).toBe(`Machine ${params.uuid} exists.`);
    });

    it('fails with vmadm\'s message on an invalid payload and writes nothing', async () => {
      const before = await listTree(cn.cn.paths.vms);
      const params = provisionParams(cn.uuid, { brand: 'no-such-brand' });
      const r = await postTask(cn, 'machine_create', params);
      expect(r.status).toBe(500);
      expect(r.body.error).toMatch(/brand/);
      expect(await listTree(cn.cn.paths.vms)).toEqual(before);
    });

    it("fails with node-vmadm's create wording on an invalid value (ram: \"lots\"), creating nothing", async () => {
      // node-vmadm lib/index.sunos.js create: "vmadm exited with code: 1: <last stderr line>\n..."
      // then vmadm's stderr: VM.js's bunyan records (VMADM_DEBUG_LEVEL=debug) and its message.
      const before = await listTree(cn.cn.paths.vms);
      const params = provisionParams(cn.uuid, { ram: 'lots' });
      const r = await postTask(cn, 'machine_create', params);
      expect(r.status).toBe(500);
      const error = r.body.error as string;
      const [head, ...rest] = error.split('\n...');
      expect(head).toMatch(/^vmadm exited with code: 1: Invalid value\(s\) for: ram\b/);
      const stderrLines = rest.join('\n...').split('\n');
      expect(JSON.parse(stderrLines[0]!)).toMatchObject({ name: 'vmadm', level: 30, msg: expect.stringMatching(/^Creating VM, original payload:\n/) });
      expect(stderrLines.at(-1)).toBe(head!.slice('vmadm exited with code: 1: '.length));
      expect(r.body).not.toHaveProperty('details');
      expect(await listTree(cn.cn.paths.vms)).toEqual(before);
    });

    it('fails without a UUID in params.uuid, creating nothing', async () => {
      const before = await listTree(cn.cn.paths.vms);
      const r = await postTask(cn, 'machine_create', { ...provisionParams(cn.uuid), uuid: 'not-a-uuid' });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: expect.stringMatching(/params.uuid must be a UUID/) });
      expect(await listTree(cn.cn.paths.vms)).toEqual(before);
    });
  });

  describe('machine_load', () => {
    it('answers with the VM object itself', async () => {
      const { params } = await create();
      const r = await postTask(cn, 'machine_load', { uuid: params.uuid }, { requestId: 'load-1' });
      expect(r.status).toBe(200);
      expect(r.body.uuid).toBe(params.uuid);
      expect(r.body).not.toHaveProperty('vm');
      expect(r.body).toEqual(cn.cn.vms.get(params.uuid as string));
    });

    it("shows vmadm's create defaults and the fields a load always carries", async () => {
      // smartos-live VM.js applyZoneDefaults / fixPayloadMemory (zero-UUID owner and billing
      // id, dns_domain, tmpfs = max_physical_memory, shared-memory controls) and vmload
      // (hvm, resolvers, firewall_enabled, zonedid, snapshots).
      const { params } = await create({ owner_uuid: undefined, billing_id: undefined, resolvers: undefined, firewall_enabled: undefined });
      const r = await postTask(cn, 'machine_load', { uuid: params.uuid });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        owner_uuid: '00000000-0000-0000-0000-000000000000',
        billing_id: '00000000-0000-0000-0000-000000000000',
        dns_domain: 'local',
        tmpfs: 256,
        max_shm_memory: 256,
        max_msg_ids: 4096,
        max_sem_ids: 4096,
        max_shm_ids: 4096,
        hvm: false,
        resolvers: [],
        firewall_enabled: false,
        zonedid: expect.any(Number),
        snapshots: [],
      });
    });

    it('reports a missing VM as VM.load error with restCode VmNotFound', async () => {
      const uuid = newUuid();
      const r = await postTask(cn, 'machine_load', { uuid });
      expect(r.status).toBe(500);
      expect(r.body).toMatchObject({
        error: `VM.load error: vmadm load ${uuid} failed: No such zone`,
        details: { restCode: 'VmNotFound' },
      });
    });

    it('finds a do_not_inventory VM only with include_dni', async () => {
      const { params } = await create({ do_not_inventory: true });
      expect((await postTask(cn, 'machine_load', { uuid: params.uuid })).status).toBe(500);
      const r = await postTask(cn, 'machine_load', { uuid: params.uuid, include_dni: true });
      expect(r.status).toBe(200);
      expect(r.body.do_not_inventory).toBe(true);
      expect((await postTask(cn, 'machine_load', { uuid: params.uuid, include_dni: 'true' })).status).toBe(200);
    });
  });

  // node-vmadm lib/index.sunos.js ifExists(): every operation on a do_not_inventory VM fails
  // with 'VM does not exist' unless include_dni; sdc-cn-agent machine_destroy.js then counts
  // VmNotFound as done, and machine_create.js finishes with {} when its final load fails.
  describe('do_not_inventory VMs', () => {
    it('are missing to every task not given include_dni, and found by those given it', async () => {
      const params = provisionParams(cn.uuid, { do_not_inventory: true });
      const created = await postTask(cn, 'machine_create', params);
      expect(created.status).toBe(200);
      expect(created.body).toEqual({});
      const uuid = params.uuid as string;
      expect(cn.cn.vms.get(uuid, { include_dni: true })?.do_not_inventory).toBe(true);
      for (const [task, extra, op] of [
        ['machine_shutdown', {}, 'vmadm.stop'],
        ['machine_reboot', {}, 'vmadm.reboot'],
        ['machine_kill', {}, 'vmadm.kill'],
        ['machine_update', { alias: 'seen' }, 'vmadm.update'],
        ['machine_create_snapshot', { snapshot_name: 's1' }, 'vmadm.create_snapshot'],
        ['machine_info', { types: ['all'] }, 'vmadm.info'],
      ] as const) {
        const r = await postTask(cn, task, { uuid, ...extra });
        expect(r.status, task).toBe(500);
        expect(r.body, task).toEqual({ error: `${op} error: VM does not exist`, details: { restCode: 'VmNotFound' } });
      }
      const proc = await postTask(cn, 'machine_proc', { uuid });
      expect(proc.body).toEqual({ error: `vmadm.load error: vmadm load ${uuid} failed: No such zone`, details: { restCode: 'VmNotFound' } });
      // A destroy without include_dni "succeeds" and leaves the VM, as on a real CN.
      expect((await postTask(cn, 'machine_destroy', { uuid })).status).toBe(200);
      const left = cn.cn.vms.get(uuid, { include_dni: true });
      expect(left).toMatchObject({ state: 'running', alias: 'test-vm' });
      expect(left?.snapshots ?? []).toEqual([]);
      const stopped = await postTask(cn, 'machine_shutdown', { uuid, include_dni: true });
      expect(stopped.status).toBe(200);
      expect(stopped.body.vm).toMatchObject({ uuid, state: 'stopped' });
      expect((await postTask(cn, 'machine_destroy', { uuid, include_dni: 'true' })).status).toBe(200);
      expect(cn.cn.vms.get(uuid, { include_dni: true })).toBeUndefined();
    });

    it('a VM that is not there is "VM does not exist" to node-vmadm operations', async () => {
      const uuid = newUuid();
      const r = await postTask(cn, 'machine_boot', { uuid });
      expect(r.body).toEqual({ error: 'vmadm.start error: VM does not exist', details: { restCode: 'VmNotFound' } });
    });
  });

  describe('power tasks', () => {
    it('machine_shutdown stops the VM; stopping it again succeeds, with or without idempotent', async () => {
      // sdc-cn-agent lib/backends/smartos/tasks/machine_shutdown.js through node-vmadm
      // lib/index.sunos.js: `vmadm stop` of a stopped VM exits 0 (smartos-live vmadm.js), so
      // the real task finishes with {vm}; the dummy-era mock answered 500 ENOTRUNNING.
      const { params } = await create();
      const r = await postTask(cn, 'machine_shutdown', { uuid: params.uuid, timeout: '30', force: false });
      expect(r.status).toBe(200);
      expect(r.body.vm).toMatchObject({ uuid: params.uuid, state: 'stopped', autoboot: false });
      const again = await postTask(cn, 'machine_shutdown', { uuid: params.uuid });
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body.vm).toMatchObject({ state: 'stopped', autoboot: false });
      const idem = await postTask(cn, 'machine_shutdown', { uuid: params.uuid, idempotent: true });
      expect(idem.status).toBe(200);
      expect(idem.body.vm.state).toBe('stopped');
    });

    it('machine_shutdown of a killed VM turns autoboot off (VM.js stop sets autoboot=false first)', async () => {
      const { params } = await create();
      await postTask(cn, 'machine_kill', { uuid: params.uuid, signal: 'KILL' });
      expect(cn.cn.vms.get(params.uuid as string)).toMatchObject({ state: 'stopped', autoboot: true });
      const r = await postTask(cn, 'machine_shutdown', { uuid: params.uuid });
      expect(r.status).toBe(200);
      expect(r.body.vm).toMatchObject({ state: 'stopped', autoboot: false });
    });

    it('machine_shutdown fails on a timeout that is not a number', async () => {
      const { params } = await create();
      const r = await postTask(cn, 'machine_shutdown', { uuid: params.uuid, timeout: 'soon' });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: 'Invalid type: "string" for timeout' });
      expect(cn.cn.vms.get(params.uuid as string)?.state).toBe('running');
    });

    it('machine_boot starts the VM, applying `update` first; starting a running VM succeeds', async () => {
      // sdc-cn-agent lib/backends/smartos/tasks/machine_boot.js: node-vmadm's start sees
      // `vmadm start` exit 0 for a running VM (smartos-live vmadm.js treats EALREADYRUNNING
      // as done), so the task answers {vm} with or without `idempotent`.
      const { params } = await create({ autoboot: false });
      expect(cn.cn.vms.get(params.uuid as string)?.state).toBe('stopped');
      const r = await postTask(cn, 'machine_boot', { uuid: params.uuid, update: { alias: 'renamed' } });
      expect(r.status).toBe(200);
      expect(r.body.vm).toMatchObject({ state: 'running', alias: 'renamed', autoboot: true });
      const again = await postTask(cn, 'machine_boot', { uuid: params.uuid });
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body.vm).toMatchObject({ state: 'running', boot_timestamp: r.body.vm.boot_timestamp });
      expect((await postTask(cn, 'machine_boot', { uuid: params.uuid, idempotent: 'true' })).status).toBe(200);
    });

    it('machine_reboot reboots (new boot time) and reports progress 100', async () => {
      const { params, vm } = await create();
      await pause(5);
      const r = await postTask(cn, 'machine_reboot', { uuid: params.uuid });
      expect(r.status).toBe(200);
      expect(r.body.vm.state).toBe('running');
      expect(Date.parse(r.body.vm.boot_timestamp)).toBeGreaterThan(Date.parse(vm.boot_timestamp));
      const entry = (await history(cn)).at(-1);
      expect(entry.messages.filter((m: any) => m.name === 'progress').map((m: any) => m.event.value)).toEqual([0, 100]);
    });

    it('machine_kill exists and stops a running VM; idempotent on a stopped one', async () => {
      const { params } = await create();
      const r = await postTask(cn, 'machine_kill', { uuid: params.uuid, signal: 'SIGKILL' });
      expect(r.status).toBe(200);
      expect(r.body.vm.state).toBe('stopped');
      const again = await postTask(cn, 'machine_kill', { uuid: params.uuid });
      expect(again.status).toBe(500);
      expect(again.body).toEqual({ error: 'vmadm.kill error: vmadm exited with code: 1 signal: null' });
      expect((await postTask(cn, 'machine_kill', { uuid: params.uuid, idempotent: true })).status).toBe(200);
    });

    it("machine_reboot of a stopped VM fails with node-vmadm's exit text, idempotent or not", async () => {
      // node-vmadm's reboot keeps no error code, so machine_reboot.js's idempotent check
      // (err.code ENOTRUNNING) never matches: the task fails either way on a real CN.
      const { params } = await create({ autoboot: false });
      for (const extra of [{}, { idempotent: true }]) {
        const r = await postTask(cn, 'machine_reboot', { uuid: params.uuid, ...extra });
        expect(r.status).toBe(500);
        expect(r.body).toEqual({ error: 'vmadm.reboot error: vmadm exited with code: 1 signal: null' });
      }
      const entry = (await history(cn)).at(-1);
      const logged = entry.log.find((l: any) => l.message.includes('error executing vmadm'));
      expect(logged.message[0]).toMatchObject({
        cmdline: ['/usr/sbin/vmadm', 'reboot', params.uuid],
        stderrLines: ['Cannot reboot vm from state "stopped", must be "running"'],
      });
      expect(cn.cn.vms.get(params.uuid as string)?.state).toBe('stopped');
    });

    it('power tasks on a missing VM fail with restCode VmNotFound', async () => {
      for (const task of ['machine_boot', 'machine_shutdown', 'machine_reboot', 'machine_kill']) {
        const r = await postTask(cn, task, { uuid: newUuid() });
        expect(r.status).toBe(500);
        expect(r.body.details).toEqual({ restCode: 'VmNotFound' });
      }
      // node-vmadm's ifExists answer for start and stop.
      const boot = await postTask(cn, 'machine_boot', { uuid: newUuid() });
      expect(boot.body.error).toBe('vmadm.start error: VM does not exist');
    });
  });

  describe('machine_update', () => {
    it('applies vmadm update keys and answers {vm}', async () => {
      const { params } = await create();
      const r = await postTask(cn, 'machine_update', {
        uuid: params.uuid,
        server_uuid: cn.uuid,
        set_tags: { env: 'prod' },
        alias: 'updated',
      });
      expect(r.status).toBe(200);
      expect(r.body.vm).toMatchObject({ alias: 'updated', tags: { role: 'test', env: 'prod' } });
      const entry = (await history(cn)).at(-1);
      expect(entry.messages.filter((m: any) => m.name === 'progress').map((m: any) => m.event.value)).toEqual([0, 100]);
    });

    it('reboots a running VM when NICs are added, answering with the VM as loaded before the reboot', async () => {
      // sdc-cn-agent lib/backends/smartos/tasks/machine_update.js finishes with the VM it
      // loaded before `vmadm reboot`.
      const { params, vm } = await create();
      await pause(5);
      const r = await postTask(cn, 'machine_update', {
        uuid: params.uuid,
        add_nics: [{ mac: '90:b8:d0:aa:bb:01', ip: '10.88.89.7', netmask: '255.255.255.0', nic_tag: 'external', vlan_id: 0 }],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.vm.nics.map((n: any) => n.mac)).toContain('90:b8:d0:aa:bb:01');
      expect(r.body.vm.state).toBe('running');
      expect(r.body.vm.boot_timestamp).toBe(vm.boot_timestamp);
      const after = cn.cn.vms.get(params.uuid as string)!;
      expect(Date.parse(after.boot_timestamp!)).toBeGreaterThan(Date.parse(vm.boot_timestamp));
      const entry = (await history(cn)).at(-1);
      expect(entry.messages.filter((m: any) => m.name === 'progress').map((m: any) => m.event.value)).toEqual([0, 75, 100]);
    });

    it('does not reboot a stopped VM for NIC changes', async () => {
      const { params } = await create({ autoboot: false });
      const r = await postTask(cn, 'machine_update', { uuid: params.uuid, remove_nics: ['90:b8:d0:2f:0a:11'] });
      expect(r.status).toBe(200);
      expect(r.body.vm.state).toBe('stopped');
      expect(r.body.vm.nics).toEqual([]);
    });

    it("drops what is not an update property, as real vmadm does with VMAPI's forwarded job params", async () => {
      const { params } = await create({ autoboot: false });
      // The shape VMAPI's add-nics job sends through CNAPI: job fields plus NAPI NIC objects.
      const r = await postTask(cn, 'machine_update', {
        uuid: params.uuid,
        server_uuid: cn.uuid,
        task: 'add_nics',
        vm_uuid: params.uuid,
        jobid: newUuid(),
        oldResolvers: [],
        add_nics: [
          {
            mac: '90:b8:d0:aa:bb:02',
            ip: '10.88.89.8',
            netmask: '255.255.255.0',
            nic_tag: 'external',
            vlan_id: 0,
            belongs_to_type: 'zone',
            belongs_to_uuid: params.uuid,
            owner_uuid: newUuid(),
            state: 'provisioning',
          },
        ],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const nic = r.body.vm.nics.find((n: any) => n.mac === '90:b8:d0:aa:bb:02');
      expect(nic).toMatchObject({ ip: '10.88.89.8', nic_tag: 'external' });
      expect(nic).not.toHaveProperty('belongs_to_uuid');
      expect(r.body.vm).not.toHaveProperty('task');
    });

    it('still refuses a bad value of a real update property', async () => {
      const { params } = await create();
      const r = await postTask(cn, 'machine_update', { uuid: params.uuid, ram: 'lots' });
      expect(r.status).toBe(500);
      // node-vmadm's update: the error is vmadm's stderr, VM.js's bunyan records (VMADM_DEBUG_LEVEL
      // =debug) then the message vmadm prints last.
      const lines = (r.body.error as string).split('\n');
      expect(lines[0]).toMatch(/^vmadm\.update error: \{/);
      expect(JSON.parse(lines[0]!.slice('vmadm.update error: '.length))).toMatchObject({
        name: 'vmadm',
        action: 'update',
        vm: params.uuid,
        msg: expect.stringMatching(new RegExp(`^Updating VM ${params.uuid} with initial payload:\n`)),
      });
      expect(lines.at(-1)).toMatch(/^Invalid value\(s\) for: ram\b/);
      expect(r.body).not.toHaveProperty('details');
      expect(cn.cn.vms.get(params.uuid as string)).toMatchObject({ max_physical_memory: 256 });
      // node-vmadm lib/index.sunos.js update: a missing zone is "VM does not exist" (VmNotFound).
      const missing = await postTask(cn, 'machine_update', { uuid: newUuid(), alias: 'x' });
      expect(missing.body).toMatchObject({ error: 'vmadm.update error: VM does not exist', details: { restCode: 'VmNotFound' } });
    });

    it('keeps every update key the brand takes (filesystems, docker, zlog_max_size) and never changes image_uuid', async () => {
      // smartos-live proptable.js: add_filesystems, docker, zlog_max_size are update keys of
      // joyent-minimal; image_uuid is not an update key of any brand (VM.js removes it).
      const { params } = await create();
      const r = await postTask(cn, 'machine_update', {
        uuid: params.uuid,
        image_uuid: newUuid(),
        add_filesystems: [{ source: '/zones/x/volumes/v1', target: '/data', type: 'lofs', options: [] }],
        zlog_max_size: 65536,
        docker: true,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.vm).toMatchObject({
        image_uuid: params.image_uuid,
        filesystems: [{ source: '/zones/x/volumes/v1', target: '/data', type: 'lofs', options: [] }],
        zlog_max_size: 65536,
        docker: true,
        restart_init: false,
        init_name: '/usr/vm/sbin/dockerinit',
        internal_metadata: { 'docker:id': expect.stringMatching(/^[0-9a-f]{64}$/) },
      });
      const entry = (await history(cn)).at(-1);
      const warned = entry.log.find((l: any) => l.level === 'warn' && l.message[0]?.removed);
      expect(warned.message[0].removed).toEqual(expect.arrayContaining(['image_uuid', 'uuid']));
    });
  });

  describe('machine_destroy', () => {
    it('deletes the VM and is idempotent', async () => {
      const { params } = await create();
      const file = path.join(cn.cn.paths.vms, `${params.uuid}.json`);
      expect((await listTree(cn.cn.paths.vms)).includes(path.basename(file))).toBe(true);
      const r = await postTask(cn, 'machine_destroy', { uuid: params.uuid, jobid: newUuid() });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({});
      expect((await listTree(cn.cn.paths.vms)).includes(path.basename(file))).toBe(false);
      expect((await postTask(cn, 'machine_destroy', { uuid: params.uuid })).status).toBe(200);
      expect((await postTask(cn, 'machine_destroy', { uuid: newUuid() })).status).toBe(200);
    });
  });

  describe('snapshots', () => {
    it('creates (newest first), rolls back (the VM ends running) and deletes snapshots', async () => {
      // sdc-cn-agent lib/backends/smartos/tasks/machine_*_snapshot.js; the rollback's end
      // state is smartos-live VM.js rollback_snapshot's: halted, rolled back, started.
      const { params } = await create();
      const uuid = params.uuid;
      const c1 = await postTask(cn, 'machine_create_snapshot', { uuid, snapshot_name: 'snap1' });
      expect(c1.status).toBe(200);
      expect(c1.body.vm.snapshots).toEqual([{ name: 'snap1', size: 0, created_at: expect.stringMatching(/:\d\d\.000Z$/) }]);
      await pause(1001);
      const c2 = await postTask(cn, 'machine_create_snapshot', { uuid, snapshot_name: 'snap2' });
      expect(c2.body.vm.snapshots.map((s: any) => s.name)).toEqual(['snap2', 'snap1']);
      const rb = await postTask(cn, 'machine_rollback_snapshot', { uuid, snapshot_name: 'snap1' });
      expect(rb.status).toBe(200);
      expect(rb.body.vm.snapshots.map((s: any) => s.name)).toEqual(['snap1']);
      expect(rb.body.vm).toMatchObject({ state: 'running', autoboot: true });
      const d = await postTask(cn, 'machine_delete_snapshot', { uuid, snapshot_name: 'snap1' });
      expect(d.status).toBe(200);
      expect(d.body.vm.snapshots).toEqual([]);
    });

    it('a rollback of a stopped VM (as VMAPI\'s rollback workflow leaves it) ends with the VM running', async () => {
      const { params } = await create();
      const uuid = params.uuid;
      await postTask(cn, 'machine_create_snapshot', { uuid, snapshot_name: 'before' });
      await postTask(cn, 'machine_shutdown', { uuid });
      const rb = await postTask(cn, 'machine_rollback_snapshot', { uuid, snapshot_name: 'before' });
      expect(rb.status).toBe(200);
      expect(rb.body.vm).toMatchObject({ state: 'running', autoboot: true });
      expect(cn.cn.vms.get(uuid as string)!.state).toBe('running');
    });

    it("deleting or rolling back to a missing snapshot fails with node-vmadm's message, vmadm's reason in the log", async () => {
      // node-vmadm lib/index.sunos.js turns vmadm's exit 1 into "vmadm exited with code: 1
      // signal: null", so machine_delete_snapshot.js's "No snapshot named" match never
      // applies on a real CN: the task fails (the dummy-era mock answered 200).
      const { params } = await create();
      const uuid = params.uuid as string;
      const del = await postTask(cn, 'machine_delete_snapshot', { uuid, snapshot_name: 'nope' });
      expect(del.status).toBe(500);
      expect(del.body.error).toBe('vmadm.delete_snapshot error: vmadm exited with code: 1 signal: null');
      expect(del.body).not.toHaveProperty('details');
      const entry = (await history(cn)).at(-1);
      const logged = entry.log.find((l: any) => l.message.includes('error executing vmadm'));
      expect(logged.message[0]).toMatchObject({
        cmdline: ['/usr/sbin/vmadm', 'delete-snapshot', uuid, 'nope'],
        stderrLines: [`No snapshot named "nope" for ${uuid}`],
      });
      const rb = await postTask(cn, 'machine_rollback_snapshot', { uuid, snapshot_name: 'nope' });
      expect(rb.status).toBe(500);
      expect(rb.body.error).toBe('vmadm.rollback_snapshot error: vmadm exited with code: 1 signal: null');
      const missingVm = await postTask(cn, 'machine_create_snapshot', { uuid: newUuid(), snapshot_name: 's' });
      expect(missingVm.body).toMatchObject({ error: 'vmadm.create_snapshot error: VM does not exist', details: { restCode: 'VmNotFound' } });
    });
  });

  describe('machine_reprovision', () => {
    it('moves the VM to the new image; a stopped VM ends running (VM.js reprovision starts it)', async () => {
      const { params } = await create();
      const image = newUuid();
      const r = await postTask(cn, 'machine_reprovision', { uuid: params.uuid, image_uuid: image });
      expect(r.status).toBe(200);
      expect(r.body.vm).toMatchObject({ image_uuid: image, state: 'running' });
      const entry = (await history(cn)).at(-1);
      expect(entry.messages.map((m: any) => m.name)).toContain('start:reprovision_machine');
      await postTask(cn, 'machine_shutdown', { uuid: params.uuid });
      const again = await postTask(cn, 'machine_reprovision', { uuid: params.uuid, image_uuid: newUuid() });
      expect(again.body.vm).toMatchObject({ state: 'running', autoboot: true });
      const missing = newUuid();
      const m = await postTask(cn, 'machine_reprovision', { uuid: missing, image_uuid: image });
      expect(m.status).toBe(500);
      expect(m.body.error).toBe(`VM ${missing} does not exist.`);
    });
  });

  describe('machine_info and machine_proc', () => {
    it("machine_info answers `vmadm info`'s text for a running bhyve VM and fails for a zone like node-vmadm", async () => {
      // sdc-cn-agent lib/backends/smartos/tasks/machine_info.js finishes with what node-vmadm
      // lib/index.sunos.js `info` returns: vmadm's stdout, JSON.stringify(info, null, 2).
      const { params } = await create({
        brand: 'bhyve',
        image_uuid: undefined,
        max_swap: undefined,
        vnc_port: 5977,
        disks: [{ image_uuid: 'fd2cc906-8938-11e3-beab-4359c665ac99', boot: true, model: 'virtio', size: 10240 }],
      });
      const r = await postTask(cn, 'machine_info', { uuid: params.uuid, types: ['vnc'] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(typeof r.body).toBe('string');
      const info = JSON.parse(r.body);
      expect(r.body).toBe(`${JSON.stringify(info, null, 2)}\n`);
      expect(info).toEqual({ vnc: { host: cn.cn.sysinfo['Admin IP'], port: 5977, display: 77 } });
      const zone = await create();
      const z = await postTask(cn, 'machine_info', { uuid: zone.params.uuid });
      expect(z.status).toBe(500);
      expect(z.body.error).toBe('vmadm.info error: vmadm exited with code: 1 signal: null');
      const entry = (await history(cn)).at(-1);
      const logged = entry.log.find((l: any) => l.message.includes('error executing vmadm'));
      expect(logged.message[0].stderrLines).toEqual([
        `Unable to get VM info for VM ${zone.params.uuid}: no info types supported for brand joyent-minimal`,
      ]);
    });

    it('machine_proc lists the zone init for a running VM and refuses a stopped one', async () => {
      const { params } = await create();
      const r = await postTask(cn, 'machine_proc', { uuid: params.uuid });
      expect(r.status).toBe(200);
      const procs = Object.values(r.body).filter((p: any) => p && p.psinfo) as any[];
      expect(procs.map((p) => p.psinfo.pr_fname).sort()).toEqual(['init', 'zsched']);
      await postTask(cn, 'machine_shutdown', { uuid: params.uuid });
      const s = await postTask(cn, 'machine_proc', { uuid: params.uuid });
      expect(s.status).toBe(500);
      expect(s.body).toMatchObject({ error: 'VM is not running', details: { restCode: 'VmNotRunning' } });
    });
  });

  describe('machine_update_nics', () => {
    it("moves every VM on a network to the network's new gateway and resolvers", async () => {
      const c = await h.addCn();
      const onNet = provisionParams(c.uuid);
      const elsewhere = provisionParams(c.uuid, {
        nics: [{ mac: '90:b8:d0:00:00:99', ip: '192.168.5.9', netmask: '255.255.255.0', nic_tag: 'internal', vlan_id: 0, primary: true }],
      });
      expect((await postTask(c, 'machine_create', onNet)).status).toBe(200);
      expect((await postTask(c, 'machine_create', elsewhere)).status).toBe(200);
      const network = { uuid: newUuid(), subnet: '10.88.88.0/24', netmask: '255.255.255.0', vlan_id: 0, nic_tag: 'external' };
      const r = await postTask(c, 'machine_update_nics', {
        original_network: network,
        networks: [{ ...network, gateway: '10.88.88.254', resolvers: ['1.1.1.1'] }],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const moved = c.cn.vms.get(onNet.uuid as string)!;
      expect(moved.nics![0]!.gateway).toBe('10.88.88.254');
      expect(moved.resolvers).toEqual(['1.1.1.1']);
      const untouched = c.cn.vms.get(elsewhere.uuid as string)!;
      expect(untouched.resolvers).toEqual(['8.8.8.8']);
      const entry = (await history(c)).at(-1);
      expect(entry.messages.map((m: any) => m.name)).toEqual(expect.arrayContaining(['start:pre_check', 'start:filter_vms', 'start:perform_updates']));
    });

    it('fails on unusable networks with the real message', async () => {
      const r = await postTask(cn, 'machine_update_nics', { networks: [], original_network: {} });
      expect(r.status).toBe(500);
      expect(r.body.error).toBe('Invalid request parameters: networks, original_network');
    });
  });
});
