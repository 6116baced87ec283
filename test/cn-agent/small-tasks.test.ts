/**
 * The real agent's small tasks over cn-agent's task API: sleep, test_subtask,
 * machine_screenshot and shutdown_cn_agent_update.
 *
 * Follows sdc-cn-agent lib/backends/smartos/tasks/{sleep,test_subtask,machine_screenshot,
 * shutdown_cn_agent_update}.js, lib/task_agent/task.js (subTask), task_runner.js (what the
 * runner does with a subtask request: it records it, nothing answers), and node-vmadm 1.3.0
 * lib/index.sunos.js (sysrq runs `vmadm sysreq`, which smartos-live src/vm/sbin/vmadm.js
 * refuses with its usage and exit code 2).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { Harness, history, postTask, provisionParams, type TestCn } from './helpers.js';

/** A reply body without `req_id` (which a real agent only echoes from params.req_id). */
function body(b: unknown): Record<string, unknown> {
  const { req_id: _reqId, ...rest } = b as Record<string, unknown>;
  return rest;
}

describe('small tasks', () => {
  let h: Harness;
  let cn: TestCn;

  beforeAll(async () => {
    h = await Harness.create();
    cn = await h.addCn();
  });

  afterAll(async () => {
    await h.close();
  });

  it('sleep waits `timeout` milliseconds, then finishes with nothing', async () => {
    const started = Date.now();
    const r = await postTask(cn, 'sleep', { timeout: 300 });
    expect(r.status).toBe(200);
    expect(body(r.body)).toEqual({});
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const entry = (await history(cn)).at(-1);
    expect(entry).toMatchObject({ task: 'sleep', status: 'finished', params: { timeout: 300 } });
    expect(entry.messages.map((m: { name: string }) => m.name).at(-1)).toBe('finish');
  });

  it("sleep takes the timeout as Node's setTimeout does: a numeric string as is, nonsense as 1 ms", async () => {
    const started = Date.now();
    expect((await postTask(cn, 'sleep', { timeout: '200' })).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect((await postTask(cn, 'sleep', { timeout: 'soon' })).status).toBe(200);
    expect((await postTask(cn, 'sleep', { timeout: -5 })).status).toBe(200);
  });

  it('machine_screenshot fails as on a real CN: vmadm has no `sysreq` command, for every existing VM', async () => {
    for (const brand of ['kvm', 'bhyve', 'joyent-minimal']) {
      const params = provisionParams(cn.uuid, brand === 'joyent-minimal' ? {} : { brand, vcpus: 1, disks: [{ image_uuid: newUuid(), boot: true, size: 10240 }] });
      const created = await postTask(cn, 'machine_create', params);
      expect(created.status, created.text).toBe(200);
      const r = await postTask(cn, 'machine_screenshot', { uuid: params.uuid });
      expect(r.status).toBe(500);
      expect(body(r.body)).toEqual({ error: 'vmadm.sysrq error: vmadm exited with code: 2 signal: null' });
    }
  });

  it('machine_screenshot of a missing VM fails with VmNotFound', async () => {
    const r = await postTask(cn, 'machine_screenshot', { uuid: newUuid() });
    expect(r.status).toBe(500);
    expect(body(r.body)).toEqual({ error: 'vmadm.sysrq error: VM does not exist', details: { restCode: 'VmNotFound' } });
  });

  it('shutdown_cn_agent_update (the end of cn-agent self-update) finishes with nothing', async () => {
    const r = await postTask(cn, 'shutdown_cn_agent_update', {});
    expect(r.status).toBe(200);
    expect(body(r.body)).toEqual({});
    const entry = (await history(cn)).at(-1);
    expect(entry).toMatchObject({ task: 'shutdown_cn_agent_update', status: 'finished', errorCount: 0 });
    expect(entry.messages.filter((m: { name: string }) => m.name === 'progress').map((m: { event: { value: number } }) => m.event.value)).toContain(100);
  });
});

describe('tasks that outlive the task time limit', () => {
  let h: Harness;
  let cn: TestCn;

  beforeAll(async () => {
    h = await Harness.create({ taskTimeoutSeconds: 1 });
    cn = await h.addCn();
  });

  afterAll(async () => {
    await h.close();
  });

  it('sleep without a timeout waits 5 s, so a 1 s limit ends it', async () => {
    const r = await postTask(cn, 'sleep', {});
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('child task process timed out after 1 seconds');
  });

  it('test_subtask asks for a nop subtask that nothing answers, and runs into the limit', async () => {
    const pending = postTask(cn, 'test_subtask', { sleep: 3 });
    // While it waits, its history entry shows the subtask request.
    let entry: any;
    for (let i = 0; i < 50 && !entry; i++) {
      entry = (await history(cn)).find((e: { task: string; messages: { type: string }[] }) => e.task === 'test_subtask' && e.messages.some((m) => m.type === 'subtask'));
      if (!entry) await new Promise((r) => setTimeout(r, 10));
    }
    expect(entry.status).toBe('active');
    const sub = entry.messages.find((m: { type: string }) => m.type === 'subtask');
    expect(sub).toEqual({
      type: 'subtask',
      resource: 'provisioner-v2',
      task: 'nop',
      msg: { random: expect.any(Number), sleep: 3 },
      id: expect.stringMatching(/^[0-9a-f]+$/),
      timestamp: expect.any(String),
    });
    const r = await pending;
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('child task process timed out after 1 seconds');
  });
});
