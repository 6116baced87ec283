/**
 * A changefeed is a websocket the listener keeps open for as long as it runs (net-agent's to
 * NAPI, a VMAPI consumer's to VMAPI): node-sdc-changefeed's publisher (lib/publisher.js), which
 * sdc-napi and sdc-vmapi serve it with, never closes a registered listener's socket. The connection guard's HTTP deadlines must stop at the
 * upgrade: before, every changefeed was cut at the headers deadline (30 s) and reconnected
 * 5 s later, over and over. Here the deadlines are shortened to 200 ms; a connection that
 * never sends a request is still closed by them.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { createQuietLogger } from '../../src/common/log.js';
import { closeServer, createServer, listen, onUpgrade, type RestifyServer } from '../../src/headnode/http.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('websocket upgrades on the dev headnode servers', () => {
  let server: RestifyServer;
  let url: string;
  const wss = new WebSocketServer({ noServer: true });

  beforeAll(async () => {
    server = createServer({ name: 'test', log: createQuietLogger(), connectionLimits: { headersTimeoutMs: 200, idleTimeoutMs: 200, bodyTimeoutMs: 200 } });
    onUpgrade(server, (req, socket, head) => {
      if (req.url !== '/changefeeds') return false;
      wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (m) => ws.send(`echo ${String(m)}`)));
      return true;
    });
    url = await listen(server, '127.0.0.1', 0);
  });

  afterAll(async () => {
    for (const c of wss.clients) c.terminate();
    wss.close();
    await closeServer(server);
  });

  it('keeps an accepted websocket open past every HTTP deadline, and closes an idle connection', async () => {
    const port = Number(new URL(url).port);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/changefeeds`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    let wsClosed = false;
    ws.once('close', () => (wsClosed = true));

    const idle = net.connect(port, '127.0.0.1');
    let idleClosed = false;
    idle.once('close', () => (idleClosed = true));
    idle.on('error', () => undefined);

    // Well past the 200 ms deadlines and the guard's sweeps (every 50 ms).
    for (let i = 0; i < 40 && !idleClosed; i++) await sleep(50);
    await sleep(400);
    expect(idleClosed).toBe(true);
    expect(wsClosed).toBe(false);
    const echo = new Promise<string>((resolve) => ws.once('message', (m) => resolve(String(m))));
    ws.send('ping');
    expect(await echo).toBe('echo ping');
    ws.close();
  });

  it('closes an upgrade the server does not take', async () => {
    const port = Number(new URL(url).port);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/elsewhere`);
    const outcome = await new Promise<string>((resolve) => {
      ws.once('open', () => resolve('open'));
      ws.once('error', () => resolve('refused'));
    });
    expect(outcome).toBe('refused');
  });
});
