/**
 * What the fleet page's listener takes from a client (issue 24): its feed expects nothing, so a
 * large websocket message closes that connection at once (1009, message too big) instead of
 * being buffered (12 clients sending 95 MiB each took the daemon to 1.4 GB); a path such as
 * `//` is the client's mistake (a 4xx), not a 500. Over HTTP and ws, against a stand-in fleet.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createQuietLogger } from '../../src/common/log.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import { MAX_FEED_MESSAGE_BYTES, UiServer } from '../../src/ui/server.js';
import type { FleetSource, PageCn } from '../../src/ui/source.js';

const cns = [{ uuid: '00000000-0000-4000-8000-000000000001', hostname: 'cn1', profile: 'small', power: 'up', registered: true, sysinfo: {}, vms: { size: 0 } }];
const source: FleetSource = {
  list: () => cns as unknown as PageCn[],
  get: (u) => cns.find((c) => c.uuid === u) as unknown as PageCn,
  lastHeartbeatAt: () => undefined,
  heartbeatIntervalMs: 5000,
  heartbeats: true,
  activeEvents: () => [],
  faultState: () => undefined,
  eventLogPath: '/nonexistent',
  taskHistory: () => [],
  counters: () => ({ heartbeats: 0, tasks: 0, tasksAnswered: 0, taskMsTotal: 0, errors: 0 }),
  startEvent: async () => ({}),
  endEvent: async () => ({}),
};

describe('the fleet page listener bounds what clients send', () => {
  const scheduler = new Scheduler();
  const ui = new UiServer({ source, scheduler, log: createQuietLogger(), address: { ip: '127.0.0.1', port: 0 } });
  let base: string;

  beforeAll(async () => {
    scheduler.start();
    await ui.start();
    base = ui.address.url.replace(/\/$/, '');
  });
  afterAll(async () => {
    await ui.stop();
    scheduler.stop();
  });

  /** A feed connection as the page opens it (its own Origin), with its first message. */
  async function openFeed(): Promise<{ ws: WebSocket; first: unknown; closed: Promise<{ code: number; ms: number }> }> {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/feed`, { origin: base });
    const first = new Promise((resolve) => ws.once('message', (m) => resolve(JSON.parse(String(m)))));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const t0 = Date.now();
    const closed = new Promise<{ code: number; ms: number }>((resolve) => ws.once('close', (code) => resolve({ code, ms: Date.now() - t0 })));
    ws.on('error', () => undefined);
    return { ws, first: await first, closed };
  }

  it('closes a feed that is sent a 2 MiB message (1009), and serves the next page as before', async () => {
    const a = await openFeed();
    expect(a.first).toMatchObject({ t: 'snapshot' });
    a.ws.send(Buffer.alloc(2 * 1024 * 1024, 0x61));
    const { code } = await Promise.race([a.closed, new Promise<{ code: number }>((r) => setTimeout(() => r({ code: -1 }), 10_000))]);
    expect(code).toBe(1009);
    // A small message is let be (the page sends none, but a client may ping in words).
    const b = await openFeed();
    b.ws.send('x'.repeat(MAX_FEED_MESSAGE_BYTES - 100));
    await new Promise((r) => setTimeout(r, 200));
    expect(b.ws.readyState).toBe(WebSocket.OPEN);
    b.ws.close();
    await b.closed;
  });

  it('answers `GET //` and other odd paths with a 4xx and a JSON body, never a 500', async () => {
    for (const p of ['//', '//x', '//api/events', '/%', '/api/servers/%E0%A4%A']) {
      const status = await new Promise<{ code: number; body: string }>((resolve, reject) => {
        const u = new URL(base);
        http
          .get({ host: u.hostname, port: u.port, path: p }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
          })
          .on('error', reject);
      });
      expect(status.code, p).toBeGreaterThanOrEqual(400);
      expect(status.code, p).toBeLessThan(500);
      expect(JSON.parse(status.body), p).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    }
  });
});
