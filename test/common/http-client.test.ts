/**
 * The daemon's one outbound HTTP client: agents' bulk syncs take turns (a bounded number in
 * flight), while heartbeats, status reports and task traffic never wait behind them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JsonHttpClient } from '../../src/common/http-client.js';

describe('JsonHttpClient background requests', () => {
  let server: http.Server;
  let base: string;
  let inFlight = 0;
  let most = 0;
  const held: http.ServerResponse[] = [];
  const order: string[] = [];

  beforeEach(async () => {
    inFlight = 0;
    most = 0;
    held.length = 0;
    order.length = 0;
    server = http.createServer((req, res) => {
      order.push(req.url ?? '');
      if (req.url?.startsWith('/hold')) {
        inFlight++;
        most = Math.max(most, inFlight);
        held.push(res);
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const release = (count: number): void => {
    for (const res of held.splice(0, count)) {
      inFlight--;
      res.setHeader('content-type', 'application/json');
      res.end('{"done":true}');
    }
  };

  const until = async (cond: () => boolean, what: string): Promise<void> => {
    for (let i = 0; i < 500; i++) {
      if (cond()) return;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  it('sends at most backgroundInFlight at once, in order, and every one completes', async () => {
    const client = new JsonHttpClient({ maxSockets: 64, backgroundInFlight: 4 });
    try {
      const all = Array.from({ length: 20 }, (_, i) => client.request({ method: 'GET', url: `${base}/hold/${i}`, background: true }));
      await until(() => held.length === 4, 'the first four');
      expect(client.backgroundQueued).toBe(16);
      for (let round = 0; round < 4; round++) {
        release(4);
        await until(() => held.length === 4, `round ${round + 2}`);
      }
      release(4);
      const answers = await Promise.all(all);
      expect(answers.every((a) => a.statusCode === 200 && (a.body as { done?: boolean }).done === true)).toBe(true);
      expect(most).toBe(4);
      expect(order).toEqual(Array.from({ length: 20 }, (_, i) => `/hold/${i}`));
      expect(client.backgroundQueued).toBe(0);
    } finally {
      client.close();
    }
  });

  it('lets a heartbeat through while background requests wait, and a failed one passes its turn on', async () => {
    const client = new JsonHttpClient({ maxSockets: 64, backgroundInFlight: 2 });
    try {
      const bulk = Array.from({ length: 6 }, (_, i) => client.request({ method: 'GET', url: `${base}/hold/${i}`, background: true }));
      // One that fails at once (nothing listens there) takes and gives back a turn.
      const refused = client.request({ method: 'GET', url: 'http://127.0.0.1:1/x', background: true });
      await until(() => held.length === 2, 'two in flight');
      const beat = await client.request({ method: 'POST', url: `${base}/servers/x/events/heartbeat`, body: {} });
      expect(beat.statusCode).toBe(200);
      expect(held.length).toBe(2);
      for (let i = 0; i < 4 && held.length > 0; i++) {
        release(2);
        await until(() => held.length > 0 || order.filter((u) => u.startsWith('/hold')).length === 6, 'next turn');
      }
      release(2);
      await expect(refused).rejects.toThrow();
      expect((await Promise.all(bulk)).length).toBe(6);
      expect(most).toBe(2);
      expect(client.backgroundQueued).toBe(0);
    } finally {
      client.close();
    }
  });
});

describe('JsonHttpClient deadlines', () => {
  it('fails every request to a peer that accepts but never answers within its deadline, queued ones included', async () => {
    const sockets: import('node:net').Socket[] = [];
    const hung = (await import('node:net')).createServer((s) => sockets.push(s));
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/servers/x/events/heartbeat`;
    const client = new JsonHttpClient({ maxSockets: 2, timeoutMs: 300 });
    try {
      const t0 = Date.now();
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          client.request({ method: 'POST', url, body: {} }).then(
            () => 'answered',
            (err: Error & { code?: string }) => ({ code: err.code, ms: Date.now() - t0, message: err.message }),
          ),
        ),
      );
      // Before, the 18 queued behind 2 hung sockets waited for those to time out in turn (9 rounds).
      for (const r of results) {
        expect(r).toMatchObject({ code: 'GatewayTimeout' });
        expect((r as { ms: number }).ms).toBeLessThan(1500);
      }
      expect(results.filter((r) => typeof r === 'object' && /no free connection/.test(r.message)).length).toBeGreaterThanOrEqual(10);
    } finally {
      client.close();
      for (const s of sockets) s.destroy();
      hung.close();
    }
  });
});
