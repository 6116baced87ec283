/**
 * The benchmark's recording sink, black-box over HTTP: CNAPI traffic as a mock CN sends it,
 * NAPI through sdc-clients' NAPI class (the real Triton client), VMAPI through sdc-clients'
 * VMAPI for reads, and the changefeed over a websocket. The figures the benchmark reports come
 * from the sink's counters, so these check that it counts what arrives and answers like the APIs.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createQuietLogger } from '../../src/common/log.js';
import { HeartbeatRecorder } from '../../tools/bench/sink/heartbeat-recorder.js';
import { RecordingSink, type SinkStats, type SinkUrls } from '../../tools/bench/sink/sink.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const sdc = require('sdc-clients') as { NAPI: any; VMAPI: any };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function call<T = any>(client: any, method: string, ...args: unknown[]): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](...args, (err: Error | null, result: T) => (err ? reject(err) : resolve(result)));
  });
}

async function post(url: string, body?: unknown, method = 'POST'): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('HeartbeatRecorder', () => {
  it('reports the longest gap between two heartbeats of one CN since the mark', () => {
    const r = new HeartbeatRecorder();
    r.sysinfo('a', 1000);
    r.heartbeat('a', 1000);
    r.heartbeat('a', 30_000); // a 29 s gap before the mark: forgotten by the mark
    r.mark(30_000);
    r.heartbeat('a', 35_000);
    r.heartbeat('a', 42_000); // 7 s
    r.heartbeat('a', 47_000);
    const s = r.snapshot(48_000);
    expect(s.worstGapMs).toBe(7000);
    expect(s.worstGapServer).toBe('a');
    expect(s.registered).toBe(1);
    expect(s.heartbeating).toBe(1);
  });

  it('counts a CN that went silent by the time since its last heartbeat', () => {
    const r = new HeartbeatRecorder();
    r.heartbeat('a', 1000);
    r.heartbeat('b', 1000);
    r.mark(2000);
    r.heartbeat('a', 6000);
    const s = r.snapshot(20_000);
    expect(s.worstGapServer).toBe('b');
    expect(s.worstGapMs).toBe(19_000);
    expect(s.silentSinceMark).toBe(1);
  });

  it('knows when the last CN first registered and first heartbeated', () => {
    const r = new HeartbeatRecorder();
    r.sysinfo('a', 100);
    r.sysinfo('b', 300);
    r.sysinfo('a', 900); // a re-registration does not move the first time
    r.heartbeat('b', 400);
    r.heartbeat('a', 700);
    r.heartbeat('b', 5400);
    const s = r.snapshot(6000);
    expect(s.lastFirstSysinfoAt).toBe(300);
    expect(s.lastFirstHeartbeatAt).toBe(700);
  });
});

describe('RecordingSink over HTTP', () => {
  let sink: RecordingSink;
  let urls: SinkUrls;
  const stats = async (): Promise<SinkStats> => (await fetch(`${urls.cnapi}/__sink/stats`)).json() as Promise<SinkStats>;

  beforeAll(async () => {
    sink = new RecordingSink('127.0.0.1');
    urls = await sink.start();
  });
  afterAll(async () => {
    await sink.stop();
  });

  it('records registrations, heartbeats and status reports per CN as CNAPI answers them', async () => {
    await post(`${urls.cnapi}/__sink/reset`);
    const cn = randomUUID();
    // Before registering, CNAPI has no such server: a status report is refused.
    expect((await post(`${urls.cnapi}/servers/${cn}/events/status`, { vms: {} })).status).toBe(404);
    const reg = await post(`${urls.cnapi}/servers/${cn}/sysinfo`, { sysinfo: { UUID: cn, Hostname: 'x' } });
    expect(reg.status).toBe(200);
    expect((await post(`${urls.cnapi}/servers/${cn}`, { agents: [] })).status).toBe(204);
    expect((await post(`${urls.cnapi}/servers/${cn}/events/heartbeat`, {})).status).toBe(204);
    expect((await post(`${urls.cnapi}/servers/${cn}/events/heartbeat`)).status).toBe(204);
    expect((await post(`${urls.cnapi}/servers/${cn}/events/status`, { vms: {}, meminfo: {} })).status).toBe(204);
    const s = await stats();
    expect(s.cns.registered).toBe(1);
    expect(s.cns.heartbeating).toBe(1);
    expect(s.counters['cnapi.heartbeat']).toBe(2);
    expect(s.counters['cnapi.status']).toBe(1);
    expect(s.counters['cnapi.sysinfo']).toBe(1);
    expect(s.counters['cnapi.status.4xx']).toBe(1);
  });

  it('refuses what real CNAPI refuses, Triton-style', async () => {
    const cn = randomUUID();
    const extra = await post(`${urls.cnapi}/servers/${cn}/events/heartbeat`, { foo: 1 });
    expect(extra.status).toBe(409);
    expect(extra.body).toMatchObject({ code: 'InvalidArgument' });
    const wrongUuid = await post(`${urls.cnapi}/servers/${cn}/sysinfo`, { sysinfo: { UUID: randomUUID() } });
    expect(wrongUuid.status).toBe(500);
    const noSysinfo = await post(`${urls.cnapi}/servers/${cn}/sysinfo`, {});
    expect(noSysinfo.status).toBe(409);
    const unknown = await post(`${urls.cnapi}/nothing/here`, {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'ResourceNotFound' });
    expect((await stats()).unknownRoutes).toContain('cnapi POST /nothing/here');
    const badSegment = await fetch(`${urls.napi}/nics/%E0%A4%A`);
    expect(badSegment.status).toBe(400);
    expect(await badSegment.json()).toMatchObject({ code: 'BadRequest' });
  });

  it('forgets CN records but keeps NICs on a cnapi-scoped reset', async () => {
    await post(`${urls.cnapi}/__sink/reset`);
    const cn = randomUUID();
    await post(`${urls.cnapi}/servers/${cn}/sysinfo`, { sysinfo: { UUID: cn } });
    await post(`${urls.napi}/networks/admin/nics`, { belongs_to_type: 'other', belongs_to_uuid: cn, owner_uuid: cn });
    await post(`${urls.cnapi}/__sink/reset?scope=cnapi`);
    const s = await stats();
    expect(s.cns.registered).toBe(0);
    expect(s.store.nics).toBe(1);
  });

  it('allocates admin NICs with distinct IPs and serves them to the NAPI client', async () => {
    await post(`${urls.cnapi}/__sink/reset`);
    const napi = new sdc.NAPI({ url: urls.napi, log: createQuietLogger('napi'), agent: false });
    try {
      const owner = randomUUID();
      const made = [];
      for (let i = 0; i < 5; i++) {
        made.push(
          await call(napi, 'provisionNic', 'admin', {
            belongs_to_type: 'other',
            belongs_to_uuid: owner,
            owner_uuid: owner,
            mac: `00:10:fe:00:00:0${i}`,
            nic_tags_provided: ['admin'],
          }),
        );
      }
      const ips = new Set(made.map((n) => n.ip));
      expect(ips.size).toBe(5);
      for (const n of made) {
        expect(n.ip).toMatch(/^10\.(19[2-9]|20[0-7])\./);
        expect(n.nic_tag).toBe('admin');
      }
      // sdc-clients strips the colons from the MAC in the path.
      const got = await call(napi, 'getNic', '00:10:fe:00:00:03');
      expect(got.ip).toBe(made[3].ip);
      const listed = await call(napi, 'getNics', owner);
      expect(listed).toHaveLength(5);
      const dup = await call(napi, 'provisionNic', 'admin', {
        belongs_to_type: 'other',
        belongs_to_uuid: owner,
        owner_uuid: owner,
        mac: '00:10:fe:00:00:01',
      }).catch((e: { statusCode: number; body: { errors: { code: string }[] } }) => e);
      expect((dup as { statusCode: number }).statusCode).toBe(422);
      expect((dup as { body: { errors: { code: string }[] } }).body.errors[0]!.code).toBe('Duplicate');
      expect((await stats()).counters['napi.adminNicAllocation']).toBe(5);
    } finally {
      napi.close();
    }
  });

  it('gives every NIC an Etag and honours If-Match on delete, as net-agent expects', async () => {
    const owner = randomUUID();
    const created = await fetch(`${urls.napi}/nics`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mac: '90:b8:d0:11:22:33', belongs_to_type: 'server', belongs_to_uuid: owner, owner_uuid: owner, state: 'running' }),
    });
    expect(created.status).toBe(200);
    const etag = created.headers.get('etag');
    expect(etag).toBeTruthy();
    const updated = await fetch(`${urls.napi}/nics/90b8d0112233`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ state: 'stopped' }),
    });
    expect(updated.status).toBe(200);
    expect(((await updated.json()) as { state: string }).state).toBe('stopped');
    const etag2 = updated.headers.get('etag');
    expect(etag2).not.toBe(etag);
    const stale = await fetch(`${urls.napi}/nics/90b8d0112233`, { method: 'DELETE', headers: { 'if-match': etag! } });
    expect(stale.status).toBe(412);
    const ok = await fetch(`${urls.napi}/nics/90b8d0112233`, { method: 'DELETE', headers: { 'if-match': etag2! } });
    expect(ok.status).toBe(204);
    expect((await fetch(`${urls.napi}/nics/90b8d0112233`)).status).toBe(404);
    const bad = await post(`${urls.napi}/nics`, { belongs_to_type: 'zone' });
    expect(bad.status).toBe(422);
  });

  it('stores what vm-agent puts and lists it back for that server', async () => {
    await post(`${urls.cnapi}/__sink/reset`);
    const server = randomUUID();
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const put = await post(
      `${urls.vmapi}/vms?server_uuid=${server}`,
      {
        vms: {
          [a]: { uuid: a, state: 'running', brand: 'joyent-minimal', server_uuid: server },
          [b]: { uuid: b, state: 'stopped', brand: 'joyent-minimal', server_uuid: server },
        },
      },
      'PUT',
    );
    expect(put.status).toBe(200);
    const one = await post(`${urls.vmapi}/vms/${c}`, { uuid: c, state: 'destroyed', server_uuid: server }, 'PUT');
    expect(one.status).toBe(200);
    const vmapi = new sdc.VMAPI({ url: urls.vmapi, log: createQuietLogger('vmapi'), agent: false });
    try {
      const active = await call<{ uuid: string }[]>(vmapi, 'listVms', { server_uuid: server, state: 'active' });
      expect(active.map((v) => v.uuid).sort()).toEqual([a, b].sort());
      const vm = await call<{ state: string }>(vmapi, 'getVm', { uuid: c });
      expect(vm.state).toBe('destroyed');
    } finally {
      vmapi.close();
    }
    const missing = await post(`${urls.vmapi}/vms`, { vms: {} }, 'PUT');
    expect(missing.status).toBe(409);
    expect(missing.body).toMatchObject({ code: 'ValidationFailed' });
    expect((await stats()).counters['vmapi.vmsPut']).toBe(3);
  });

  it('answers the NAPI changefeed registration with its bootstrap routes', async () => {
    const ws = new WebSocket(`${urls.napi.replace('http', 'ws')}/changefeeds`, { headers: { 'accept-version': '~2' } });
    const first = new Promise<unknown>((resolve, reject) => {
      ws.once('message', (d) => resolve(JSON.parse(String(d))));
      ws.once('error', reject);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ instance: randomUUID(), service: 'net-agent', resources: [{ resource: 'nic', subResources: ['create'] }, { resource: 'network', subResources: ['create'] }] }));
    const reply = (await first) as { bootstrapRoutes: { resource: string; bootstrapRoute: string }[] };
    expect(reply.bootstrapRoutes.map((r) => r.resource).sort()).toEqual(['network', 'nic']);
    expect((await stats()).store.changefeedListeners).toBe(1);
    ws.close();
  });
});
