/**
 * Fault events (src/events, docs/events.md) seen from the outside: the daemon's control API
 * starts them, and sdc-clients' CNAPI and VMAPI clients watch what Triton sees, against the
 * dev headnode. The dev CNAPI's heartbeat reconciler runs with a short lifetime so `unknown`
 * shows within a test (sdc-cnapi lib/heartbeat_reconciler.js: 5 s period, 11 s lifetime).
 * VM facts follow smartos-live src/vm (exit_status/exit_timestamp from the zone's lastexited;
 * autoboot VMs start when the CN boots) and sdc-vm-agent (VM changes PUT to VMAPI).
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cnapiTask, startDevDc, type DevDc, type Obj } from './helpers/dev-dc.js';
import { call, closeClient, raw, vmapiClient, waitFor, type Client } from './helpers/sdc-clients.js';

const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

interface Answer {
  status: number;
  body: Obj;
}

describe('fault events against the dev headnode', () => {
  let dc: DevDc;
  let vmapi: Client;
  let base: string;
  /** The VM made on servers[1] for the VM events. */
  let vm: string;

  const control = async (method: string, urlPath: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${dc.daemon.controlAddress.url}${urlPath}`, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Obj) : {} };
  };
  const start = async (event: Obj): Promise<Obj> => {
    const res = await control('POST', '/events', event);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  const server = (uuid: string): Promise<Obj> => call<Obj>(dc.cnapi, 'getServer', uuid);
  const logLines = async (): Promise<Obj[]> =>
    (await fsp.readFile(path.join(dc.dataDir, 'events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Obj);

  beforeAll(async () => {
    dc = await startDevDc(3, { heartbeat: { periodMs: 250, lifetimeMs: 1500 } });
    vmapi = vmapiClient(dc.urls.vmapi);
    const imgRes = await fetch(`${dc.urls.imgapi}/images?name=base-64-lts`);
    base = ((await imgRes.json()) as Obj[])[0]!.uuid as string;
    vm = randomUUID();
    const created = await cnapiTask(dc.cnapi, `/servers/${dc.servers[1]}/vms`, {
      uuid: vm,
      owner_uuid: OWNER,
      brand: 'joyent-minimal',
      image_uuid: base,
      ram: 256,
      quota: 10,
      autoboot: true,
    });
    expect(created.status, JSON.stringify(created.history)).toBe('complete');
    await waitFor(async () => ((await call<Obj>(vmapi, 'getVm', { uuid: vm }).catch(() => undefined))?.state === 'running' ? true : undefined), 30_000, 100);
  }, 120_000);

  afterAll(async () => {
    closeClient(vmapi);
    await dc?.close();
  }, 60_000);

  it('refuses bad events with Triton-style errors; all is every compute node', async () => {
    const badType = await control('POST', '/events', { type: 'meteor', target: { all: true } });
    expect(badType.status).toBe(400);
    expect(badType.body.code).toBe('InvalidArgument');
    expect(badType.body.message).toMatch(/type must be one of/);
    const twoSelectors = await control('POST', '/events', { type: 'offline', target: { all: true, count: 1 } });
    expect(twoSelectors.status).toBe(400);
    const noServer = await control('POST', '/events', { type: 'offline', target: { servers: [randomUUID()] } });
    expect(noServer.status).toBe(422);
    expect(noServer.body.code).toBe('NoMatchingServers');
    const noProfile = await control('POST', '/events', { type: 'offline', target: { profile: 'no-such' } });
    expect(noProfile.status).toBe(422);
    // Every CN but the headnode server: `all` never takes it.
    const all = await start({ type: 'slow-heartbeat', target: { all: true }, params: { lateMs: 10 } });
    expect([...(all.servers as string[])].sort()).toEqual([...dc.servers].sort());
    expect((await control('DELETE', `/events/${all.id as string}`)).body).toEqual({ id: all.id, ended: true });
    expect((await control('DELETE', `/events/${all.id as string}`)).status).toBe(404);
    expect((await control('GET', '/events')).body).toEqual({ active: [] });
  });

  it('offline: CNAPI shows the CN unknown, its cn-agent refuses connections, then it is running again', async () => {
    const target = dc.servers[0]!;
    const agent = dc.daemon.fleet.get(target)!.agentAddress!;
    const ev = await start({ type: 'offline', target: { servers: [target] }, durationMs: 4000, source: { scenario: 'test', step: 1 } });
    expect(ev.servers).toEqual([target]);
    expect(typeof ev.endsAt).toBe('string');
    const refused = await new Promise<string>((resolve) => {
      const s = net.connect(agent.port, agent.ip);
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
    await waitFor(async () => ((await server(target)).status === 'unknown' ? true : undefined), 10_000, 100);
    expect((await control('GET', '/events')).body.active.map((e: Obj) => e.id)).toEqual([ev.id]);
    await waitFor(async () => ((await server(target)).status === 'running' ? true : undefined), 20_000, 100);
    await waitFor(async () => ((await control('GET', '/events')).body.active.length === 0 ? true : undefined), 5000, 50);
    const lines = (await logLines()).filter((l) => l.id === ev.id);
    expect(lines.map((l) => l.phase)).toEqual(['start', 'end']);
    expect(lines[0]).toMatchObject({ type: 'offline', servers: [target], source: { scenario: 'test', step: 1 }, seed: null });
    expect(lines[1]!.reason).toBe('duration');
  }, 60_000);

  it('vm-crash: VMAPI shows the VM stopped with its exit status, CNAPI sees it in the next status report', async () => {
    const target = dc.servers[1]!;
    const ev = await start({ type: 'vm-crash', target: { servers: [target] }, params: { vms: [vm], exitStatus: 3 } });
    expect(ev.vms).toEqual([vm]);
    const seen = await waitFor(async () => {
      const v = await call<Obj>(vmapi, 'getVm', { uuid: vm });
      return v.state === 'stopped' ? v : undefined;
    }, 20_000, 100);
    expect(seen.exit_status).toBe(3);
    expect(Number.isNaN(Date.parse(seen.exit_timestamp as string))).toBe(false);
    await waitFor(async () => (((await server(target)).vms as Obj)?.[vm]?.state === 'stopped' ? true : undefined), 20_000, 100);
    // A crash is not a stop: autoboot stays as it was.
    expect((await call<Obj>(dc.cnapi, 'getVm', target, vm)).autoboot).toBe(true);
    // It acted once: ended on its own, with a start and an end line.
    await waitFor(async () => ((await control('GET', '/events')).body.active.length === 0 ? true : undefined), 5000, 50);
    expect((await logLines()).filter((l) => l.id === ev.id).map((l) => [l.phase, l.vms])).toEqual([
      ['start', [vm]],
      ['end', [vm]],
    ]);
  }, 60_000);

  it('partition: the CN keeps running tasks, and its VM change reaches VMAPI only once it returns', async () => {
    const target = dc.servers[1]!;
    expect((await call<Obj>(vmapi, 'getVm', { uuid: vm })).state).toBe('stopped');
    const ev = await start({ type: 'partition', target: { servers: [target] } });
    const booted = await cnapiTask(dc.cnapi, `/servers/${target}/vms/${vm}/start`, {});
    expect(booted.status, JSON.stringify(booted.history)).toBe('complete');
    // Long enough for vm-agent to have told VMAPI several times over, were it connected.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await call<Obj>(vmapi, 'getVm', { uuid: vm })).state).toBe('stopped');
    await waitFor(async () => ((await server(target)).status === 'unknown' ? true : undefined), 10_000, 100);
    expect((await control('DELETE', `/events/${ev.id as string}`)).status).toBe(200);
    await waitFor(async () => ((await call<Obj>(vmapi, 'getVm', { uuid: vm })).state === 'running' ? true : undefined), 30_000, 100);
    await waitFor(async () => ((await server(target)).status === 'running' ? true : undefined), 10_000, 100);
    const end = (await logLines()).find((l) => l.id === ev.id && l.phase === 'end');
    expect(end?.reason).toBe('deleted');
  }, 60_000);

  it('zpool-fill: CNAPI\'s pool figures and unreserved disk follow the pool as it fills', async () => {
    const target = dc.servers[2]!;
    const capacity = async (): Promise<Obj> =>
      (await call<Obj[]>(dc.cnapi, 'listServers', { uuids: target, extras: 'capacity,disk' }))[0]!;
    const before = await capacity();
    expect(before.unreserved_disk).toBeGreaterThan(0);
    const ev = await start({ type: 'zpool-fill', target: { servers: [target] }, params: { percent: 95, overMs: 1000 } });
    const after = await waitFor(async () => {
      const s = await capacity();
      return s.disk_pool_alloc_bytes >= 0.94 * s.disk_pool_size_bytes ? s : undefined;
    }, 20_000, 100);
    expect(after.unreserved_disk).toBeLessThan(before.unreserved_disk);
    // cn-agent's ZFS model (zfs_list_pools, `zpool list`) shows the same pool.
    const pools = (await raw<Obj[]>(dc.cnapi, 'get', `/servers/${target}/zpools`)).body;
    expect(Number.parseInt(String(pools[0]!.cap), 10)).toBeGreaterThanOrEqual(94);
    // What is left of the pool bounds what DAPI may reserve: at most the 5 % not filled.
    expect(after.unreserved_disk).toBeLessThanOrEqual(Math.ceil((0.06 * after.disk_pool_size_bytes) / (1024 * 1024)));
    // A state, not a condition: the ramp done, the event has ended and the pool stays full.
    await waitFor(async () => ((await logLines()).some((l) => l.id === ev.id && l.phase === 'end') ? true : undefined), 5000, 50);
    expect((await control('DELETE', `/events/${ev.id as string}`)).status).toBe(404);
    expect((await capacity()).disk_pool_alloc_bytes).toBeGreaterThanOrEqual(0.94 * after.disk_pool_size_bytes);
    // On disk with the CN, so a restarted daemon loads the pool as full as it was.
    const kept = JSON.parse(await fsp.readFile(path.join(dc.dataDir, 'servers', target, 'zpool-fill.json'), 'utf8')) as Obj;
    expect(kept.poolFill).toBeCloseTo(0.95, 5);
  }, 60_000);

  it('task-fault hang: a task gets no answer until the event ends; a caller that gives up frees it', async () => {
    const target = dc.servers[2]!;
    const agent = dc.daemon.fleet.get(target)!.agentAddress!;
    const ev = await start({ type: 'task-fault', target: { servers: [target] }, params: { task: 'nop', hang: true } });
    const post = (signal?: AbortSignal): Promise<{ status: number; at: number }> =>
      fetch(`http://${agent.ip}:${agent.port}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ task: 'nop', params: {} }),
        ...(signal ? { signal } : {}),
      }).then(async (r) => {
        await r.text();
        return { status: r.status, at: Date.now() };
      });
    // A caller that gives up: its connection closes, and the hung task goes with it.
    const gaveUp = post(AbortSignal.timeout(300)).catch((err: Error) => err.name);
    expect(await gaveUp).toBe('TimeoutError');
    await waitFor(async () => ((await control('GET', '/status')).body.tasksInFlight === 0 ? true : undefined), 5000, 50);
    // One that waits gets its answer once the event ends.
    const waiting = post();
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect((await control('GET', '/status')).body.tasksInFlight).toBe(1);
    const endedAt = Date.now();
    expect((await control('DELETE', `/events/${ev.id as string}`)).status).toBe(200);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.at).toBeGreaterThanOrEqual(endedAt);
  }, 60_000);

  it('reboot: the CN goes down and up with a new boot time, and its autoboot VM comes back running', async () => {
    const target = dc.servers[1]!;
    const bootBefore = (await server(target)).last_boot;
    const vmBefore = await waitFor(async () => {
      const v = await call<Obj>(vmapi, 'getVm', { uuid: vm });
      return v.state === 'running' ? v : undefined;
    }, 20_000, 100);
    const ev = await start({ type: 'reboot', target: { servers: [target] }, params: { bootMs: 300 } });
    expect(ev.servers).toEqual([target]);
    const up = await waitFor(async () => {
      const s = await server(target);
      return s.status === 'running' && s.last_boot !== bootBefore ? s : undefined;
    }, 30_000, 100);
    expect(up.last_boot).not.toBe(bootBefore);
    // The VM went down with its host and, autoboot set, was started again at boot.
    const vmAfter = await waitFor(async () => {
      const v = await call<Obj>(vmapi, 'getVm', { uuid: vm });
      return v.state === 'running' && v.boot_timestamp !== vmBefore.boot_timestamp ? v : undefined;
    }, 20_000, 100);
    expect(vmAfter.exit_status).toBe(0);
    expect((await logLines()).filter((l) => l.id === ev.id).map((l) => l.phase)).toEqual(['start', 'end']);
  }, 60_000);
});
