/**
 * Nothing leaks into Triton when a removal or a creation goes wrong (issue 14): a CN is removed
 * from the data dir only once its NAPI NICs and CNAPI record are gone (each call retried with
 * backoff); otherwise it stays "deleting" and the next start finishes the job. A creation whose
 * admin NIC cannot be released keeps its marker, and the next start releases the NIC.
 * Against a recording CNAPI + NAPI with injected failures; the daemon's own control API.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { creatingDir, deletingDir, serverPaths } from '../../src/mockcn/layout.js';
import { scanServers } from '../../src/mockcn/server-dir.js';
import { FakeCnAgent, FakeVmadm, waitFor } from './helpers/fakes.js';
import { LOST, RecordingTriton } from './helpers/recording-triton.js';

const TIMINGS = { heartbeatIntervalMs: 200, statusThrottleMs: 200, startSpreadMs: 50, sysinfoBackoff: { minMs: 30, maxMs: 200 } };

describe('clean-up of removed and half-created CNs', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: Daemon | undefined;

  async function startDaemon(): Promise<Daemon> {
    const config = await resolveConfig({
      flags: { dataDir, cnapiUrl: triton.url, napiUrl: triton.url, bindIp: '127.0.0.1', datacenterName: 'testdc' },
      env: {},
      mdata: noMdata,
    });
    const d = new Daemon({ config, log: createQuietLogger(), cnAgent: () => new FakeCnAgent(), vmadm: () => new FakeVmadm(), plugins: [] });
    await d.start();
    daemon = d;
    return d;
  }

  async function api(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${daemon!.controlAddress.url}${p}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  async function createOne(): Promise<{ uuid: string; mac: string }> {
    const res = await api('POST', '/servers', { count: 1 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const uuid = res.body.created[0].uuid as string;
    const mac = String(daemon!.fleet.get(uuid)!.sysinfo['Network Interfaces'].dnet0!['MAC Address']).replace(/:/g, '');
    return { uuid, mac };
  }

  beforeEach(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-cleanup-'));
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS }));
    triton = await new RecordingTriton().start();
  });

  afterEach(async () => {
    await daemon?.stop();
    daemon = undefined;
    await triton?.stop();
    await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('retries a failing NAPI DELETE with backoff, then removes the CN', async () => {
    await startDaemon();
    const { uuid, mac } = await createOne();
    triton.failNext(new RegExp(`^/nics/${mac}$`), { status: 503, body: { code: 'ServiceUnavailable', message: 'busy' } }, 2, 'DELETE');
    const res = await api('DELETE', `/servers/${uuid}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(triton.find('DELETE', new RegExp(`^/nics/${mac}$`))).toHaveLength(3);
    expect(triton.nics.has(mac)).toBe(false);
    expect(existsSync(serverPaths(dataDir, uuid).dir)).toBe(false);
    expect(existsSync(deletingDir(dataDir, uuid))).toBe(false);
  });

  it('keeps a CN whose NIC NAPI will not release as "deleting", and the next start finishes the job', async () => {
    await startDaemon();
    const { uuid, mac } = await createOne();
    triton.failNext(new RegExp(`^/nics/${mac}$`), { status: 500, body: { code: 'InternalError', message: 'moray is down' } }, 100, 'DELETE');
    const res = await api('DELETE', `/servers/${uuid}`);
    expect(res.status).toBe(502);
    expect(res.body.message).toMatch(/kept as "deleting"/);
    expect(res.body.message).toContain('moray is down');
    expect(triton.find('DELETE', new RegExp(`^/nics/${mac}$`)).length).toBe(5); // tried, with backoff
    // It is no CN any more (not served, not listed), but its files stay for the clean-up.
    expect(daemon!.fleet.get(uuid)).toBeUndefined();
    expect((await api('GET', '/servers')).body.map((s: { uuid: string }) => s.uuid)).not.toContain(uuid);
    expect(existsSync(path.join(deletingDir(dataDir, uuid), 'sysinfo.json'))).toBe(true);
    expect((await api('GET', '/status')).body.deletingServers).toEqual([uuid]);
    expect(triton.nics.has(mac)).toBe(true);

    // The next start (NAPI well again) finishes it, without being asked.
    await daemon!.stop();
    triton.clearFailures();
    await startDaemon();
    await waitFor(() => !existsSync(deletingDir(dataDir, uuid)), 10_000, 'the removal finished');
    expect(triton.nics.has(mac)).toBe(false);
    expect(triton.find('DELETE', new RegExp(`^/servers/${uuid}$`)).length).toBeGreaterThanOrEqual(1);
    expect((await api('GET', '/status')).body.deletingServers).toEqual([]);
    expect((await scanServers(dataDir)).deleting).toEqual([]);
  });

  it('a second delete of a "deleting" CN finishes it', async () => {
    await startDaemon();
    const { uuid, mac } = await createOne();
    triton.failNext(/^\/servers\/[^/]+$/, { status: 500, body: { code: 'InternalError', message: 'no moray' } }, 5, 'DELETE');
    expect((await api('DELETE', `/servers/${uuid}`)).status).toBe(502);
    expect(triton.nics.has(mac)).toBe(false); // what could be done was done
    const again = await api('DELETE', `/servers/${uuid}`);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(existsSync(deletingDir(dataDir, uuid))).toBe(false);
    expect((await api('DELETE', `/servers/${uuid}`)).status).toBe(404);
  });

  it('a creation whose admin NIC cannot be released keeps its marker, and the next start releases the NIC', async () => {
    await startDaemon();
    // NAPI makes the NIC but the answer is lost; NAPI cannot say whether it has it, nor release it.
    triton.failNext(/^\/networks\/admin\/nics$/, { status: LOST }, 1, 'POST');
    // (The admin MAC: even; the GET of the odd one, before, checks the pair is free.)
    triton.failNext(/^\/nics\/[0-9a-f]{11}[02468ace]$/, { status: 500, body: { code: 'InternalError', message: 'no moray' } }, 100, 'GET');
    triton.failNext(/^\/nics\/[0-9a-f]{12}$/, { status: 503, body: { code: 'ServiceUnavailable', message: 'busy' } }, 100, 'DELETE');
    const res = await api('POST', '/servers', { count: 1 });
    expect(res.status).toBeGreaterThanOrEqual(500);
    const scan = await scanServers(dataDir);
    expect(scan.creating).toHaveLength(1);
    const marker = JSON.parse(await fsp.readFile(path.join(creatingDir(dataDir, scan.creating[0]!), 'create.json'), 'utf8')) as { napiMacs: string[] };
    const mac = marker.napiMacs[0]!.replace(/:/g, '');
    expect(triton.nics.has(mac)).toBe(true);
    // Tried, with backoff: each release reads the NIC first (is it still ours?), and NAPI cannot say.
    expect(triton.find('GET', new RegExp(`^/nics/${mac}$`)).length).toBeGreaterThanOrEqual(5);
    expect(triton.find('DELETE', new RegExp(`^/nics/${mac}$`))).toHaveLength(0);

    await daemon!.stop();
    triton.clearFailures();
    await startDaemon();
    expect((await scanServers(dataDir)).creating).toEqual([]);
    expect(triton.find('DELETE', new RegExp(`^/nics/${mac}$`))).toHaveLength(1);
    expect(triton.nics.has(mac)).toBe(false);
  });

  it('a POST of the admin NIC whose answer is lost is checked in NAPI: the NIC made is used, not made twice', async () => {
    await startDaemon();
    triton.failNext(/^\/networks\/admin\/nics$/, { status: LOST }, 1, 'POST');
    const { uuid, mac } = await createOne();
    expect(triton.find('POST', /^\/networks\/admin\/nics$/)).toHaveLength(1);
    expect(triton.find('GET', new RegExp(`^/nics/${mac}$`)).length).toBeGreaterThanOrEqual(1);
    expect(daemon!.fleet.get(uuid)!.sysinfo['Admin IP']).toBe(triton.nics.get(mac)!.ip);
  });

  it('a MAC NAPI already has (another daemon took it first) is drawn again; that NIC is left alone', async () => {
    await startDaemon();
    triton.failNext(/^\/networks\/admin\/nics$/, { status: 422, body: { code: 'InvalidParameters', message: 'Invalid parameters', errors: [{ field: 'mac', code: 'Duplicate', message: 'Already exists' }] } }, 1, 'POST');
    const { mac } = await createOne();
    const posts = triton.find('POST', /^\/networks\/admin\/nics$/);
    expect(posts).toHaveLength(2);
    const refused = String((posts[0]!.body as { mac: string }).mac).replace(/:/g, '');
    expect(refused).not.toBe(mac);
    expect(triton.find('DELETE', new RegExp(`^/nics/${refused}$`))).toEqual([]);
    expect((await scanServers(dataDir)).creating).toEqual([]);
  });
});
