/**
 * What a connection cap sheds, seen from clients over real sockets: a flood of idle sockets
 * sheds itself, but never an upload whose body is arriving, nor a request sent and waiting to
 * be handed to HTTP (cn-agent hands connections over a few dozen per loop turn).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionGuard } from '../../src/common/connection-guard.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function listen(server: net.Server): Promise<number> {
  closers.push(() => new Promise<void>((r) => server.close(() => r())));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function connect(port: number): Promise<net.Socket> {
  const s = net.connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  closers.push(() => void s.destroy());
  return new Promise((resolve) => s.once('connect', () => resolve(s)));
}

/** Everything the server sends until it closes (or the socket fails). */
function answerOf(s: net.Socket): Promise<string> {
  let text = '';
  s.on('data', (b: Buffer) => (text += b.toString()));
  return new Promise((resolve) => s.once('close', () => resolve(text)));
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

/** `count` idle sockets opened one after another (each admission at the cap sheds one). */
async function flood(port: number, count: number): Promise<number> {
  let closed = 0;
  for (let i = 0; i < count; i++) {
    const s = await connect(port);
    s.once('close', () => closed++);
  }
  return closed;
}

describe('connection guard at its cap', () => {
  it('keeps an upload whose body is arriving through a flood of idle sockets', async () => {
    const guard = new ConnectionGuard({ maxConnections: 8, reserve: 0 });
    const server = http.createServer((req, res) => {
      let size = 0;
      req.on('data', (b: Buffer) => (size += b.length));
      req.on('end', () => res.end(`got ${size}`));
    });
    guard.watch(server);
    closers.push(() => server.closeAllConnections());
    const port = await listen(server);

    // An image file upload (IMGAPI AddImageFile): headers in, the body still coming.
    const upload = await connect(port);
    const answer = answerOf(upload);
    upload.write('PUT /images/x/file HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 2000\r\n\r\n');
    upload.write('a'.repeat(1000));
    await until(() => guard.stats().idle === 1, 'the upload admitted');
    await new Promise((r) => setTimeout(r, 50)); // its headers parsed

    await flood(port, 40);
    expect(guard.stats().shed.idle).toBeGreaterThanOrEqual(30);
    upload.end('b'.repeat(1000));
    expect((await answer).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(await answer).toMatch(/got 2000$/);
  });

  it('sheds a kept-alive connection before a request waiting to be handed over', async () => {
    // As cn-agent: a connection is admitted silent and handed to HTTP only once it speaks, and
    // then only when the owner gets to it (here: when the test lets it).
    const guard = new ConnectionGuard({ maxConnections: 2, reserve: 0 });
    const server = http.createServer((_req, res) => res.end('ok'));
    guard.watch(server);
    closers.push(() => server.closeAllConnections());
    const waiting: net.Socket[] = [];
    let handOver = true;
    const handTo = (sock: net.Socket): void => {
      server.emit('connection', sock);
      sock.resume();
    };
    const front = net.createServer((sock) => {
      if (!guard.admit(sock, 'cn', { silent: true })) return;
      sock.once('data', (first: Buffer) => {
        sock.pause();
        sock.unshift(first);
        guard.spoke(sock);
        if (handOver) handTo(sock);
        else waiting.push(sock);
      });
    });
    const port = await listen(front);

    // A client answered and kept alive...
    const kept = await connect(port);
    const keptAnswer = new Promise<string>((resolve) => kept.once('data', (b: Buffer) => resolve(b.toString())));
    kept.write('GET /ping HTTP/1.1\r\nHost: h\r\n\r\n');
    expect((await keptAnswer).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    await until(() => guard.stats().kept === 1, 'the kept-alive connection');
    // ...and a task POST sent in full, waiting for its turn to be handed over.
    handOver = false;
    const task = await connect(port);
    const taskAnswer = answerOf(task);
    task.write('POST /tasks HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}');
    await until(() => waiting.length === 1, 'the task request waiting');

    // At the cap a newcomer makes room: the kept-alive connection goes, the task stays.
    const keptClosed = new Promise<void>((resolve) => kept.once('close', () => resolve()));
    await connect(port);
    await until(() => guard.stats().shed.idle + guard.stats().shed.kept === 1, 'one connection shed');
    expect(guard.stats().shed).toEqual({ idle: 0, kept: 1 });
    await keptClosed;
    handTo(waiting.shift()!);
    expect((await taskAnswer).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });
});
