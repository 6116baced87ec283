/**
 * The lasting fault events that bend timing and figures (src/events, docs/events.md), watched
 * through sdc-clients' CNAPI and VMAPI against the dev headnode, whose heartbeat reconciler
 * runs with a short lifetime (sdc-cnapi lib/heartbeat_reconciler.js: a server whose last
 * beat is older than the lifetime is `unknown`). VM facts follow smartos-live src/vm (a
 * reboot from inside: shutting_down, stopped with exit 0, running with a new boot_timestamp).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cnapiTask, startDevDc, type DevDc, type Obj } from './helpers/dev-dc.js';
import { call, closeClient, vmapiClient, waitFor, type Client } from './helpers/sdc-clients.js';

const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

describe('lasting fault events against the dev headnode', () => {
  let dc: DevDc;
  let vmapi: Client;

  const control = async (method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: Obj }> => {
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
  const end = async (ev: Obj): Promise<void> => {
    expect((await control('DELETE', `/events/${ev.id as string}`)).status).toBe(200);
  };
  const statusOf = async (uuid: string): Promise<string> => (await call<Obj>(dc.cnapi, 'getServer', uuid)).status as string;
  const until = (uuid: string, status: string, ms = 15_000): Promise<true> =>
    waitFor(async () => ((await statusOf(uuid)) === status ? true : undefined), ms, 50);

  beforeAll(async () => {
    dc = await startDevDc(3, { heartbeat: { periodMs: 250, lifetimeMs: 1500 } });
    vmapi = vmapiClient(dc.urls.vmapi);
  }, 120_000);

  afterAll(async () => {
    closeClient(vmapi);
    await dc?.close();
  }, 60_000);

  it('slow-heartbeat: beats later than CNAPI\'s lifetime make the CN unknown; ending it brings it back', async () => {
    const target = dc.servers[0]!;
    const ev = await start({ type: 'slow-heartbeat', target: { servers: [target] }, params: { lateMs: 2500 } });
    await until(target, 'unknown');
    // The other CNs beat on time.
    expect(await statusOf(dc.servers[1]!)).toBe('running');
    await end(ev);
    await until(target, 'running');
  }, 60_000);

  it('flap: the CN goes unknown and running in turn while the event lasts, and stays up after it', async () => {
    const target = dc.servers[1]!;
    const ev = await start({ type: 'flap', target: { servers: [target] }, params: { periodMs: 5000, downMs: 2500 }, durationMs: 30_000 });
    await until(target, 'unknown');
    await until(target, 'running');
    await until(target, 'unknown');
    await end(ev);
    await until(target, 'running');
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await statusOf(target)).toBe('running');
  }, 60_000);

  it('memory-pressure: CNAPI\'s available memory drops while it lasts, and comes back', async () => {
    const target = dc.servers[2]!;
    const memory = async (): Promise<Obj> => call<Obj>(dc.cnapi, 'getServer', target);
    const before = await memory();
    const ev = await start({ type: 'memory-pressure', target: { servers: [target] }, params: { percentUsed: 95 } });
    const pressed = await waitFor(async () => {
      const s = await memory();
      return s.memory_available_bytes <= 0.05 * s.memory_total_bytes ? s : undefined;
    }, 15_000, 50);
    expect(pressed.memory_available_bytes).toBeLessThan(before.memory_available_bytes);
    await end(ev);
    await waitFor(async () => ((await memory()).memory_available_bytes === before.memory_available_bytes ? true : undefined), 15_000, 50);
  }, 60_000);

  it('outbound-fault: every CNAPI call of the CN failing makes it unknown, and counts as CNAPI failures', async () => {
    const target = dc.servers[2]!;
    const failedBefore = ((await control('GET', '/status')).body.cnapi as Obj).heartbeat.failed as number;
    const ev = await start({ type: 'outbound-fault', target: { servers: [target] }, params: { api: 'cnapi', errorRate: 1 } });
    await until(target, 'unknown');
    expect(((await control('GET', '/status')).body.cnapi as Obj).heartbeat.failed).toBeGreaterThan(failedBefore);
    await end(ev);
    await until(target, 'running');
  }, 60_000);

  it('vm-reboot: VMAPI sees the VM running again with a new boot_timestamp and exit status 0', async () => {
    const target = dc.servers[0]!;
    const images = (await (await fetch(`${dc.urls.imgapi}/images?name=base-64-lts`)).json()) as Obj[];
    const vm = randomUUID();
    const created = await cnapiTask(dc.cnapi, `/servers/${target}/vms`, {
      uuid: vm,
      owner_uuid: OWNER,
      brand: 'joyent-minimal',
      image_uuid: images[0]!.uuid,
      ram: 256,
      quota: 10,
    });
    expect(created.status, JSON.stringify(created.history)).toBe('complete');
    const first = await waitFor(async () => {
      const v = await call<Obj>(vmapi, 'getVm', { uuid: vm }).catch(() => undefined);
      return v?.state === 'running' && v.boot_timestamp ? v : undefined;
    }, 20_000, 100);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const ev = await start({ type: 'vm-reboot', target: { servers: [target] }, params: { vms: [vm] } });
    expect(ev.vms).toEqual([vm]);
    const after = await waitFor(async () => {
      const v = await call<Obj>(vmapi, 'getVm', { uuid: vm });
      return v.state === 'running' && v.boot_timestamp !== first.boot_timestamp ? v : undefined;
    }, 20_000, 100);
    expect(Date.parse(after.boot_timestamp as string)).toBeGreaterThan(Date.parse(first.boot_timestamp as string));
    expect(after.exit_status).toBe(0);
  }, 60_000);
});
