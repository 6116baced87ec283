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

describe('JsonHttpClient lanes under load', () => {
  // Two peers: one (CNAPI's part) whose connections are all taken, one (VMAPI's) for syncs.
  const peers: { server: http.Server; base: string; held: http.ServerResponse[]; seen: string[] }[] = [];

  beforeEach(async () => {
    for (let i = 0; i < 2; i++) {
      const peer = { server: http.createServer(), base: '', held: [] as http.ServerResponse[], seen: [] as string[] };
      peer.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
        peer.seen.push(req.url ?? '');
        if (req.url?.startsWith('/hold')) return void peer.held.push(res);
        res.setHeader('content-type', 'application/json');
        res.end('{}');
      });
      await new Promise<void>((r) => peer.server.listen(0, '127.0.0.1', r));
      peer.base = `http://127.0.0.1:${(peer.server.address() as AddressInfo).port}`;
      peers.push(peer);
    }
  });

  afterEach(async () => {
    for (const { server, held } of peers.splice(0)) {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  const until = async (cond: () => boolean, what: string): Promise<void> => {
    for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
    if (!cond()) throw new Error(`timed out waiting for ${what}`);
  };
  const answer = (res: http.ServerResponse): void => {
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  };

  it('sends a heartbeat on the hot lane while status reports wait for a connection', async () => {
    const [cnapi] = peers;
    const client = new JsonHttpClient({ maxSockets: 2 });
    try {
      const reports = Array.from({ length: 5 }, (_, i) => client.request({ method: 'POST', url: `${cnapi!.base}/hold/${i}`, body: {} }));
      await until(() => cnapi!.held.length === 2, 'both connections taken');
      expect(client.queued).toBe(3);
      const beat = await client.request({ method: 'POST', url: `${cnapi!.base}/servers/x/events/heartbeat`, body: {}, hot: true });
      expect(beat.statusCode).toBe(200);
      expect(cnapi!.seen.filter((u) => u.startsWith('/hold'))).toHaveLength(2);
      for (let i = 0; i < 3; i++) {
        cnapi!.held.splice(0).forEach(answer);
        await until(() => cnapi!.held.length > 0 || i === 2, 'the next reports');
      }
      cnapi!.held.splice(0).forEach(answer);
      expect(await Promise.all(reports)).toHaveLength(5);
    } finally {
      client.close();
    }
  });

  /** Connections the peer has accepted so far, and open now. */
  const connections = (server: http.Server): { accepted: () => number; open: () => Promise<number> } => {
    let accepted = 0;
    server.on('connection', () => accepted++);
    return { accepted: () => accepted, open: () => new Promise<number>((r) => server.getConnections((_e, n) => r(n))) };
  };

  // Each heartbeat a new connection is a SYN at CNAPI's listen backlog: past it, a second late.
  it('carries burst after burst of heartbeats on the connections the first one opened', async () => {
    const [cnapi] = peers;
    const seen = connections(cnapi!.server);
    const client = new JsonHttpClient();
    try {
      for (let round = 0; round < 5; round++) {
        const beats = Array.from({ length: 80 }, (_, i) => client.request({ method: 'POST', url: `${cnapi!.base}/hold/${round}/${i}`, body: {}, hot: true }));
        await until(() => cnapi!.held.length === 80, `round ${round} on 80 connections`);
        // Answered all at once, as a busy CNAPI's turn answers them.
        cnapi!.held.splice(0).forEach(answer);
        expect(await Promise.all(beats)).toHaveLength(80);
      }
      expect(seen.accepted()).toBe(80);
    } finally {
      client.close();
    }
  });

  // Idle keep-alive connections hold slots of CNAPI's connection cap.
  it('closes the hot-lane connections a burst opened once the load no longer needs them', async () => {
    const [cnapi] = peers;
    const seen = connections(cnapi!.server);
    const client = new JsonHttpClient({ hotIdleMs: 300 });
    try {
      const beats = Array.from({ length: 80 }, (_, i) => client.request({ method: 'POST', url: `${cnapi!.base}/hold/${i}`, body: {}, hot: true }));
      await until(() => cnapi!.held.length === 80, 'the burst on 80 connections');
      cnapi!.held.splice(0).forEach(answer);
      expect(await Promise.all(beats)).toHaveLength(80);
      // Then one heartbeat at a time, for three idle times: it needs one connection.
      let open = await seen.open();
      for (let i = 0; i < 40 && (i < 18 || open > 2); i++) {
        expect((await client.request({ method: 'POST', url: `${cnapi!.base}/servers/x/events/heartbeat`, body: {}, hot: true })).statusCode).toBe(200);
        await new Promise((r) => setTimeout(r, 50));
        open = await seen.open();
      }
      expect(open).toBeLessThanOrEqual(2);
      expect(open).toBeGreaterThan(0); // the one still in use stays open
      expect(seen.accepted()).toBe(80); // no new one for the steady load
    } finally {
      client.close();
    }
  });

  it('holds background syncs back while other requests wait for a connection, and lets them go after', async () => {
    const [cnapi, vmapi] = peers;
    const client = new JsonHttpClient({ maxSockets: 8, backgroundInFlight: 10 });
    const reports = Array.from({ length: 9 }, (_, i) => client.request({ method: 'POST', url: `${cnapi!.base}/hold/${i}`, body: {} }));
    const syncs: Promise<unknown>[] = [];
    try {
      await until(() => cnapi!.held.length === 8 && client.queued === 1, 'a report waiting for a connection');
      for (let i = 0; i < 10; i++) syncs.push(client.request({ method: 'PUT', url: `${vmapi!.base}/hold/${i}`, body: {}, background: true }));
      await until(() => vmapi!.held.length === 4, 'four syncs');
      await new Promise((r) => setTimeout(r, 50));
      expect(vmapi!.held).toHaveLength(4);
      expect(client.backgroundQueued).toBe(6);
      // CNAPI answers: nothing waits for a connection any more, the syncs take every one.
      cnapi!.held.splice(0).forEach(answer);
      await until(() => cnapi!.held.length === 1, 'the last report');
      cnapi!.held.splice(0).forEach(answer);
      await Promise.all(reports);
      await until(() => vmapi!.held.length === 8, 'a sync on every connection');
      vmapi!.held.splice(0).forEach(answer);
      await until(() => vmapi!.held.length === 2, 'the last syncs');
      vmapi!.held.splice(0).forEach(answer);
      expect(await Promise.all(syncs)).toHaveLength(10);
    } finally {
      client.close();
      await Promise.allSettled([...reports, ...syncs]);
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

/**
 * A keep-alive socket the peer dropped while it sat in the pool: the next request sent on it
 * fails with a reset. The issue 14 leak: a NAPI `DELETE /nics/<mac>` lost that way left the NIC.
 */
describe('JsonHttpClient on a reset reused socket', () => {
  let server: http.Server;
  let base: string;
  /** What the server saw: method + url, in order. */
  const seen: string[] = [];
  /** Reset the connection instead of answering the n-th request of each connection (1-based). */
  let resetNth = 2;
  /** Reset after this many ms (0: at once). */
  let resetAfterMs = 0;
  /** Hold requests to /slow forever. */
  const held: http.ServerResponse[] = [];

  beforeEach(async () => {
    seen.length = 0;
    resetNth = 2;
    resetAfterMs = 0;
    server = http.createServer((req, res) => {
      const sock = req.socket as typeof req.socket & { served?: number };
      sock.served = (sock.served ?? 0) + 1;
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      if (req.url === '/slow') {
        held.push(res);
        return;
      }
      if (sock.served === resetNth) {
        setTimeout(() => sock.resetAndDestroy(), resetAfterMs);
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ n: sock.served }));
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    for (const res of held.splice(0)) res.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  for (const method of ['GET', 'PUT', 'DELETE'] as const) {
    it(`sends an idempotent ${method} once more on a fresh socket, and it succeeds`, async () => {
      const client = new JsonHttpClient({ maxSockets: 1 });
      try {
        expect((await client.request({ method: 'GET', url: `${base}/first` })).statusCode).toBe(200);
        const res = await client.request({ method, url: `${base}/again`, ...(method === 'PUT' ? { body: { a: 1 } } : {}) });
        expect(res.statusCode).toBe(200);
        expect(res.body).toEqual({ n: 1 }); // answered on a new connection
        expect(seen).toEqual(['GET /first', `${method} /again`, `${method} /again`]);
        expect(client.stats.retries).toBe(1);
        expect(client.stats.errors).toBe(0);
      } finally {
        client.close();
      }
    });
  }

  it('does not repeat a POST: the caller knows whether that is safe', async () => {
    const client = new JsonHttpClient({ maxSockets: 1 });
    try {
      await client.request({ method: 'GET', url: `${base}/first` });
      await expect(client.request({ method: 'POST', url: `${base}/make`, body: {} })).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(seen).toEqual(['GET /first', 'POST /make']);
      expect(client.stats.retries).toBe(0);
      expect(client.stats.errors).toBe(1);
    } finally {
      client.close();
    }
  });

  it('does not repeat a request reset on a fresh socket (nothing went stale there)', async () => {
    const client = new JsonHttpClient({ maxSockets: 1 });
    try {
      resetNth = 1; // every connection's first request is reset...
      await expect(client.request({ method: 'GET', url: `${base}/first` })).rejects.toMatchObject({ code: 'ECONNRESET' });
      // ...and a fresh socket is not a reused one: no retry there.
      expect(seen).toEqual(['GET /first']);
      expect(client.stats.retries).toBe(0);
    } finally {
      client.close();
    }
  });

  it('keeps one deadline from the call: the retry gets what is left of it, not a new one', async () => {
    const client = new JsonHttpClient({ maxSockets: 1 });
    try {
      await client.request({ method: 'GET', url: `${base}/first` });
      // The reused socket is reset after 300 ms; the retry goes to a request that never answers.
      resetAfterMs = 300;
      const url = `${base}/slow`;
      // /slow holds; make the first try of it hit the reset instead, by sending it as the 2nd request.
      server.removeAllListeners('request');
      server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
        const sock = req.socket as typeof req.socket & { served?: number };
        sock.served = (sock.served ?? 0) + 1;
        seen.push(`${req.method} ${req.url}`);
        req.resume();
        if (sock.served === 2) setTimeout(() => sock.resetAndDestroy(), resetAfterMs);
        else held.push(res);
      });
      const started = Date.now();
      await expect(client.request({ method: 'GET', url, timeoutMs: 800 })).rejects.toThrow(/timed out after 800 ms/);
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(750);
      expect(took).toBeLessThan(1500); // not 300 ms + a fresh 800 ms
      expect(seen.filter((s) => s === 'GET /slow')).toHaveLength(2);
    } finally {
      client.close();
    }
  });
});

describe('JsonHttpClient answer size', () => {
  it('stops reading an answer past 64 MiB and fails it as a bad gateway; the next request is served', async () => {
    let written = 0;
    const server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/small') return void res.end('{"ok":true}');
      // A peer that never ends its answer: 1 MiB chunks, until the client goes away (at most 160 MiB).
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const more = (): void => {
        while (written < 160 * 1024 * 1024 && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.write('[');
      more();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new JsonHttpClient({ timeoutMs: 60_000 });
    try {
      const err = (await client.request({ method: 'GET', url: `${base}/endless` }).catch((e: unknown) => e)) as Error & { code?: string };
      expect(err).toBeInstanceOf(Error);
      expect(err.code).toBe('BadGateway');
      expect(err.message).toMatch(/over 67108864 bytes; not read/);
      // It stopped near the bound: what was in flight when it closed, not the whole stream.
      expect(written).toBeLessThan(128 * 1024 * 1024);
      await expect(client.request({ method: 'GET', url: `${base}/small` })).resolves.toMatchObject({ body: { ok: true } });
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
