/**
 * The outbound seam of partitions and outbound faults (src/events/network.ts) on the daemon's
 * real shared HTTP client against a loopback server: nothing is consulted while no event needs
 * it, a partitioned CN's request is held until the partition ends or fails with the client's
 * timeout error (the peer never sees it), and other CNs' requests pass.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonHttpClient } from '../../src/common/http-client.js';
import { newUuid } from '../../src/common/uuid.js';
import { NetworkFaults, type OutboundRule } from '../../src/events/network.js';
import { Scheduler } from '../../src/runtime/scheduler.js';

describe('outbound faults on the shared HTTP client', () => {
  let server: http.Server;
  let base: string;
  const seen: string[] = [];
  const scheduler = new Scheduler();
  const client = new JsonHttpClient();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(String(req.headers['user-agent']));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    scheduler.start();
  });

  afterAll(async () => {
    scheduler.stop();
    client.close();
    await new Promise((resolve) => server.close(resolve));
  });

  const ua = (cn: string): string => `cn-agent/2.15.0 (node/20) server/${cn}`;
  const post = (cn: string, timeoutMs = 5000, path = '/cnapi/heartbeat') =>
    client.request({ method: 'POST', url: `${base}${path}`, body: {}, headers: { 'user-agent': ua(cn) }, timeoutMs });

  it('holds a partitioned CN\'s request until the partition ends, fails it at its timeout, and leaves other CNs alone', async () => {
    const faults = new NetworkFaults(client, scheduler, { cnapi: `${base}/cnapi`, vmapi: `${base}/vmapi` });
    const cut = newUuid();
    const other = newUuid();
    expect(client.interceptor).toBeUndefined();
    faults.block(cut);
    expect(client.interceptor).toBeDefined();

    await expect(post(cut, 200)).rejects.toThrow(/timed out after 200 ms/);
    expect(seen).not.toContain(ua(cut));
    expect((await post(other)).statusCode).toBe(200);

    const held = post(cut);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).not.toContain(ua(cut));
    faults.unblock(cut);
    expect((await held).statusCode).toBe(200);
    expect(seen).toContain(ua(cut));
    expect(client.interceptor).toBeUndefined();
  });

  it('fails the chosen API\'s requests of the targets as reset connections while the rule lasts', async () => {
    const faults = new NetworkFaults(client, scheduler, { cnapi: `${base}/cnapi`, vmapi: `${base}/vmapi` });
    const cn = newUuid();
    const rule: OutboundRule = { servers: new Set([cn]), api: 'cnapi', delayMs: 0, errorRate: 1, probability: 1, random: () => 0.5, hits: 0 };
    faults.addRule(rule);
    await expect(post(cn)).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect((await post(cn, 5000, '/vmapi/vms')).statusCode).toBe(200);
    expect((await post(newUuid())).statusCode).toBe(200);
    expect(rule.hits).toBe(1);
    faults.removeRule(rule);
    expect(client.interceptor).toBeUndefined();
    expect((await post(cn)).statusCode).toBe(200);
  });
});
