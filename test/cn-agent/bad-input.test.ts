/**
 * Bad input to POST /tasks: malformed JSON, bodies over the size limit (declared or chunked),
 * ids that are not UUIDs or try to walk out of the CN's directory, params of the wrong
 * types. Each gets a clear 4xx with a restify-style body, nothing is written anywhere under
 * the data dir, and the server keeps serving.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { Harness, history, listTree, postTask, provisionParams, request, type TestCn } from './helpers.js';

describe('bad input', () => {
  let h: Harness;
  let cn: TestCn;
  let vmUuid: string;

  beforeAll(async () => {
    h = await Harness.create({ maxBodyBytes: 64 * 1024 });
    cn = await h.addCn();
    const params = provisionParams(cn.uuid);
    vmUuid = params.uuid as string;
    expect((await postTask(cn, 'machine_create', params)).status).toBe(200);
    // Let the create's task log land before trees are compared.
    await new Promise((r) => setTimeout(r, 100));
  });
  afterAll(async () => {
    await h.close();
  });

  async function stillServing(): Promise<void> {
    const r = await postTask(cn, 'nop', {});
    expect(r.status).toBe(200);
  }

  it('answers malformed JSON with 400 InvalidContent', async () => {
    const r = await request(`${cn.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body: '{"task": "nop", "params": {',
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('InvalidContent');
    expect(r.body.message).toMatch(/^Invalid JSON: /);
    await stillServing();
  });

  it('answers a JSON body that is not an object with 400', async () => {
    for (const body of ['[1,2]', '"nop"', '42', 'null']) {
      const r = await request(`${cn.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
        body,
      });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ code: 'InvalidContent', message: 'Request body must be a JSON object' });
    }
  });

  it('answers a body over the limit with 413, declared or chunked, and keeps serving', async () => {
    const big = JSON.stringify({ task: 'nop', params: { pad: 'x'.repeat(100 * 1024) } });
    const r = await request(`${cn.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body: big,
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ code: 'RequestEntityTooLarge', message: `Request body size exceeds ${64 * 1024}` });

    const url = new URL(cn.url);
    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: url.hostname, port: url.port, method: 'POST', path: '/tasks', headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid } },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      // Stream without a content-length; stop once the server has answered.
      let sent = 0;
      const pump = () => {
        while (sent < 200 * 1024) {
          sent += 8 * 1024;
          if (!req.write('x'.repeat(8 * 1024))) {
            req.once('drain', pump);
            return;
          }
        }
        req.end();
      };
      req.on('response', () => undefined);
      pump();
    }).catch((err: Error) => ({ status: -1, body: err.message }));
    // Either the 413 arrived or the server cut the connection after refusing the body.
    if (chunked.status !== -1) {
      expect(chunked.status).toBe(413);
      expect(JSON.parse(chunked.body).code).toBe('RequestEntityTooLarge');
    }
    await stillServing();
  });

  // A real task checks its own params once started and fails with fatal() (sdc-cn-agent
  // lib/task_agent/task.js): 500 {error}, never an HTTP-level refusal.
  it('fails tasks whose ids are not UUIDs or walk out of the CN directory, writing nothing', async () => {
    const before = await listTree(h.dataDir);
    const tricks = ['../../../../tmp/evil', '../sysinfo', `${vmUuid}/../../sysinfo`, '', 'A'.repeat(5000), '00000000-0000-0000-0000-00000000000g'];
    for (const bad of tricks) {
      for (const task of ['machine_create', 'machine_load', 'machine_boot', 'machine_shutdown', 'machine_reboot', 'machine_kill', 'machine_update', 'machine_destroy', 'machine_info', 'machine_proc']) {
        const params = task === 'machine_create' ? { ...provisionParams(cn.uuid), uuid: bad } : { uuid: bad };
        const r = await postTask(cn, task, params);
        expect(r.status, `${task} ${bad}`).toBe(500);
        expect(r.body).toEqual({ error: expect.stringMatching(/params\.uuid must be a UUID/) });
      }
      // A bad UUID is still a fine snapshot or agent name; the path tricks are not.
      if (/^[0-9a-f-]+g$/.test(bad)) continue;
      for (const [task, params] of [
        ['machine_create_snapshot', { uuid: vmUuid, snapshot_name: bad }],
        ['machine_delete_snapshot', { uuid: vmUuid, snapshot_name: bad }],
        ['machine_rollback_snapshot', { uuid: vmUuid, snapshot_name: bad }],
        ['machine_reprovision', { uuid: vmUuid, image_uuid: bad }],
        ['image_ensure_present', { image_uuid: bad }],
        ['image_get', { uuid: bad }],
        ['agent_install', { image_uuid: bad }],
        ['agents_uninstall', { agents: [bad] }],
      ] as const) {
        const r = await postTask(cn, task, params);
        expect(r.status, `${task} ${bad}`).toBe(500);
        expect(r.body).toEqual({ error: expect.any(String) });
      }
    }
    expect(await listTree(h.dataDir)).toEqual(before);
    // The VM those tricks aimed near is intact.
    expect(cn.cn.vms.get(vmUuid)?.state).toBe('running');
    await stillServing();
  });

  it('fails tasks given params of the wrong types with a clear error and a history entry, writing nothing', async () => {
    const before = await listTree(h.dataDir);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['machine_load', { uuid: vmUuid, include_dni: 'yes' }, /include_dni must be a boolean/],
      ['machine_boot', { uuid: vmUuid, update: 'alias=x' }, /update must be an object/],
      ['machine_boot', { uuid: vmUuid, idempotent: 1 }, /idempotent must be a boolean/],
      ['machine_reboot', { uuid: vmUuid, timeout: { s: 1 } }, /Invalid type: "object" for timeout/],
      ['machine_kill', { uuid: vmUuid, signal: ['KILL'] }, /signal/],
      ['machine_create', { ...provisionParams(cn.uuid), nics: 'eth0' }, /nics must be an array/],
      ['machine_create', { ...provisionParams(cn.uuid), nics: [5] }, /nics must be an array of objects/],
      ['machine_create', { ...provisionParams(cn.uuid), brand: 7 }, /brand must be a string/],
      ['machine_info', { uuid: vmUuid, types: 'vnc' }, /types must be an array/],
      ['nop', { sleep: 'forever' }, /sleep must be a number/],
      ['nop', { error: { message: 'x' } }, /error must be a string/],
      ['agents_uninstall', { agents: 'cn-agent' }, /agents must be an array/],
      ['server_update_nics', { nics: { mac: 'x' } }, /nics must be an array/],
      ['zfs_get_properties', { properties: 'all' }, /properties must be an array/],
      ['zfs_list_snapshots', { dataset: 5 }, /dataset must be a string/],
      ['command_execute', { script: ['ls'] }, /script must be a string/],
      ['recovery_config', { action: ['stage'] }, /action must be a string/],
      ['image_ensure_present', {}, /Missing key 'image_uuid'/],
    ];
    for (const [task, params, message] of cases) {
      const r = await postTask(cn, task, params);
      expect(r.status, `${task} ${JSON.stringify(params).slice(0, 60)}`).toBe(500);
      expect(r.body).toEqual({ error: expect.stringMatching(message) });
      const entry = (await history(cn)).at(-1)!;
      expect(entry).toMatchObject({ task, params, status: 'finished', errorCount: 1 });
      expect(entry.messages.map((m: { name?: string }) => m.name)).toEqual(['progress', 'start', 'error', 'progress', 'finish']);
    }
    expect(await listTree(h.dataDir)).toEqual(before);
    await stillServing();
  });

  it('keeps params with a __proto__ key inert', async () => {
    const body = '{"task":"nop","params":{"__proto__":{"polluted":true},"x":1}}';
    const r = await request(`${cn.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body,
    });
    expect(r.status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const m = await postTask(cn, 'machine_update', JSON.parse(`{"uuid":"${vmUuid}","__proto__":{"alias":"evil"}}`));
    expect(cn.cn.vms.get(vmUuid)?.alias).toBe('test-vm');
    expect([200, 500]).toContain(m.status);
  });

  it('never lets one CN\'s bad input disturb another CN', async () => {
    const other = await h.addCn();
    await request(`${cn.url}/tasks`, { method: 'POST', headers: { 'x-server-uuid': cn.uuid }, body: '{{{' });
    await postTask(cn, 'machine_load', { uuid: '../x' });
    const r = await postTask(other, 'machine_load', { uuid: newUuid() });
    expect(r.status).toBe(500);
    expect(r.body.details).toEqual({ restCode: 'VmNotFound' });
    expect((await postTask(other, 'nop', {})).status).toBe(200);
  });
});
