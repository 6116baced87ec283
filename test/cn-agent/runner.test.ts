/**
 * The task runner as a consumer observes it: the event sequence recorded in /history (real
 * entry shape), the 16-entry cap, task log files, per-VM serialisation, the time limit, the
 * fault-injection seam, and that one failing task harms nothing else.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FaultInjector, validateFaultSpec } from '../../src/agents/cn-agent/index.js';
import { KeyedLock } from '../../src/agents/cn-agent/keyed-lock.js';
import { Harness, history, postTask, provisionParams, type TestCn } from './helpers.js';

const names = (entry: { messages: { name?: string; type: string }[] }) =>
  entry.messages.map((m) => (m.type === 'event' ? m.name : m.type));

describe('task runner', () => {
  let h: Harness;
  let a: TestCn;
  let b: TestCn;

  beforeAll(async () => {
    h = await Harness.create();
    a = await h.addCn();
    b = await h.addCn();
  });
  afterAll(async () => {
    await h.close();
  });
  afterEach(() => {
    h.server.faults.clear();
  });

  it('records a task in /history with the real entry shape and event sequence', async () => {
    const reqId = 'req-shape-1';
    await postTask(a, 'nop', { foo: 'bar' }, { requestId: reqId });
    const entry = (await history(a)).at(-1);
    expect(Object.keys(entry).sort()).toEqual(
      ['errorCount', 'finished_at', 'log', 'messages', 'params', 'pid', 'started_at', 'status', 'task'].sort(),
    );
    expect(entry).toMatchObject({ task: 'nop', params: { foo: 'bar' }, status: 'finished', errorCount: 0, pid: process.pid });
    expect(Date.parse(entry.started_at)).toBeLessThanOrEqual(Date.parse(entry.finished_at));
    expect(names(entry)).toEqual(['progress', 'start', 'progress', 'finish']);
    // task.js stamps params.req_id on every event: nothing, when the params carry none.
    expect(entry.messages[0]).toMatchObject({ type: 'event', name: 'progress', event: { value: 0 } });
    expect(entry.messages[2].event.value).toBe(100);
    expect(entry.messages[3].event).toEqual({});
    for (const m of entry.messages) expect(Number.isNaN(Date.parse(m.timestamp))).toBe(false);
    expect(entry.log).toEqual([]);
  });

  it('records a failed task: error event, errorCount, still "finished", and replies 500', async () => {
    const r = await postTask(a, 'nop', { error: 'it broke', req_id: 'req-err-1' });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: 'it broke', req_id: 'req-err-1' });
    const entry = (await history(a)).at(-1);
    expect(entry.status).toBe('finished');
    expect(entry.errorCount).toBe(1);
    expect(names(entry)).toEqual(['progress', 'start', 'error', 'progress', 'finish']);
    expect(entry.messages[2].event).toEqual({ error: 'it broke', req_id: 'req-err-1' });
  });

  it('records the start:/end: steps of machine_create with their progress', async () => {
    const params = provisionParams(a.uuid);
    const r = await postTask(a, 'machine_create', params);
    expect(r.status).toBe(200);
    const entry = (await history(a)).at(-1);
    expect(names(entry)).toEqual([
      'progress', 'start',
      'start:pre_check', 'progress', 'end:pre_check',
      'start:ensure_dataset_present', 'progress', 'end:ensure_dataset_present',
      'start:fetch_dataset', 'progress', 'end:fetch_dataset',
      'start:add_firewall_rules', 'progress', 'end:add_firewall_rules',
      'start:create_machine', 'progress', 'end:create_machine',
      'finish',
    ]);
    const progress = entry.messages.filter((m: any) => m.name === 'progress').map((m: any) => m.event.value);
    expect(progress).toEqual([0, 20, 30, 50, 60, 100]);
    const step = entry.messages.find((m: any) => m.name === 'start:pre_check');
    expect(step.event).toEqual({ timestamp: expect.any(String), description: 'Pre-flight sanity check' });
    expect(entry.messages.at(-1).event.vm.uuid).toBe(params.uuid);
    // What the task logged, in the real entry-log shape.
    // vmadm's warning about the CNAPI params it does not take (VM.js normalizePayload).
    const warned = entry.log.find((l: any) => l.level === 'warn' && l.message[0]?.removed);
    expect(warned).toMatchObject({ level: 'warn', type: 'message', timestamp: expect.any(String) });
    expect(warned.message[0]).toMatchObject({ vm: params.uuid, action: 'create' });
    expect(warned.message[0].removed).toEqual(expect.arrayContaining(['server_uuid', 'dataset_url', 'nics.*.belongs_to_uuid']));
  });

  it('skips fetch_dataset for an image the CN already has (sdc-cn-agent machine_create.js)', async () => {
    const params = provisionParams(a.uuid);
    expect((await postTask(a, 'machine_create', params)).status).toBe(200);
    const again = provisionParams(a.uuid);
    expect((await postTask(a, 'machine_create', again)).status).toBe(200);
    const entry = (await history(a)).at(-1);
    expect(names(entry).filter((n) => n?.startsWith('start:'))).toEqual([
      'start:pre_check', 'start:ensure_dataset_present', 'start:add_firewall_rules', 'start:create_machine',
    ]);
    expect(entry.log.map((l: any) => l.message[0])).toContain(`Dataset zones/${String(again.image_uuid)} exists.`);
  });

  it('keeps only the 16 most recent tasks', async () => {
    const c = await h.addCn();
    for (let i = 0; i < 20; i++) await postTask(c, 'nop', { i });
    const entries = await history(c);
    expect(entries).toHaveLength(16);
    expect(entries.map((e) => e.params.i)).toEqual(Array.from({ length: 16 }, (_, k) => k + 4));
  });

  it('appends each task\'s bunyan records, together, to the shared task log', async () => {
    const c = await h.addCn();
    const d = await h.addCn();
    await Promise.all([
      postTask(c, 'nop', { logged: true }, { requestId: 'req-log-1' }),
      postTask(d, 'nop', { logged: true }, { requestId: 'req-log-2' }),
    ]);
    const file = path.join(h.dataDir, 'logs', 'cn-agent-tasks.log');
    // Records are appended as the task ends, right after the reply.
    let lines: Record<string, unknown>[] = [];
    for (let i = 0; i < 50 && new Set(lines.map((l) => l.req_id)).size < 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
      lines = (await fsp.readFile(file, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
    }
    const mine = lines.filter((l) => l.req_id === 'req-log-1');
    expect(mine.length).toBeGreaterThan(0);
    for (const rec of mine) {
      expect(rec).toMatchObject({ v: 0, name: 'cn-agent-task', task: 'nop', req_id: 'req-log-1', server: c.uuid });
      expect(typeof rec.level).toBe('number');
      expect(typeof rec.msg).toBe('string');
    }
    expect(lines.filter((l) => l.req_id === 'req-log-2').every((l) => l.server === d.uuid)).toBe(true);
    // One task's records are contiguous.
    const first = lines.findIndex((l) => l.req_id === 'req-log-1');
    expect(lines.slice(first, first + mine.length).every((l) => l.req_id === 'req-log-1')).toBe(true);
    // No file per task.
    await expect(fsp.readdir(c.cn.paths.taskLogs)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('serialises tasks on one VM: a destroy waits for an in-flight create', async () => {
    const params = provisionParams(a.uuid);
    h.server.faults.set({ server: a.uuid, task: 'machine_create', delayMs: 300 });
    const create = postTask(a, 'machine_create', params);
    // Give the create time to take the VM's lock before the destroy arrives.
    await new Promise((r) => setTimeout(r, 50));
    const destroy = postTask(a, 'machine_destroy', { uuid: params.uuid });
    const [c, d] = await Promise.all([create, destroy]);
    expect(c.status).toBe(200);
    expect(d.status).toBe(200);
    // Had the destroy not waited, it would have found nothing and the VM would remain.
    expect(a.cn.vms.get(params.uuid as string, { include_dni: true })).toBeUndefined();
    const entries = (await history(a)).slice(-2);
    expect(entries.map((e) => e.task)).toEqual(['machine_create', 'machine_destroy']);
    expect(Date.parse(entries[1].messages[0].timestamp)).toBeGreaterThanOrEqual(Date.parse(entries[0].finished_at));
  });

  it('does not serialise tasks on different VMs', async () => {
    const p1 = provisionParams(a.uuid);
    const p2 = provisionParams(a.uuid);
    h.server.faults.set({ server: a.uuid, task: 'machine_create', delayMs: 300 });
    const [r1, r2] = await Promise.all([postTask(a, 'machine_create', p1), postTask(a, 'machine_create', p2)]);
    expect([r1.status, r2.status]).toEqual([200, 200]);
    // Both had started before either finished: they overlapped.
    const [e1, e2] = (await history(a)).slice(-2);
    const startOf = (e: any) => Date.parse(e.messages.find((m: any) => m.name === 'start').timestamp);
    expect(startOf(e2)).toBeLessThan(Date.parse(e1.finished_at));
    expect(startOf(e1)).toBeLessThan(Date.parse(e2.finished_at));
  });

  it('injects an error fleet-wide, per task, per CN, and removes it again', async () => {
    const rule = h.server.faults.set({ task: 'nop', error: 'injected failure' });
    const ra = await postTask(a, 'nop', {});
    const rb = await postTask(b, 'nop', {});
    expect(ra.status).toBe(500);
    expect(ra.body.error).toBe('injected failure');
    expect(rb.status).toBe(500);
    // Other tasks are untouched.
    expect((await postTask(a, 'server_sysinfo', {})).status).toBe(200);
    expect(h.server.faults.list()[0]).toMatchObject({ id: rule.id, hits: 2 });
    h.server.faults.remove(rule.id);
    expect((await postTask(a, 'nop', {})).status).toBe(200);

    h.server.faults.set({ server: b.uuid, error: 'only b' });
    expect((await postTask(a, 'nop', {})).status).toBe(200);
    const onlyB = await postTask(b, 'server_sysinfo', {});
    expect(onlyB.status).toBe(500);
    expect(onlyB.body.error).toBe('only b');
  });

  it('injects a delay, holding the reply like a slow CN', async () => {
    h.server.faults.set({ server: b.uuid, task: 'nop', delayMs: 250 });
    const t0 = Date.now();
    const r = await postTask(b, 'nop', {});
    expect(r.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
  });

  it('applies a rule with its probability (0 never, 1 always)', async () => {
    h.server.faults.set({ task: 'nop', error: 'never', probability: 0 });
    for (let i = 0; i < 5; i++) expect((await postTask(a, 'nop', {})).status).toBe(200);
    const inj = new FaultInjector(() => 0.5);
    inj.set({ task: 'nop', error: 'half', probability: 0.4 });
    expect(inj.effectFor(a.uuid, 'nop')).toBeUndefined();
    inj.set({ task: 'nop', delayMs: 10, probability: 0.6 });
    expect(inj.effectFor(a.uuid, 'nop')).toMatchObject({ delayMs: 10 });
  });

  it('validates fault rules as the control API will pass them', () => {
    expect(() => validateFaultSpec({ task: 'nop' })).toThrow(/delayMs, error or both/);
    expect(() => validateFaultSpec({ server: 'not-a-uuid', error: 'x' })).toThrow(/server/);
    expect(() => validateFaultSpec({ error: 'x', probability: 2 })).toThrow(/probability/);
    expect(() => validateFaultSpec({ error: 'x', bogus: 1 })).toThrow(/unknown key/);
    expect(() => validateFaultSpec({ delayMs: -1 })).toThrow(/delayMs/);
    expect(validateFaultSpec({ task: 'nop', delayMs: 5 })).toEqual({ task: 'nop', delayMs: 5 });
  });

  it('one task throwing fails only that task (history "failed"); its CN and the others keep working', async () => {
    // A store that throws where no task expects it: the task crashes.
    const vms = b.cn.vms as unknown as { list: (...x: unknown[]) => unknown };
    const original = vms.list;
    vms.list = () => {
      throw new TypeError('store exploded');
    };
    try {
      const r = await postTask(b, 'zfs_list_datasets', {}, { requestId: 'req-crash' });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: 'store exploded' });
    } finally {
      vms.list = original;
    }
    const entry = (await history(b)).at(-1);
    expect(entry.status).toBe('failed');
    expect(entry.messages.some((m: any) => m.type === 'exception' && m.error.message === 'store exploded')).toBe(true);
    expect((await postTask(b, 'nop', {})).status).toBe(200);
    expect((await postTask(a, 'nop', {})).status).toBe(200);
    expect((await postTask(b, 'zfs_list_datasets', {})).status).toBe(200);
  });
});

describe('task time limit and detach', () => {
  it('fails a task that runs past the time limit with the real message, and aborts it', async () => {
    const h = await Harness.create({ taskTimeoutSeconds: 1 });
    try {
      const c = await h.addCn();
      const t0 = Date.now();
      const r = await postTask(c, 'nop', { sleep: 30 }, { requestId: 'req-timeout' });
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: 'child task process timed out after 1 seconds' });
      const entry = (await history(c)).at(-1);
      expect(entry.status).toBe('failed');
      expect(entry.finished_at).toBeDefined();
      expect(h.server.tasksInFlight).toBe(0);
      expect((await postTask(c, 'nop', {})).status).toBe(200);
    } finally {
      await h.close();
    }
  });

  it('detaching a CN answers its running tasks and frees it; other CNs are unharmed', async () => {
    const h = await Harness.create();
    try {
      const c = await h.addCn();
      const other = await h.addCn();
      const pending = postTask(c, 'nop', { sleep: 60 }).catch((err: Error) => ({ status: -1, body: err.message }));
      await new Promise((r) => setTimeout(r, 100));
      expect(h.server.tasksInFlight).toBe(1);
      await h.server.detach(c.uuid);
      const r = await pending;
      // Either the 500 "task aborted" reply arrived or the connection was cut after it.
      if (r.status !== -1) {
        expect(r.status).toBe(500);
        expect(String((r.body as { error: string }).error)).toMatch(/aborted/);
      }
      expect(h.server.tasksInFlight).toBe(0);
      expect((await postTask(other, 'nop', {})).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});

describe('KeyedLock', () => {
  it('grants one key at a time in arrival order and releases waiters on abort', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const r1 = await lock.acquire(['vm:1']);
    const p2 = lock.acquire(['vm:1']).then((r) => {
      order.push('second');
      return r;
    });
    const ac = new AbortController();
    const p3 = lock.acquire(['vm:1'], ac.signal);
    ac.abort(new Error('gave up'));
    await expect(p3).rejects.toThrow('gave up');
    order.push('first done');
    r1();
    const r2 = await p2;
    expect(order).toEqual(['first done', 'second']);
    r2();
    expect(lock.heldCount).toBe(0);
  });
});
