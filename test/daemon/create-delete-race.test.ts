/**
 * Creating and deleting the same CNs never leaks (issue 24): a delete waits for a creation of
 * the same CN still in flight, and nothing a CN's agents were sending when it was deleted lands
 * in Triton after the clean-up swept it (an in-flight NIC POST of net-agent left server NICs
 * of deleted CNs in NAPI under churn).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createNetAgentPlugin } from '../../src/agents/net-agent/index.js';
import { createVmAgentPlugin } from '../../src/agents/vm-agent/index.js';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { FakeCnAgent, FakeVmadm, waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';

type Obj = Record<string, any>;

describe('create and delete of the same CN', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function api(daemon: Daemon, method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${daemon.controlAddress.url}${p}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  async function dataDir(config: Obj = {}): Promise<string> {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-race-'));
    cleanups.push(() => fsp.rm(dir, { recursive: true, force: true }));
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
    return dir;
  }

  it('a delete of a CN being created waits for the creation, then removes it whole', async () => {
    const triton = await new RecordingTriton().start();
    cleanups.push(() => triton.stop());
    const dir = await dataDir({ timings: { heartbeatIntervalMs: 200, startSpreadMs: 50 } });
    const config = await resolveConfig({ flags: { dataDir: dir, cnapiUrl: triton.url, napiUrl: triton.url, bindIp: '127.0.0.1' }, env: {}, mdata: noMdata });
    const daemon = new Daemon({ config, log: createQuietLogger(), cnAgent: () => new FakeCnAgent(), vmadm: () => new FakeVmadm(), plugins: [] });
    await daemon.start();
    cleanups.push(() => daemon.stop());

    // NAPI takes its time with the admin NIC: the creation is in flight when the delete comes.
    triton.delayNext(/^\/networks\/admin\/nics$/, 600, 1, 'POST');
    const uuid = newUuid();
    const creating = api(daemon, 'POST', '/servers', { count: 1, uuid, hostname: 'racer' });
    await waitFor(() => triton.find('POST', /^\/networks\/admin\/nics$/).length > 0, 5000, 'the admin NIC asked for');
    const deleted = await api(daemon, 'DELETE', `/servers/${uuid}`);
    const created = await creating;

    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect((await api(daemon, 'GET', `/servers/${uuid}`)).status).toBe(404);
    expect([...triton.nics.values()].filter((n) => n.belongs_to_uuid === DEFAULT_ADMIN_UUID || n.belongs_to_uuid === uuid)).toEqual([]);
    expect(triton.servers.has(uuid)).toBe(false);
  });

  it('a NIC net-agent was creating when its CN was deleted does not outlive the CN in NAPI', async () => {
    const dir = await dataDir({ timings: { heartbeatIntervalMs: 500, startSpreadMs: 50 } });
    const config = await resolveConfig({ flags: { dataDir: dir, cmonPort: 0 }, env: {}, mdata: noMdata });
    const agents = { startSpreadMs: 0, retryMinMs: 50, retryMaxMs: 500 };
    const daemon = new Daemon({
      config,
      log: createQuietLogger(),
      embeddedHeadnode: {},
      plugins: [createVmAgentPlugin(agents), createNetAgentPlugin({ ...agents, adminUuid: config.adminUuid, changefeedBackoffMinMs: 100, changefeedBackoffMaxMs: 500 })],
    });
    await daemon.start();
    cleanups.push(() => daemon.stop());
    const napi = daemon.config.urls.napi!;
    const nicsOf = async (owner: string): Promise<Obj[]> => (await (await fetch(`${napi}/nics?belongs_to_uuid=${owner}`)).json()) as Obj[];

    const created = await api(daemon, 'POST', '/servers', { count: 2 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const uuids = created.body.created.map((c: Obj) => c.uuid as string) as string[];
    // net-agent has claimed each admin NIC and made the external one (dnet1).
    await waitFor(async () => (await Promise.all(uuids.map(nicsOf))).every((n) => n.length === 2), 15_000, 'each CN with its 2 NICs in NAPI');

    // The CNs' requests to NAPI now take a second each; an operator deletes each CN's external
    // NIC, so net-agent sets about making it again, and the CNs are deleted meanwhile.
    const fault = await api(daemon, 'POST', '/events', { type: 'outbound-fault', target: { servers: uuids }, params: { api: 'napi', delayMs: 1000 } });
    expect(fault.status, JSON.stringify(fault.body)).toBe(201);
    for (const uuid of uuids) {
      const external = (await nicsOf(uuid)).find((n) => n.nic_tag !== 'admin')!;
      expect((await fetch(`${napi}/nics/${String(external.mac).replace(/:/g, '')}`, { method: 'DELETE' })).status).toBe(204);
    }
    await new Promise((r) => setTimeout(r, 200)); // the changefeed tells net-agent
    const results = await Promise.all(uuids.map((u) => api(daemon, 'DELETE', `/servers/${u}`)));
    for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(200);

    // Whatever was in flight has landed by now (each request waits 1 s at most, twice).
    await new Promise((r) => setTimeout(r, 2500));
    for (const uuid of uuids) expect(await nicsOf(uuid), uuid).toEqual([]);
  }, 60_000);
});
