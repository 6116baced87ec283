/**
 * The daemon in-process, with stand-ins for the cn-agent task server and vmadm (their own
 * suites test them) and a recording CNAPI + NAPI: loading a data dir, the control API
 * (create, list, get, delete, rescan, status, bad input), daemon.json, NAPI admin NICs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { newUuid } from '../../src/common/uuid.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { readDaemonJson } from '../../src/daemon/daemon-json.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import { beginServerCreation, finishServerCreation, scanServers } from '../../src/mockcn/server-dir.js';
import { buildSysinfo, randomMockMac } from '../../src/mockcn/sysinfo-template.js';
import { FakeCnAgent, FakeVmadm, fakeVm, waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };

const TIMINGS = { heartbeatIntervalMs: 200, statusThrottleMs: 200, startSpreadMs: 50, sysinfoBackoff: { minMs: 30, maxMs: 200 } };

/** A server dir made as create-servers makes it; its admin NIC goes into `napi` when given, as NAPI made it. */
async function makeServer(dataDir: string, napi?: RecordingTriton, uuid = newUuid(), adminMac = randomMockMac()): Promise<string> {
  napi?.nics.set(adminMac.replace(/:/g, ''), { mac: adminMac, ip: '10.99.99.200', belongs_to_uuid: DEFAULT_ADMIN_UUID, belongs_to_type: 'other' });
  await beginServerCreation(dataDir, { uuid, startedAt: '', napiMacs: [] });
  await finishServerCreation(
    dataDir,
    buildSysinfo({
      uuid,
      profile: getProfile('virtual'),
      datacenterName: 'testdc',
      platform: '20240101T000000Z',
      adminMac,
      adminIp: '10.99.99.200',
      extraMac: randomMockMac(),
    }),
  );
  return uuid;
}

