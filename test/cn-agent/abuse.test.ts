/**
 * What a runaway client or an operator's network can throw at a CN's cn-agent socket, and
 * what must still hold: every task that is counted ends, `/history` (CNAPI's task-history)
 * keeps answering, and the CN keeps serving.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, history, postTask, request, type TestCn } from './helpers.js';

describe('cn-agent under abuse', () => {
  let h: Harness;
  let cn: TestCn;

  beforeAll(async () => {
    h = await Harness.create();
    cn = await h.addCn();
  });
  afterAll(async () => {
    await h.close();
  });

  it('runs a task whose params nest 5,000 levels to its end: nothing left in flight, /history still answers', async () => {
    // Built as text: JSON.stringify itself cannot write what JSON.parse reads here.
    const body = `{"task":"nop","params":{"deep":${'{"d":'.repeat(5000)}1${'}'.repeat(5000)}}}`;
    const r = await request(`${cn.url}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body,
    });
    expect(r.status).toBe(200);
    expect(h.server.tasksInFlight).toBe(0);
    const entries = await history(cn);
    expect(entries.at(-1)).toMatchObject({ task: 'nop', status: 'finished' });
    // What is kept of such params is cut short, never a stack overflow for the next reader.
    expect(JSON.stringify(entries.at(-1).params).length).toBeLessThan(30_000);
    expect((await postTask(cn, 'nop', {})).status).toBe(200);
  });
});

/** A raw TCP connection to a CN's socket; resolves with how long it stayed open. */
function rawConnection(url: string, onOpen: (sock: net.Socket) => void = () => undefined): { closed: Promise<number>; sock: net.Socket } {
  const { hostname, port } = new URL(url);
  const sock = net.connect(Number(port), hostname);
  const t0 = Date.now();
  sock.on('connect', () => onOpen(sock));
  sock.on('error', () => undefined);
  sock.on('data', () => undefined);
  const closed = new Promise<number>((resolve) => sock.on('close', () => resolve(Date.now() - t0)));
  return { closed, sock };
}

// The real cn-agent is a restify server on Node's http, whose keep-alive timeout is 5 s; the
// deadlines for headers and bodies are ours (connection-guard.ts), short here to keep the test short.
describe('cn-agent connection deadlines and caps', () => {
  let h: Harness;
  let cn: TestCn;
  const limits = { headersTimeoutMs: 400, bodyTimeoutMs: 400, idleTimeoutMs: 300, maxConnections: 20 };

  beforeAll(async () => {
    h = await Harness.create({ connectionLimits: limits });
    cn = await h.addCn();
  });
  afterAll(async () => {
    await h.close();
  });

  it('closes a connection that sends nothing, slow headers and a slow body; counts each', async () => {
    const idle = rawConnection(cn.url);
    const trickle = rawConnection(cn.url, (sock) => {
      sock.write('POST /tasks HTTP/1.1\r\n');
      const iv = setInterval(() => (sock.destroyed ? clearInterval(iv) : sock.write('x-a: b\r\n')), 50);
    });
    const slowBody = rawConnection(cn.url, (sock) => {
      sock.write(`POST /tasks HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-server-uuid: ${cn.uuid}\r\ncontent-length: 1000\r\n\r\n{"task":`);
      const iv = setInterval(() => (sock.destroyed ? clearInterval(iv) : sock.write(' ')), 50);
    });
    for (const c of [idle, trickle, slowBody]) {
      const ms = await c.closed;
      expect(ms).toBeGreaterThanOrEqual(300);
      expect(ms).toBeLessThan(5000);
    }
    const stats = h.server.connections.stats();
    expect(stats.timedOut.waiting).toBeGreaterThanOrEqual(2);
    expect(stats.timedOut.body).toBeGreaterThanOrEqual(1);
    expect((await postTask(cn, 'nop', {})).status).toBe(200);
  });

  it('keeps a connection whose task runs longer than every deadline, then closes it once idle', async () => {
    const { hostname, port } = new URL(cn.url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const reply = await new Promise<{ status: number; socket: net.Socket }>((resolve, reject) => {
        const req = http.request(
          { host: hostname, port, method: 'POST', path: '/tasks', agent, headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket! }));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ task: 'nop', params: { sleep: 1 } }));
      });
      expect(reply.status).toBe(200);
      expect(reply.socket.destroyed).toBe(false);
      const closedAfter = await new Promise<number>((resolve) => {
        const t0 = Date.now();
        reply.socket.once('close', () => resolve(Date.now() - t0));
      });
      expect(closedAfter).toBeLessThan(5000);
    } finally {
      agent.destroy();
    }
  });

  it('at the cap the oldest idle connections make room: a task is served while a flood of idle ones is held', async () => {
    // 40 connections that never send a request, to one CN: beyond its port's share (16) and the cap (20).
    const held: ReturnType<typeof rawConnection>[] = [];
    for (let i = 0; i < 40; i++) {
      held.push(rawConnection(cn.url));
      await new Promise((r) => setTimeout(r, 2));
    }
    await new Promise((r) => setTimeout(r, 100));
    const before = h.server.connections.stats().shed.idle;
    expect((await postTask(cn, 'nop', {})).status).toBe(200);
    // The oldest were shed, the newest are still open; the task took one of the slots.
    const open = held.filter((c) => !c.sock.destroyed && c.sock.readyState === 'open');
    expect(open.length).toBeLessThanOrEqual(16);
    expect(held[0]!.sock.destroyed || (await Promise.race([held[0]!.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 1000))]))).toBe(true);
    expect(held.at(-1)!.sock.destroyed).toBe(false);
    expect(h.server.connections.stats().shed.idle).toBeGreaterThanOrEqual(Math.max(before, 24));
    for (const c of held) c.sock.destroy();
    await Promise.all(held.map((c) => c.closed));
  });

  it("one CN's port cannot take every slot: with its share busy its next connection is refused, another CN is served", async () => {
    const other = await h.addCn();
    {
      // 16 tasks that take 4 s: the CN's share of connections, every one busy.
      const busy = Array.from({ length: 16 }, () =>
        request(`${cn.url}/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
          body: JSON.stringify({ task: 'nop', params: { sleep: 4 } }),
        }),
      );
      const deadline = Date.now() + 3000;
      while (h.server.connections.stats().busy < 16 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(h.server.connections.stats().busy).toBe(16);
      const refusedBefore = h.server.connections.stats().refused;
      const extra = rawConnection(cn.url);
      expect(await extra.closed).toBeLessThan(2000);
      expect(h.server.connections.stats().refused).toBe(refusedBefore + 1);
      expect((await postTask(other, 'nop', {})).status).toBe(200);
      for (const r of await Promise.all(busy)) expect(r.status).toBe(200);
    }
  });
});

describe('cn-agent long waits', () => {
  it('a nop asked to sleep past Node\'s longest timer (2^31-1 ms) still sleeps, until the task limit ends it', async () => {
    // sdc-cn-agent lib/backends/smartos/tasks/nop.js sleeps params.sleep seconds.
    const h = await Harness.create({ taskTimeoutSeconds: 1 });
    try {
      const cn = await h.addCn();
      const t0 = Date.now();
      const r = await postTask(cn, 'nop', { sleep: 2 ** 31 / 1000 + 5 });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: 'child task process timed out after 1 seconds' });
    } finally {
      await h.close();
    }
  });
});
