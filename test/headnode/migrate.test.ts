/**
 * VM migration between two mock CNs of one daemon, end to end, with this test playing
 * VMAPI's migration workflows step for step (sdc-vmapi lib/workflows/migrate-begin.js,
 * migrate-sync.js, migrate-switch.js, migrate-abort.js and lib/workflows/vm-migration/
 * begin.js, common.js, sync.js, switch.js, abort.js, cleanup_source.js; finalize in
 * lib/vm-migration/migrate.js): every cn-agent step goes through sdc-clients' CNAPI client
 * to the dev headnode's CNAPI (`POST /servers/:s/vms/:uuid/migrate`, sdc-cnapi
 * lib/endpoints/vms.js VmMigrate), and the sync is driven over the migration processes'
 * sockets as the sync workflow does (sdc-cn-agent lib/backends/smartos/bin/
 * machine-migrate-send.js, machine-migrate-receive.js).
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listening, ProcessSocket } from '../cn-agent/migration-client.js';
import { call, callError } from './helpers/sdc-clients.js';
import { cnapiTask, startDevDc, taskError, type DevDc, type Obj } from './helpers/dev-dc.js';

const OWNER = '8e1c2f4a-0b3d-4c5e-9f6a-7b8c9d0e1f2a';

describe('migrate a VM between two mock CNs through CNAPI (machine_migrate)', () => {
  let dc: DevDc;
  let source: string;
  let target: string;

  const vmFile = (server: string, vm: string): Promise<boolean> =>
    fsp.access(path.join(dc.dataDir, 'servers', server, 'vms', `${vm}.json`)).then(
      () => true,
      () => false,
    );
  const load = (server: string, vm: string): Promise<Obj> => call<Obj>(dc.cnapi, 'getVm', server, vm);
  const loadDni = async (server: string, vm: string): Promise<Obj> =>
    (await new Promise<Obj>((resolve, reject) =>
      dc.cnapi.get(`/servers/${server}/vms/${vm}?include_dni=true`, (err: Error | null, obj: Obj) => (err ? reject(err) : resolve(obj))),
    )) as Obj;

  /** One machine_migrate step through CNAPI, as the workflows post them. */
  const migrateTask = (server: string, vm: string, payload: Obj): Promise<Obj> =>
    cnapiTask(dc.cnapi, `/servers/${server}/vms/${vm}/migrate`, payload);
  const finishValue = (task: Obj): Obj => (task.history as Obj[]).find((h) => h.name === 'finish')!.event as Obj;

  async function createVm(server: string, vm: string, extra: Obj = {}): Promise<void> {
    const images = await (await fetch(`${dc.urls.imgapi}/images?name=base-64-lts`)).json() as Obj[];
    const task = await cnapiTask(dc.cnapi, `/servers/${server}/vms`, {
      uuid: vm,
      owner_uuid: OWNER,
      brand: 'joyent-minimal',
      image_uuid: images[0]!.uuid,
      ram: 256,
      quota: 10,
      alias: 'migrant',
      ...extra,
    });
    expect(task.status, taskError(task)).toBe('complete');
  }

  function newRecord(vm: string): Obj {
    return {
      id: randomUUID(),
      vm_uuid: vm,
      target_vm_uuid: vm,
      source_server_uuid: source,
      target_server_uuid: target,
      phase: 'begin',
      state: 'running',
      created_timestamp: new Date().toISOString(),
      automatic: false,
      num_sync_phases: 0,
      progress_history: [],
    };
  }

  /** migrate-begin: provisionVm reserves the target (createProvisionPayload), then set-create-timestamp. */
  async function begin(vm: string, record: Obj): Promise<Obj> {
    const vmObj = await load(source, vm);
    await createVm(target, vm, {
      autoboot: false,
      do_not_inventory: true,
      vm_migration_target: true,
      internal_metadata: { vm_migration_create_timestamp: new Date().toISOString() },
    });
    const ts = await migrateTask(target, vm, {
      action: 'set-create-timestamp',
      migrationTask: { action: 'begin', record },
      vm: vmObj,
      vm_uuid: vm,
    });
    expect(ts.status, taskError(ts)).toBe('complete');
    return vmObj;
  }

  /** migrate-sync: the two processes, then set-record / sync / end on the source's socket. */
  async function sync(vm: string, record: Obj, vmObj: Obj, extra: Obj = {}): Promise<Obj[]> {
    const params = { migrationTask: { action: 'sync', record }, vm: vmObj, vm_uuid: vm, ...extra };
    const src = await migrateTask(source, vm, { ...params, action: 'sync' });
    expect(src.status, taskError(src)).toBe('complete');
    const tgt = await migrateTask(target, vm, { ...params, action: 'receive' });
    expect(tgt.status, taskError(tgt)).toBe('complete');
    const sp = finishValue(src);
    const tp = finishValue(tgt);
    for (const p of [sp, tp]) {
      expect(p).toMatchObject({ event: 'setup completed', host: '127.0.0.1' });
      expect(Number.isInteger(p.pid) && p.pid > 1).toBe(true);
      expect(typeof p.port).toBe('number');
    }
    record.source_process_details = { pid: sp.pid, host: sp.host, port: sp.port };
    record.target_process_details = { pid: tp.pid, host: tp.host, port: tp.port };

    const sock = await ProcessSocket.open(sp.host, sp.port);
    expect(await sock.request({ command: 'set-record', record })).toMatchObject({ type: 'response', command: 'set-record' });
    const synced = await sock.request({ command: 'sync', host: tp.host, port: tp.port });
    expect(synced, JSON.stringify(synced)).toMatchObject({ type: 'response', command: 'sync' });
    expect(await sock.request({ command: 'end' })).toMatchObject({ type: 'response', command: 'end' });
    await sock.closed;
    // Both processes are gone once the sync ended.
    expect(await listening(sp.host, sp.port)).toBe(false);
    expect(await listening(tp.host, tp.port)).toBe(false);
    record.num_sync_phases = Number(record.num_sync_phases) + 1;
    return sock.events.filter((e) => e.type === 'progress');
  }

  beforeAll(async () => {
    dc = await startDevDc(2);
    [source, target] = dc.servers as [string, string];
  }, 120_000);

  afterAll(async () => {
    await dc?.close();
  }, 60_000);

  it('begins, syncs twice, switches and finalizes: the VM ends on the target CN only', async () => {
    const vm = randomUUID();
    await createVm(source, vm);
    const record = newRecord(vm);

    // estimate (lib/vm-migration/migrate.js migrationEstimate) and the filesystem details.
    const vmObj0 = await load(source, vm);
    const estimate = await migrateTask(source, vm, { action: 'estimate', migrationTask: { action: 'estimate', record: {} }, vm: vmObj0 });
    expect(finishValue(estimate).size).toBeGreaterThan(0);
    const details = await migrateTask(source, vm, {
      action: 'get-filesystem-details',
      migrationTask: { action: 'begin', record },
      vm: vmObj0,
      vm_uuid: vm,
    });
    expect(finishValue(details)).toMatchObject({ quotaStr: String(10 * 1024 ** 3), reservationStr: '0' });

    const vmObj = await begin(vm, record);
    // The reservation: hidden on the target (machine_load finds it only with include_dni), stopped,
    // with the source's creation time.
    const hidden = await callError(dc.cnapi, 'getVm', target, vm);
    expect(hidden.statusCode).toBe(404);
    const reserved = await loadDni(target, vm);
    expect(reserved).toMatchObject({ uuid: vm, do_not_inventory: true, state: 'stopped', create_timestamp: vmObj.create_timestamp });

    const first = await sync(vm, record, vmObj);
    expect(first.length).toBeGreaterThan(0);
    const last = first[first.length - 1]!;
    expect(last).toMatchObject({ type: 'progress', phase: 'sync', state: 'running' });
    expect(last.current_progress).toBe(last.total_progress);
    expect(last.total_progress).toBe(finishValue(estimate).size);
    // An incremental sync sends less.
    const second = await sync(vm, record, vmObj);
    expect(second[second.length - 1]!.total_progress).toBeLessThan(last.total_progress);

    // migrate-switch: stop the source, final sync, then the flips.
    expect((await cnapiTask(dc.cnapi, `/servers/${source}/vms/${vm}/stop`, {})).status).toBe('complete');
    const stoppedObj = await load(source, vm);
    await sync(vm, record, stoppedObj);
    const mt = { action: 'switch', record };
    const steps: [string, Obj][] = [
      [target, { action: 'setup-filesystem', migrationTask: mt, vm: stoppedObj, vm_uuid: vm }],
      [source, { action: 'set-autoboot', migrationTask: mt, vm_uuid: vm, value: 'false' }],
      [target, { action: 'set-autoboot', migrationTask: mt, vm_uuid: vm, value: 'true' }],
      [source, { action: 'set-do-not-inventory', migrationTask: mt, vm_uuid: vm, value: 'true' }],
      [target, { action: 'set-do-not-inventory', migrationTask: mt, vm_uuid: vm, value: 'false' }],
      [source, { action: 'remove-sync-snapshots', migrationTask: mt, vm: stoppedObj, vm_uuid: vm }],
      [target, { action: 'remove-sync-snapshots', migrationTask: mt, vm: stoppedObj, vm_uuid: vm }],
    ];
    for (const [server, payload] of steps) {
      const t = await migrateTask(server, vm, payload);
      expect(t.status, `${String(payload.action)}: ${taskError(t)}`).toBe('complete');
    }
    expect((await cnapiTask(dc.cnapi, `/servers/${target}/vms/${vm}/start`, {})).status).toBe('complete');

    // The VM is the target's now: its cn-agent finds it running; the source's does not.
    expect(await load(target, vm)).toMatchObject({ uuid: vm, state: 'running', autoboot: true, alias: 'migrant' });
    expect((await load(target, vm)).do_not_inventory).not.toBe(true);
    const gone = await callError(dc.cnapi, 'getVm', source, vm);
    expect(gone.statusCode).toBe(404);
    expect(await loadDni(source, vm)).toMatchObject({ do_not_inventory: true, autoboot: false, state: 'stopped' });

    // finalize: the hidden source is destroyed (VmDestroy with include_dni).
    const destroyed = await new Promise<Obj>((resolve, reject) =>
      dc.cnapi.del(`/servers/${source}/vms/${vm}?include_dni=true`, (err: Error | null, obj: Obj) => (err ? reject(err) : resolve(obj))),
    );
    expect((await call<Obj>(dc.cnapi, 'waitTask', destroyed.id, { timeout: 30 })).status).toBe('complete');
    expect(await vmFile(source, vm)).toBe(false);
    expect(await vmFile(target, vm)).toBe(true);
  }, 120_000);

  it('aborts after a sync: the reserved target is destroyed and the VM stays on the source', async () => {
    const vm = randomUUID();
    await createVm(source, vm);
    const record = newRecord(vm);
    const vmObj = await begin(vm, record);
    // VMAPI's zfs_send_mbps_limit paces the send (4 Mbit/s: 1 MiB in about 2 s), and the
    // watcher reports the bytes once a second while they move.
    const progress = await sync(vm, record, vmObj, { zfs_send_mbps_limit: 4 });
    expect(progress.length).toBeGreaterThanOrEqual(2);
    const currents = progress.map((e) => e.current_progress as number);
    expect(currents).toEqual([...currents].sort((x, y) => x - y));
    expect(currents[0]).toBeLessThan(progress[0]!.total_progress);
    expect(progress.every((e) => e.transfer_bytes_second >= 0 && typeof e.eta_ms === 'number')).toBe(true);

    // migrate-abort: ensureTargetVmHasDni, deleteTargetDniVm, removeSourceSnapshots.
    expect((await loadDni(target, vm)).do_not_inventory).toBe(true);
    const del = await new Promise<Obj>((resolve, reject) =>
      dc.cnapi.del(`/servers/${target}/vms/${vm}?include_dni=true`, (err: Error | null, obj: Obj) => (err ? reject(err) : resolve(obj))),
    );
    expect((await call<Obj>(dc.cnapi, 'waitTask', del.id, { timeout: 30 })).status).toBe('complete');
    const snaps = await migrateTask(source, vm, {
      action: 'remove-sync-snapshots',
      migrationTask: { action: 'abort', record },
      vm: vmObj,
      vm_uuid: vm,
    });
    expect(snaps.status, taskError(snaps)).toBe('complete');

    expect(await load(source, vm)).toMatchObject({ uuid: vm, state: 'running' });
    expect(await vmFile(source, vm)).toBe(true);
    expect(await vmFile(target, vm)).toBe(false);
    const missing = await new Promise<Obj>((resolve) =>
      dc.cnapi.get(`/servers/${target}/vms/${vm}?include_dni=true`, (err: Obj) => resolve(err)),
    );
    expect(missing.statusCode).toBe(404);
  }, 120_000);

  it('stops a migration process on `stop` (cleanup) and by kill_migration_process', async () => {
    const vm = randomUUID();
    await createVm(source, vm);
    const record = newRecord(vm);
    const vmObj = await load(source, vm);
    const params = { migrationTask: { action: 'sync', record }, vm: vmObj, vm_uuid: vm };

    // cleanup_source.js: connect and ask nicely.
    const a = finishValue(await migrateTask(source, vm, { ...params, action: 'sync' }));
    const sock = await ProcessSocket.open(a.host, a.port);
    expect(await sock.request({ command: 'ping' })).toMatchObject({ type: 'response', pid: a.pid, version: '1.0.0' });
    expect(await sock.request({ command: 'stop' })).toMatchObject({ type: 'response', command: 'stop' });
    await sock.closed;
    expect(await listening(a.host, a.port)).toBe(false);

    // ... or kill it by pid; a pid of another VM's process is left alone.
    const b = finishValue(await migrateTask(source, vm, { ...params, action: 'sync' }));
    const wrongVm = await migrateTask(source, vm, { action: 'kill_migration_process', migrationTask: params.migrationTask, pid: b.pid, vm_uuid: randomUUID() });
    expect(wrongVm.status).toBe('complete');
    expect(await listening(b.host, b.port)).toBe(true);
    const killed = await migrateTask(source, vm, { action: 'kill_migration_process', migrationTask: params.migrationTask, pid: b.pid, vm_uuid: vm });
    expect(killed.status).toBe('complete');
    expect(await listening(b.host, b.port)).toBe(false);
    const badPid = await migrateTask(source, vm, { action: 'kill_migration_process', migrationTask: params.migrationTask, pid: 1, vm_uuid: vm });
    expect(badPid.status).toBe('failure');
    expect(taskError(badPid)).toBe('Invalid PID supplied to kill_migration_process task');
  }, 60_000);

  it('answers the real errors: unknown action, CNAPI validation, and the table-only machine_migrate_receive', async () => {
    const vm = randomUUID();
    const unknown = await migrateTask(source, vm, { action: 'teleport', migrationTask: { action: 'sync', record: {} } });
    expect(unknown.status).toBe('failure');
    expect(taskError(unknown)).toBe('Unexpected payload.action: teleport');

    const invalid = await new Promise<Obj>((resolve) =>
      dc.cnapi.post(`/servers/${source}/vms/${vm}/migrate`, { action: 'estimate' }, (err: Obj) => resolve(err)),
    );
    // sdc-cnapi lib/validation/endpoints.js sends InvalidParameters with status 500.
    expect(invalid.statusCode).toBe(500);
    expect(invalid.body.errors.map((e: Obj) => e.field)).toEqual(['migrationTask', 'migrationTask.action', 'migrationTask.record']);

    // Listed in the SmartOS backend's queue table, but there is no task module behind it.
    const agent = (await call<Obj>(dc.cnapi, 'getServer', source)).sysinfo as Obj;
    const res = await fetch(`http://${agent['CN Agent IP']}:${agent['CN Agent Port']}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': source },
      body: JSON.stringify({ task: 'machine_migrate_receive', params: { uuid: vm } }),
    });
    expect(res.status).toBe(500);
    expect(((await res.json()) as Obj).error).toBe('Child task process machine_migrate_receive did not terminate cleanly. (1)');
  }, 60_000);
});