describe('daemon', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: Daemon;
  let cnAgent: FakeCnAgent;
  let vmadm: FakeVmadm;
  let control: string;
  const existing: string[] = [];
  const broken = newUuid();
  const interrupted = newUuid();
  const interruptedMac = '00:10:fe:aa:bb:cc';

  async function api(method: string, p: string, body?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${control}${p}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-daemon-'));
    triton = await new RecordingTriton().start();
    existing.push(await makeServer(dataDir, triton), await makeServer(dataDir, triton));
    await fsp.mkdir(path.join(dataDir, 'servers', broken));
    // An interrupted creation whose admin NIC NAPI already handed out.
    await beginServerCreation(dataDir, { uuid: interrupted, startedAt: '', napiMacs: [interruptedMac] });
    triton.nics.set(interruptedMac.replace(/:/g, ''), { mac: interruptedMac, ip: '10.99.99.3', belongs_to_uuid: DEFAULT_ADMIN_UUID, belongs_to_type: 'other' });
    // And one that had allocated nothing yet (no marker).
    await beginServerCreation(dataDir, { uuid: newUuid(), startedAt: '', napiMacs: [] });
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS }));

    const config = await resolveConfig({
      flags: { dataDir, cnapiUrl: triton.url, napiUrl: triton.url, bindIp: '127.0.0.1', datacenterName: 'testdc' },
      env: {},
      mdata: noMdata,
    });
    cnAgent = new FakeCnAgent();
    vmadm = new FakeVmadm();
    daemon = new Daemon({ config, log: createQuietLogger(), cnAgent: () => cnAgent, vmadm: () => vmadm, plugins: [] });
    await daemon.start();
    control = daemon.controlAddress.url;
  });

  afterAll(async () => {
    await daemon?.stop();
    await triton?.stop();
    await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('loads every good server dir, skips a broken one, cleans up an interrupted creation', async () => {
    expect(daemon.fleet.list().map((cn) => cn.uuid).sort()).toEqual([...existing].sort());
    expect(daemon.errors.get('fleet.load')).toBe(1);
    const scan = await scanServers(dataDir);
    expect(scan.creating).toEqual([]);
    expect(scan.servers).toContain(broken); // left for the operator, never deleted
    expect(triton.find('DELETE', new RegExp(`^/nics/${interruptedMac.replace(/:/g, '')}$`)).length).toBe(1);
  });

  it('registers each CN with an agent address that reaches that CN', async () => {
    for (const uuid of existing) {
      const reg = await waitFor(() => triton.find('POST', new RegExp(`^/servers/${uuid}/sysinfo$`))[0], 10_000, 'registration');
      const sysinfo = (reg.body as { sysinfo: Record<string, unknown> }).sysinfo;
      const ip = netconfig.agentIpFromSysinfo(sysinfo);
      const res = await fetch(`http://${ip}:${sysinfo['CN Agent Port']}/`);
      expect(await res.json()).toMatchObject({ server: uuid });
    }
    await waitFor(() => daemon.fleet.list().every((cn) => cn.registered), 10_000, 'all registered');
  });

  it('writes daemon.json with pid, control API, URLs and every agent address', async () => {
    const info = await waitFor(async () => {
      const j = await readDaemonJson(dataDir);
      return j && j.state === 'running' && Object.keys(j.servers).length === daemon.fleet.size ? j : undefined;
    }, 5000, 'daemon.json');
    expect(info.pid).toBe(process.pid);
    expect(info.control.url).toBe(control);
    expect(info.control.ip).toBe('127.0.0.1');
    expect(info.urls).toEqual({ cnapi: triton.url, napi: triton.url });
    for (const cn of daemon.fleet.list()) expect(info.servers[cn.uuid]).toEqual(cn.agentAddress);
  });

  it('creates servers with an admin NIC from NAPI, and they start at once', async () => {
    triton.failNext(/^\/nics\/[0-9a-f]{12}$/, { status: 200, body: { mac: 'taken' } }, 1, 'GET');
    const before = triton.requests.length;
    const res = await api('POST', '/servers', { count: 3, profile: 'small', hostnamePrefix: 'MC' });
    expect(res.status).toBe(200);
    expect(res.body.errors).toEqual([]);
    expect(res.body.created.length).toBe(3);
    const newReqs = triton.requests.slice(before);
    const posts = newReqs.filter((r) => r.method === 'POST' && r.path === '/networks/admin/nics');
    expect(posts.length).toBe(3);
    // The MAC clash was noticed: the taken one was never allocated.
    const firstChecked = newReqs.find((r) => r.method === 'GET' && r.path.startsWith('/nics/'))!.path.slice(6);
    expect(posts.map((p) => String((p.body as { mac: string }).mac).replace(/:/g, ''))).not.toContain(firstChecked);
    for (const created of res.body.created) {
      expect(created.hostname).toMatch(/^MC[0-9A-F]{8}$/);
      expect(created.profile).toBe('small');
      const post = posts.find((p) => (p.body as { mac: string }).mac && triton.nics.get(String((p.body as { mac: string }).mac).replace(/:/g, ''))?.ip === created.adminIp);
      expect(post).toBeDefined();
      expect(post!.body).toEqual({
        belongs_to_type: 'other',
        belongs_to_uuid: daemon.config.adminUuid,
        owner_uuid: daemon.config.adminUuid,
        mac: expect.stringMatching(/^00:10:fe(:[0-9a-f]{2}){3}$/),
        nic_tags_provided: ['admin'],
      });
      const sysinfo = JSON.parse(await fsp.readFile(path.join(dataDir, 'servers', created.uuid, 'sysinfo.json'), 'utf8'));
      expect(sysinfo['Admin IP']).toBe(created.adminIp);
      expect(sysinfo['Network Interfaces'].dnet0).toMatchObject({ ip4addr: created.adminIp, 'MAC Address': (post!.body as { mac: string }).mac });
      expect(sysinfo['CPU Total Cores']).toBe(getProfile('small').cpuTotalCores);
      await waitFor(() => triton.find('POST', new RegExp(`^/servers/${created.uuid}/events/heartbeat$`)).length > 0, 10_000, 'heartbeat of a new CN');
      expect(created.agentAddress).toEqual(daemon.fleet.get(created.uuid)!.agentAddress);
    }
    const listed = await api('GET', '/servers');
    expect(listed.body.length).toBe(5);
    await waitFor(async () => Object.keys((await readDaemonJson(dataDir))?.servers ?? {}).length === 5, 5000, 'daemon.json update');
  });

  it('reports a NAPI failure as 502 and leaves nothing behind', async () => {
    triton.failNext(/^\/networks\/admin\/nics$/, { status: 500, body: { code: 'InternalError', message: 'no IPs left' } }, 1, 'POST');
    const before = (await scanServers(dataDir)).servers.length;
    const res = await api('POST', '/servers', { count: 1 });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('BadGateway');
    expect(res.body.message).toMatch(/NAPI POST \/networks\/admin\/nics: 500 InternalError: no IPs left/);
    const scan = await scanServers(dataDir);
    expect(scan.servers.length).toBe(before);
    expect(scan.creating).toEqual([]);
  });

  it('answers bad input with a clear 4xx and changes nothing', async () => {
    const size = daemon.fleet.size;
    const cases: [string, string, unknown, number, string][] = [
      ['POST', '/servers', '{"count": ', 400, 'InvalidContent'],
      ['POST', '/servers', [1], 400, 'InvalidContent'],
      ['POST', '/servers', { count: 0 }, 409, 'InvalidArgument'],
      ['POST', '/servers', { count: 1.5 }, 409, 'InvalidArgument'],
      ['POST', '/servers', { count: 100_001 }, 409, 'InvalidArgument'],
      ['POST', '/servers', { count: 1, profile: 'huge' }, 409, 'InvalidArgument'],
      ['POST', '/servers', { count: 1, hostnamePrefix: '../x' }, 409, 'InvalidArgument'],
      ['POST', '/servers', { count: 1, server_uuid: newUuid() }, 409, 'InvalidArgument'],
      // One CN of a given uuid (mirror load) is `count: 1` only.
      ['POST', '/servers', { count: 2, uuid: newUuid() }, 409, 'InvalidArgument'],
      ['POST', '/servers', JSON.stringify({ count: 1, pad: 'x'.repeat(70_000) }), 413, 'RequestEntityTooLarge'],
      ['GET', '/servers/..%2F..%2Fetc', undefined, 409, 'InvalidArgument'],
      ['GET', `/servers/${newUuid()}`, undefined, 404, 'ResourceNotFound'],
      ['DELETE', `/servers/${newUuid()}`, undefined, 404, 'ResourceNotFound'],
      ['PUT', '/servers', undefined, 405, 'MethodNotAllowed'],
      ['GET', '/nothing', undefined, 404, 'ResourceNotFound'],
      // Was a 500 "Invalid URL": `//` read as a URL with an empty host.
      ['GET', '//', undefined, 404, 'ResourceNotFound'],
      ['GET', '//x//', undefined, 404, 'ResourceNotFound'],
    ];
    for (const [method, p, body, status, code] of cases) {
      const res = await api(method, p, body);
      expect({ method, p, status: res.status, code: res.body?.code }).toEqual({ method, p, status, code });
      expect(typeof res.body.message).toBe('string');
    }
    // A browser page on another name cannot drive the daemon (DNS rebinding).
    const evil = await new Promise<number>((resolve, reject) => {
      const u = new URL(control);
      http
        .get({ host: u.hostname, port: u.port, path: '/servers', headers: { host: 'evil.example.com' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
        .on('error', reject);
    });
    expect(evil).toBe(403);
    expect(daemon.fleet.size).toBe(size);
  });

  it('shows one server and rescans its VMs and sysinfo', async () => {
    const uuid = existing[0]!;
    const one = await api('GET', `/servers/${uuid}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ uuid, registered: true, sysinfo: { UUID: uuid } });
    expect(one.body.agents.map((a: { name: string }) => a.name)).toContain('cn-agent');

    vmadm.stores.get(uuid)!.put(fakeVm(newUuid()));
    const regs = triton.find('POST', new RegExp(`^/servers/${uuid}/sysinfo$`)).length;
    const file = path.join(dataDir, 'servers', uuid, 'sysinfo.json');
    const edited = { ...JSON.parse(await fsp.readFile(file, 'utf8')), 'Boot Time': '1700000000' };
    await fsp.writeFile(file, JSON.stringify(edited, null, 2));
    const res = await api('POST', `/servers/${uuid}/rescan`);
    expect(res.body).toEqual({ uuid, vms: 1, sysinfoChanged: true });
    expect(vmadm.stores.get(uuid)!.rescans).toBe(1);
    await waitFor(() => triton.find('POST', new RegExp(`^/servers/${uuid}/sysinfo$`)).length > regs, 5000, 're-registration');
    const again = await api('POST', `/servers/${uuid}/rescan`);
    expect(again.body.sysinfoChanged).toBe(false);
  });

  it('reports status: CNs, heartbeats per second, errors by kind', async () => {
    await new Promise((r) => setTimeout(r, 300));
    const res = await api('GET', '/status');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ pid: process.pid, state: 'running', servers: daemon.fleet.size, tasksInFlight: 0 });
    expect(res.body.registered).toBe(daemon.fleet.size);
    expect(typeof res.body.heartbeatsPerSecond).toBe('number');
    expect(res.body.errors['fleet.load']).toBe(1);
    expect(res.body.errors['create-server']).toBeGreaterThanOrEqual(1);
    expect(res.body.cnapi.heartbeat.ok).toBeGreaterThan(0);
    const cfg = await api('GET', '/config');
    expect(cfg.body.urls.cnapi).toBe(triton.url);
    expect(cfg.body.sources.cnapiUrl).toBe('flag');
  });

  it('deletes a server: socket, files, CNAPI record and NAPI NICs', async () => {
    const uuid = existing[1]!;
    const cn = daemon.fleet.get(uuid)!;
    const mac = String(cn.sysinfo['Network Interfaces'].dnet0!['MAC Address']);
    const port = cn.agentAddress!.port;
    const res = await api('DELETE', `/servers/${uuid}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ uuid, warnings: [] });
    expect(daemon.fleet.get(uuid)).toBeUndefined();
    expect((await scanServers(dataDir)).servers).not.toContain(uuid);
    expect(triton.find('DELETE', new RegExp(`^/servers/${uuid}$`)).length).toBe(1);
    expect(triton.find('DELETE', new RegExp(`^/nics/${mac.replace(/:/g, '')}$`)).length).toBe(1);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
    const n = triton.requests.filter((r) => r.path.includes(uuid)).length;
    await new Promise((r) => setTimeout(r, 3 * TIMINGS.heartbeatIntervalMs));
    expect(triton.requests.filter((r) => r.path.includes(uuid)).length).toBe(n);
    await waitFor(async () => !((await readDaemonJson(dataDir))?.servers ?? {})[uuid], 5000, 'daemon.json without it');
  });

  it('refuses a second daemon on the same data dir', async () => {
    const config = await resolveConfig({ flags: { dataDir }, env: {}, mdata: noMdata });
    const second = new Daemon({ config, log: createQuietLogger(), cnAgent: () => new FakeCnAgent(), vmadm: () => new FakeVmadm(), plugins: [] });
    await expect(second.start()).rejects.toThrow(/another mockcloud daemon .*is using/);
    expect(await readDaemonJson(dataDir)).toMatchObject({ pid: process.pid });
  });
});

describe('daemon without CNAPI or NAPI (standalone)', () => {
  it('starts, creates CNs that count as registered, and stops cleanly', async () => {
    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-standalone-'));
    try {
      const config = await resolveConfig({ flags: { dataDir }, env: {}, mdata: noMdata });
      const cnAgent = new FakeCnAgent();
      const daemon = new Daemon({ config, log: createQuietLogger(), cnAgent: () => cnAgent, vmadm: () => new FakeVmadm(), plugins: [] });
      await daemon.start();
      const res = await fetch(`${daemon.controlAddress.url}/servers`, { method: 'POST', body: JSON.stringify({ count: 2 }) });
      const body = (await res.json()) as { created: { uuid: string; adminIp: string }[] };
      expect(body.created.length).toBe(2);
      expect(body.created[0]!.adminIp).toBe('127.0.0.1');
      expect(daemon.fleet.list().every((cn) => cn.registered)).toBe(true);
      await daemon.stop();
      expect(await readDaemonJson(dataDir)).toBeUndefined();
      expect(cnAgent.servers.size).toBe(0);
      expect(daemon.scheduler.size).toBe(0);
    } finally {
      await fsp.rm(dataDir, { recursive: true, force: true });
    }
  });

  it('never gives a new CN a MAC that a CN of the daemon already has, NAPI or not', async () => {
    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-macs-'));
    const forced: string[] = [];
    try {
      const config = await resolveConfig({ flags: { dataDir }, env: {}, mdata: noMdata });
      const daemon = new Daemon({
        config,
        log: createQuietLogger(),
        cnAgent: () => new FakeCnAgent(),
        vmadm: () => new FakeVmadm(),
        plugins: [],
        randomMac: () => forced.shift() ?? randomMockMac(),
      });
      await daemon.start();
      const create = async (): Promise<string[]> => {
        const res = await fetch(`${daemon.controlAddress.url}/servers`, { method: 'POST', body: JSON.stringify({ count: 1 }) });
        const body = (await res.json()) as { created: { uuid: string }[]; errors: unknown[] };
        expect(body.errors).toEqual([]);
        const nics = daemon.fleet.get(body.created[0]!.uuid)!.sysinfo['Network Interfaces'] as Record<string, { 'MAC Address': string }>;
        return Object.values(nics).map((n) => n['MAC Address']);
      };
      const first = await create();
      expect(first.length).toBe(2);
      // The draw comes up with the first CN's MACs (and one twice) before fresh ones.
      forced.push(first[0]!, first[1]!, first[0]!);
      const second = await create();
      expect(forced).toEqual([]);
      expect(new Set([...first, ...second]).size).toBe(4);
      await daemon.stop();
    } finally {
      await fsp.rm(dataDir, { recursive: true, force: true });
    }
  });
});
