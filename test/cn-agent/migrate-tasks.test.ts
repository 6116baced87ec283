/**
 * machine_migrate's single actions and its migration processes at the cn-agent level, for
 * what the end-to-end test (test/headnode/migrate.test.ts) does not reach: the real error
 * messages (sdc-cn-agent lib/backends/smartos/tasks/machine_migrate.js), the processes'
 * answers to bad or partial input (bin/machine-migrate-send.js, machine-migrate-receive.js),
 * and their end when the CN goes away.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { Harness, postTask, provisionParams, type TestCn } from './helpers.js';
import { converse, listening } from './migration-client.js';

type Obj = Record<string, any>;

describe('machine_migrate actions and processes', () => {
  let h: Harness;
  let cn: TestCn;
  let vm: Obj;

  beforeAll(async () => {
    h = await Harness.create();
    cn = await h.addCn();
    const r = await postTask(cn, 'machine_create', provisionParams(cn.uuid));
    expect(r.status).toBe(200);
    vm = r.body.vm;
  });
  afterAll(async () => {
    await h.close();
  });

  const migrate = (params: Obj) => postTask(cn, 'machine_migrate', { migrationTask: { action: 'sync', record: {} }, ...params });

  it('set-create-timestamp rewrites the creation time, and fails as zonecfg does for a VM that is not there', async () => {
    const ts = '2020-02-02T02:02:02.000Z';
    const ok = await migrate({ action: 'set-create-timestamp', vm: { ...vm, create_timestamp: ts }, vm_uuid: vm.uuid });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await postTask(cn, 'machine_load', { uuid: vm.uuid })).body.create_timestamp).toBe(ts);
    const other = newUuid();
    const missing = await migrate({ action: 'set-create-timestamp', vm: { ...vm, create_timestamp: ts }, vm_uuid: other });
    expect(missing.status).toBe(500);
    expect(missing.body.error).toMatch(new RegExp(`^zonecfg failure: .*\\n${other}: No such zone configured`, 's'));
  });

  it('lifts and restores the quota get-filesystem-details reports; unknown datasets fail as zfs does', async () => {
    const details = async () => (await migrate({ action: 'get-filesystem-details', vm })).body;
    expect(await details()).toMatchObject({ quotaStr: String(10 * 1024 ** 3), reservationStr: '0' });
    expect((await migrate({ action: 'remove-zfs-quota', vm })).status).toBe(200);
    expect((await details()).quotaStr).toBe('0');
    expect((await migrate({ action: 'restore-zfs-quota', vm })).status).toBe(200);
    expect((await details()).quotaStr).toBe(String(10 * 1024 ** 3));
    const ghost = { ...vm, zfs_filesystem: `zones/${newUuid()}` };
    const bad = await migrate({ action: 'get-filesystem-details', vm: ghost });
    expect(bad.status).toBe(500);
    expect(bad.body.error).toMatch(/^zfs list failure: .*cannot open 'zones\/[0-9a-f-]+': dataset does not exist/s);
  });

  it('vmadm update actions: booleans as vmadm takes them, its refusal as the error', async () => {
    expect((await migrate({ action: 'set-autoboot', vm_uuid: vm.uuid, value: 'false' })).status).toBe(200);
    expect((await postTask(cn, 'machine_load', { uuid: vm.uuid })).body.autoboot).toBe(false);
    const bad = await migrate({ action: 'set-autoboot', vm_uuid: vm.uuid, value: 'maybe' });
    expect(bad.status).toBe(500);
    expect(bad.body.error).toMatch(/autoboot/);
    // The real task asserts `value` is a string: its child process dies without one.
    const noValue = await migrate({ action: 'set-autoboot', vm_uuid: vm.uuid });
    expect(noValue.status).toBeGreaterThanOrEqual(400);
    expect(noValue.text).toContain('Child task process machine_migrate did not terminate cleanly. (1)');
  });

  it('a receiving process answers its commands, refuses an incomplete stream and ignores garbage', async () => {
    const r = await migrate({ action: 'receive', uuid: vm.uuid, vm_uuid: vm.uuid });
    expect(r.status).toBe(200);
    const { host, port, pid } = r.body;
    const fs = vm.zfs_filesystem as string;
    const answers = await converse(
      host,
      port,
      [
        { raw: 'this is not json' },
        { command: 'ping' },
        { command: 'get-zfs-snapshot-names', zfsFilesystem: fs },
        { command: 'get-zfs-snapshot-names', zfsFilesystem: 'zones/nothing-here' },
        { command: 'get-zfs-resume-token', zfsFilesystem: fs },
        { command: 'status' },
        { command: 'frobnicate' },
      ],
      6,
    );
    expect(answers).toEqual([
      { type: 'response', command: 'ping', eventId: 2, pid, version: '1.0.0' },
      { type: 'response', command: 'get-zfs-snapshot-names', eventId: 3, names: [] },
      { type: 'response', command: 'get-zfs-snapshot-names', eventId: 4, names: [] },
      { type: 'response', command: 'get-zfs-resume-token', eventId: 5, token: '' },
      { type: 'error', command: 'status', eventId: 6, message: 'Not Implemented', version: '1.0.0' },
      { type: 'error', command: 'frobnicate', eventId: 7, message: 'Unknown command', version: '1.0.0' },
    ]);

    // A stream cut short: zfs receive fails, nothing is recorded.
    const header = { mockcloud: 'zfs-send', zfsFilesystem: fs, from: '', to: 'vm-migration-1', snapshots: ['vm-migration-1'], size: 100_000 };
    const sync = { command: 'sync', zfsFilesystem: fs, isFirstSync: true, resumeSync: false };
    const cut = await converse(host, port, [sync], 2, Buffer.from(`${JSON.stringify(header)}\n${'x'.repeat(10)}`));
    expect(cut[0]).toMatchObject({ type: 'response', command: 'sync' });
    expect(cut[1]).toMatchObject({ type: 'error', command: 'sync', message: 'zfs receive exited with code: 1' });
    const names = await converse(host, port, [{ command: 'get-zfs-snapshot-names', zfsFilesystem: fs }], 1);
    expect(names[0]!.names).toEqual([]);

    // A whole one is received and its snapshot recorded.
    const line = Buffer.from(`${JSON.stringify({ ...header, size: 5000 })}\n`);
    const full = await converse(host, port, [sync], 2, Buffer.concat([line, Buffer.alloc(5000 - line.length)]));
    expect(full[1]).toEqual({ type: 'sync-success' });
    const after = await converse(host, port, [{ command: 'get-zfs-snapshot-names', zfsFilesystem: fs }], 1);
    expect(after[0]!.names).toEqual(['vm-migration-1']);

    const stopped = await converse(host, port, [{ command: 'stop' }], 1);
    expect(stopped).toEqual([{ type: 'response', command: 'stop', eventId: 1 }]);
    expect(await listening(host, port)).toBe(false);
  });

  it('a sending process reports a receiver it cannot reach as a sync error, then ends', async () => {
    const record = { vm_uuid: vm.uuid, target_vm_uuid: vm.uuid };
    const r = await postTask(cn, 'machine_migrate', {
      action: 'sync',
      uuid: vm.uuid,
      vm_uuid: vm.uuid,
      vm,
      migrationTask: { action: 'sync', record },
    });
    expect(r.status).toBe(200);
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const answers = await converse(r.body.host, r.body.port, [{ command: 'sync', host: '127.0.0.1', port: deadPort }], 1);
    expect(answers.find((e) => e.command === 'sync')).toMatchObject({ type: 'error', message: expect.stringMatching(/^sync error: .*ECONNREFUSED/) });
    expect(await listening(r.body.host, r.body.port)).toBe(false);
  });

  it('keeps received sync snapshots across a restart of the CN (kept in the server dir)', async () => {
    const t = await h.addCn();
    const made = await postTask(t, 'machine_create', provisionParams(t.uuid));
    const fs = made.body.vm.zfs_filesystem as string;
    const receive = async (at: TestCn) => (await postTask(at, 'machine_migrate', { action: 'receive', uuid: made.body.vm.uuid, migrationTask: { action: 'sync', record: {} } })).body;
    const r1 = await receive(t);
    const header = { mockcloud: 'zfs-send', zfsFilesystem: fs, from: '', to: 'vm-migration-1', snapshots: ['vm-migration-1'], size: 5000 };
    const line = Buffer.from(`${JSON.stringify(header)}\n`);
    const sync = { command: 'sync', zfsFilesystem: fs, isFirstSync: true, resumeSync: false };
    expect((await converse(r1.host, r1.port, [sync], 2, Buffer.concat([line, Buffer.alloc(5000 - line.length)])))[1]).toEqual({ type: 'sync-success' });

    await h.server.detach(t.uuid);
    const address = await h.server.attach(t.cn);
    const again: TestCn = { ...t, url: `http://${address.ip}:${address.port}` };
    const r2 = await receive(again);
    const names = await converse(r2.host, r2.port, [{ command: 'get-zfs-snapshot-names', zfsFilesystem: fs }], 1);
    expect(names[0]!.names).toEqual(['vm-migration-1']);
  });

  it('migration processes end when their CN is detached', async () => {
    const other = await h.addCn();
    const r = await postTask(other, 'machine_migrate', { action: 'receive', uuid: vm.uuid, vm_uuid: vm.uuid, migrationTask: { action: 'sync', record: {} } });
    expect(r.status).toBe(200);
    expect(await listening(r.body.host, r.body.port)).toBe(true);
    await h.server.detach(other.uuid);
    expect(await listening(r.body.host, r.body.port)).toBe(false);
  });
});
