/**
 * cn-agent's HTTP surface as CNAPI sees it: routing of each request to its mock CN by the
 * socket that accepted it, POST /tasks and its error codes, /history, /pause, /resume, the
 * response headers, restify's answers for unknown routes, and what CNAPI's own client
 * (restify-clients' JSON client, as sdc-cnapi uses it) gets back.
 */
import { createRequire } from 'node:module';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuid } from '../../src/common/uuid.js';
import { Harness, history, postTask, request, type TestCn } from './helpers.js';

const require = createRequire(import.meta.url);

describe('cn-agent HTTP API', () => {
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

  // task.js stamps params.req_id (undefined unless the params carry one) on every event.
  it('runs a task and replies 200 with its result, echoing x-request-id; req_id only from params', async () => {
    const reqId = newUuid();
    const r = await postTask(a, 'nop', {}, { requestId: reqId });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({});
    const withId = await postTask(a, 'nop', { req_id: 'from-params' }, { requestId: reqId });
    expect(withId.body).toEqual({ req_id: 'from-params' });
    expect(r.headers.get('x-request-id')).toBe(reqId);
    expect(r.headers.get('server')).toBe('Compute Node Agent');
    expect(r.headers.get('x-server-name')).toBe(os.hostname());
    expect(Number(r.headers.get('x-response-time'))).toBeGreaterThanOrEqual(0);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
  });

  it('generates a request id when the caller sends none', async () => {
    const res = await fetch(`${a.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': a.uuid },
      body: JSON.stringify({ task: 'nop', params: {} }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('routes each request to the CN whose socket accepted it', async () => {
    await postTask(a, 'nop', { marker: 'for-a' });
    await postTask(b, 'nop', { marker: 'for-b' });
    const ha = await history(a);
    const hb = await history(b);
    expect(ha.some((e) => e.params.marker === 'for-a')).toBe(true);
    expect(ha.some((e) => e.params.marker === 'for-b')).toBe(false);
    expect(hb.some((e) => e.params.marker === 'for-b')).toBe(true);
    expect(hb.some((e) => e.params.marker === 'for-a')).toBe(false);
  });

  it('answers 404 with an empty body when x-server-uuid names another server', async () => {
    const r = await postTask(a, 'nop', {}, { serverUuid: b.uuid });
    expect(r.status).toBe(404);
    expect(r.text).toBe('');
    const r2 = await postTask(a, 'nop', {}, { serverUuid: newUuid() });
    expect(r2.status).toBe(404);
    expect(r2.text).toBe('');
  });

  it('serves the CN itself when x-server-uuid is absent', async () => {
    const r = await postTask(a, 'nop', {}, { serverUuid: null });
    expect(r.status).toBe(200);
  });

  it('answers 404 with an empty body until the CN has registered, then runs tasks', async () => {
    const c = await h.addCn({ registered: false });
    const before = await postTask(c, 'nop', {});
    expect(before.status).toBe(404);
    expect(before.text).toBe('');
    expect(await history(c)).toEqual([]);
    c.cn.registered = true;
    const after = await postTask(c, 'nop', {});
    expect(after.status).toBe(200);
  });

  it('refuses tasks with 503 while paused and accepts them again after resume', async () => {
    const p = await request(`${a.url}/pause`, { method: 'POST' });
    expect(p.status).toBe(204);
    expect(p.text).toBe('');
    expect(a.cn.draining).toBe(true);
    const r = await postTask(a, 'nop', {});
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ code: 'ServiceUnavailable', message: 'CN Agent is not accepting tasks for maintenance' });
    // Pausing one CN leaves the others alone.
    expect((await postTask(b, 'nop', {})).status).toBe(200);
    const res = await request(`${a.url}/resume`, { method: 'POST', body: '{"ignored": true}' });
    expect(res.status).toBe(204);
    expect(a.cn.draining).toBe(false);
    expect((await postTask(a, 'nop', {})).status).toBe(200);
  });

  it("answers 409 InvalidArgument for a missing 'task' or 'params'", async () => {
    const noTask = await postTask(a, undefined, {});
    expect(noTask.status).toBe(409);
    expect(noTask.body).toEqual({ code: 'InvalidArgument', message: "Missing key 'task'" });
    const noParams = await postTask(a, 'nop', undefined);
    expect(noParams.status).toBe(409);
    expect(noParams.body).toEqual({ code: 'InvalidArgument', message: "Missing key 'params'" });
  });

  it('takes the task name from the query string too', async () => {
    const r = await postTask(a, undefined, { marker: 'query' }, { query: '?task=nop' });
    expect(r.status).toBe(200);
    expect((await history(a)).at(-1)).toMatchObject({ task: 'nop', params: { marker: 'query' } });
  });

  it('answers 404 ResourceNotFound for an unknown task', async () => {
    const r = await postTask(a, 'machine_frobnicate', {});
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 'ResourceNotFound', message: "Unknown task, 'machine_frobnicate'" });
    const proto = await postTask(a, '__proto__', {});
    expect(proto.status).toBe(404);
  });

  // task_agent.js checks only that the keys exist and the task is in its table; a task given
  // params that are not an object fails on its own, and a task name is looked up as a string.
  it('fails a task whose params are not an object; a task name that is not a string is unknown', async () => {
    for (const params of [[], 'x', 5, null]) {
      const r = await postTask(a, 'nop', params);
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: 'params must be an object' });
      expect((await history(a)).at(-1)).toMatchObject({ task: 'nop', params, errorCount: 1 });
    }
    const r = await postTask(a, 42 as unknown as string, {});
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 'ResourceNotFound', message: "Unknown task, '42'" });
  });

  it('serves GET /history as an array, [] before any task', async () => {
    const c = await h.addCn();
    const r = await request(`${c.url}/history`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual([]);
  });

  it("answers unknown routes and methods with restify's 404 and 405", async () => {
    const r = await request(`${a.url}/ping`);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 'ResourceNotFound', message: '/ping does not exist' });
    expect(r.headers.get('server')).toBe('Compute Node Agent');
    const m = await request(`${a.url}/tasks`);
    expect(m.status).toBe(405);
    expect(m.body).toEqual({ code: 'MethodNotAllowed', message: 'GET is not allowed' });
  });

  it('gives a CN its own loopback IP when asked, on the same port number as another CN', async () => {
    // The port picked free on 127.0.0.2 may be held on 127.0.0.3 by another test file running
    // meanwhile: then pick another one (a few tries; each collision is a rare coincidence).
    let pair: { c: TestCn; d: TestCn } | undefined;
    const collisions: string[] = [];
    for (let attempt = 0; attempt < 5 && !pair; attempt++) {
      const c = await h.addCn({ ip: '127.0.0.2' });
      const port = Number(new URL(c.url).port);
      try {
        pair = { c, d: await h.addCn({ ip: '127.0.0.3', port }) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
        collisions.push(`127.0.0.3:${port}`);
        await h.server.detach(c.uuid);
      }
    }
    if (!pair) throw new Error(`every port tried was taken on 127.0.0.3: ${collisions.join(', ')}`);
    const { c, d } = pair;
    expect(new URL(d.url).port).toBe(new URL(c.url).port);
    await postTask(c, 'nop', { marker: 'c' });
    await postTask(d, 'nop', { marker: 'd' });
    expect((await history(c)).map((e) => e.params.marker)).toEqual(['c']);
    expect((await history(d)).map((e) => e.params.marker)).toEqual(['d']);
  });

  it('sets the agent address on the CN, so CNAPI (triton-netconfig) finds this agent from sysinfo', async () => {
    const url = new URL(a.url);
    expect(a.cn.agentAddress).toEqual({ ip: url.hostname, port: Number(url.port) });
    expect(a.cn.sysinfo['CN Agent IP']).toBe(url.hostname);
    expect(a.cn.sysinfo['CN Agent Port']).toBe(Number(url.port));
    const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };
    const sysinfo = JSON.parse(JSON.stringify(a.cn.sysinfo));
    const ip = netconfig.agentIpFromSysinfo(sysinfo);
    const port = Number.parseInt(String(sysinfo['CN Agent Port']), 10);
    const r = await postTask({ url: `http://${ip}:${port}`, uuid: a.uuid }, 'nop', { marker: 'via-netconfig' });
    expect(r.status).toBe(200);
    expect((await history(a)).at(-1).params.marker).toBe('via-netconfig');
  });

  it("works with CNAPI's own client: restify-clients' JSON client, as sendTaskRequest uses it", async () => {
    const restifyClients = require('restify-clients');
    const client = restifyClients.createJsonClient({
      url: a.url,
      requestTimeout: 3600 * 1000,
      connectTimeout: 3600 * 1000,
      headers: { 'x-server-uuid': a.uuid, 'x-request-id': 'cnapi-req-1' },
      agent: false,
    });
    try {
      const ok = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
        client.post('/tasks', { task: 'nop', params: {} }, (err: Error | null, _req: unknown, res: { statusCode: number }, obj: unknown) =>
          err ? reject(err) : resolve({ status: res.statusCode, body: obj }),
        );
      });
      expect(ok).toEqual({ status: 200, body: {} });
      // A task error reaches CNAPI as an error whose body carries `error` (what it stores).
      const failed = await new Promise<{ status: number; body: any }>((resolve) => {
        client.post('/tasks', { task: 'nop', params: { error: 'boom' } }, (err: any, _req: unknown, res: { statusCode: number }, obj: unknown) =>
          resolve({ status: err ? err.statusCode : res.statusCode, body: obj }),
        );
      });
      expect(failed.status).toBe(500);
      expect(failed.body).toEqual({ error: 'boom' });
    } finally {
      client.close();
    }
  });

  it('counts tasks and rejections for mockcloud status', () => {
    const s = h.server.stats() as { cns: number; tasks: { succeeded: number }; rejected: { notRegistered: number } };
    expect(s.cns).toBe(h.server.cnCount);
    expect(s.tasks.succeeded).toBeGreaterThan(5);
    expect(s.rejected.notRegistered).toBeGreaterThan(0);
    expect(h.server.tasksInFlight).toBe(0);
  });
});

describe('cn-agent sockets in a port range', () => {
  it('binds CNs on consecutive free ports of the range and frees them on detach', async () => {
    // A block below Linux's ephemeral range (32768+), where parallel tests' port-0 sockets
    // never land; a random base keeps two runs on one machine apart.
    const lo = 22000 + Math.floor(Math.random() * 9000);
    const h = await Harness.create({ portRange: [lo, lo + 2] });
    try {
      const c1 = await h.addCn();
      const c2 = await h.addCn();
      const ports = [c1, c2].map((c) => Number(new URL(c.url).port));
      for (const p of ports) {
        expect(p).toBeGreaterThanOrEqual(lo);
        expect(p).toBeLessThanOrEqual(lo + 2);
      }
      expect(new Set(ports).size).toBe(2);
      expect((await postTask(c1, 'nop', {})).status).toBe(200);
      await h.server.detach(c1.uuid);
      await expect(fetch(`${c1.url}/history`)).rejects.toThrow();
      expect((await postTask(c2, 'nop', {})).status).toBe(200);
      expect(h.server.cnCount).toBe(1);
    } finally {
      await h.close();
    }
  });
});
