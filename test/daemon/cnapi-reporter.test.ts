/**
 * The CNAPI traffic of mock CNs, checked against a recording CNAPI: registration (body, retry
 * with backoff, old CNAPI), agents, heartbeats, status reports with the real VM inventory.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import nodeHttp from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { CnapiReporter } from '../../src/agents/cn-agent/cnapi-reporter/reporter.js';
import { backoffDelay, DEFAULT_REPORTER_TIMINGS, type ReporterTimings } from '../../src/agents/cn-agent/cnapi-reporter/timings.js';
import { buildStatusSample } from '../../src/agents/cn-agent/cnapi-reporter/status-sample.js';
import { JsonHttpClient } from '../../src/common/http-client.js';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import { fakeVm, waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';
import { makeReportingCn } from './helpers/reporting-cn.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };

const FAST: Partial<ReporterTimings> = {
  heartbeatIntervalMs: 150,
  statusIntervalMs: 2000,
  statusThrottleMs: 300,
  startSpreadMs: 50,
  requestTimeoutMs: 2000,
  sysinfoBackoff: { minMs: 40, maxMs: 400, factor: 1.6, jitter: 0.2 },
};

const makeCn = makeReportingCn;

// Every behaviour holds with the heartbeats on the main thread and on the heartbeat thread.
describe.each([
  { thread: false, where: 'on the main thread' },
  { thread: true, where: 'on their own thread' },
])('CNAPI reporter, heartbeats $where', ({ thread }) => {
  let cnapi: RecordingTriton;
  let scheduler: Scheduler;
  let http: JsonHttpClient;
  let reporter: CnapiReporter;

  beforeEach(async () => {
    cnapi = await new RecordingTriton().start();
    scheduler = new Scheduler();
    scheduler.start();
    http = new JsonHttpClient();
  });

  afterEach(async () => {
    await reporter?.stop();
    scheduler.stop();
    http.close();
    await cnapi.stop();
  });

  function startReporter(timings: Partial<ReporterTimings> = FAST, cnapiPausesWithThisThread = true): CnapiReporter {
    reporter = new CnapiReporter({ log: createQuietLogger(), scheduler, http, cnapiUrl: cnapi.url, timings, heartbeatThread: thread, cnapiPausesWithThisThread });
    reporter.start();
    return reporter;
  }

  // A CNAPI that takes connections and never answers: each CN's heartbeat must fail within one
  // interval plus the request timeout (sdc-cn-agent lib/heartbeater.js sends every 5 s with a
  // timeout), not after every heartbeat queued before it has timed out on the few sockets.
  it('sees a hung CNAPI within an interval and a timeout for every CN, and says so in its counters', async () => {
    http.close();
    http = new JsonHttpClient({ maxSockets: 4 });
    startReporter({ ...FAST, requestTimeoutMs: 300 });
    const cns = Array.from({ length: 60 }, (_, i) => makeCn(42000 + i).cn);
    for (const cn of cns) reporter.attach(cn);
    await waitFor(() => cns.every((cn) => cn.registered), 10_000, 'all registered');
    cnapi.hang = true;
    const hungAt = Date.now();
    await waitFor(() => reporter.failingCns.heartbeat === cns.length, 10_000, 'every CN failing');
    expect(Date.now() - hungAt).toBeLessThan(FAST.heartbeatIntervalMs! + 300 + 700);
    // Heartbeats fail on the hot lane; status reports behind them on the 4 sockets may fail last.
    expect(reporter.lastFailure).toMatchObject({ kind: expect.stringMatching(/^(heartbeat|status)$/), reason: expect.stringMatching(/timed out after 300 ms/) });
  });

  // Ahead of a full heap collection (about 1 s at 10,000 CNs) the daemon sends the heartbeats
  // that would fall due during it: early, not late.
  it('sends ahead, at once, every heartbeat due within a window, and keeps the interval after it', async () => {
    // A request's deadline as long as the wait: a first heartbeat that timed out on a loaded
    // machine would come again only after the 60 s interval, and the test would wait in vain.
    startReporter({ ...FAST, heartbeatIntervalMs: 60_000, requestTimeoutMs: 30_000 });
    const cns = Array.from({ length: 5 }, (_, i) => makeCn(43000 + i).cn);
    for (const cn of cns) reporter.attach(cn);
    const beats = () => cnapi.find('POST', /\/events\/heartbeat$/).length;
    // Answered (the next one scheduled), not only seen by CNAPI.
    await waitFor(() => cns.every((cn) => reporter.lastHeartbeatAt(cn.uuid)), 30_000, 'first heartbeats');
    expect(beats()).toBe(cns.length);
    expect((await reporter.sendHeartbeatsAhead(1000)).sent).toBe(0);
    const sentAt = Date.now();
    const ahead = await reporter.sendHeartbeatsAhead(61_000);
    expect(ahead.sent).toBe(cns.length);
    // Resolves once every one of them has been answered.
    await ahead.answered;
    expect(beats()).toBe(2 * cns.length);
    // Sent ahead, not on the 60 s interval (bounded loosely: the machine may be loaded).
    expect(Date.now() - sentAt).toBeLessThan(30_000);
    for (const cn of cns) expect(cnapi.find('POST', new RegExp(`^/servers/${cn.uuid}/events/heartbeat$`))).toHaveLength(2);
    // The next ones follow the interval again.
    expect((await reporter.sendHeartbeatsAhead(1000)).sent).toBe(0);
  });

  // A CNAPI elsewhere does not pause with this thread, and the heartbeat thread does not either:
  // a whole fleet's heartbeats at once only queued them for a connection.
  it('sends ahead only the heartbeats a pause of this thread would hold, when CNAPI is elsewhere', async () => {
    startReporter({ ...FAST, heartbeatIntervalMs: 60_000, requestTimeoutMs: 30_000 }, false);
    const cns = Array.from({ length: 5 }, (_, i) => makeCn(43100 + i).cn);
    for (const cn of cns) reporter.attach(cn);
    const beats = () => cnapi.find('POST', /\/events\/heartbeat$/).length;
    await waitFor(() => cns.every((cn) => reporter.lastHeartbeatAt(cn.uuid)), 30_000, 'first heartbeats');
    const ahead = await reporter.sendHeartbeatsAhead(61_000);
    await ahead.answered;
    // On the main thread they pause with it and go ahead; on their own thread nothing holds them.
    expect(ahead.sent).toBe(thread ? 0 : cns.length);
    expect(beats()).toBe(thread ? cns.length : 2 * cns.length);
  });

  it('uses the real agent\'s intervals by default', () => {
    expect(DEFAULT_REPORTER_TIMINGS.heartbeatIntervalMs).toBe(5000);
    expect(DEFAULT_REPORTER_TIMINGS.statusIntervalMs).toBe(60_000);
    expect(DEFAULT_REPORTER_TIMINGS.statusThrottleMs).toBe(5000);
    expect(DEFAULT_REPORTER_TIMINGS.requestTimeoutMs).toBe(5000);
    expect(DEFAULT_REPORTER_TIMINGS.sysinfoBackoff).toEqual({ minMs: 500, maxMs: 120_000, factor: 1.6, jitter: 0.2 });
  });

  it('backs off from 0.5 s by a factor of 1.6 up to 120 s, with ±20 % jitter', () => {
    const b = DEFAULT_REPORTER_TIMINGS.sysinfoBackoff;
    const mid = () => 0.5;
    expect(backoffDelay(b, 0, mid)).toBe(500);
    expect(backoffDelay(b, 1, mid)).toBe(800);
    expect(backoffDelay(b, 2, mid)).toBe(1280);
    expect(backoffDelay(b, 30, mid)).toBe(120_000);
    expect(backoffDelay(b, 0, () => 0)).toBe(400);
    expect(backoffDelay(b, 0, () => 1)).toBe(600);
    expect(backoffDelay(b, 40, () => 1)).toBe(120_000);
  });

  it('registers sysinfo with the agent address, then posts agents, then heartbeats with {}', async () => {
    const { cn } = makeCn(41234);
    startReporter();
    reporter.attach(cn);
    await waitFor(() => cnapi.find('POST', /\/events\/heartbeat$/).length >= 3, 10_000, 'three heartbeats');

    const reg = cnapi.find('POST', new RegExp(`^/servers/${cn.uuid}/sysinfo$`));
    expect(reg.length).toBe(1);
    const body = reg[0]!.body as { sysinfo: Record<string, unknown> };
    expect(Object.keys(body)).toEqual(['sysinfo']);
    expect(body.sysinfo.UUID).toBe(cn.uuid);
    expect(body.sysinfo['CN Agent IP']).toBe('127.0.0.1');
    expect(body.sysinfo['CN Agent Port']).toBe(41234);
    expect(body.sysinfo['System Type']).toBe('Virtual');
    expect(netconfig.agentIpFromSysinfo(body.sysinfo)).toBe('127.0.0.1');
    expect(cn.registered).toBe(true);

    const agents = cnapi.find('POST', new RegExp(`^/servers/${cn.uuid}$`));
    expect(agents.length).toBe(1);
    const list = (agents[0]!.body as { agents: { name: string; version: string }[] }).agents;
    const cnAgent = list.find((a) => a.name === 'cn-agent');
    expect(cnAgent).toBeDefined();
    const [maj, min] = cnAgent!.version.split('.').map(Number);
    expect(maj! > 2 || (maj === 2 && min! >= 15)).toBe(true);

    // Order: sysinfo first, agents before the first heartbeat.
    const order = cnapi.requests.filter((r) => r.path.startsWith(`/servers/${cn.uuid}`)).map((r) => r.path);
    expect(order[0]).toMatch(/\/sysinfo$/);
    expect(order.indexOf(`/servers/${cn.uuid}`)).toBeLessThan(order.findIndex((p) => p.endsWith('/heartbeat')));

    const beats = cnapi.find('POST', new RegExp(`^/servers/${cn.uuid}/events/heartbeat$`));
    for (const b of beats) expect(b.body).toEqual({});
    // Each heartbeat goes one interval after the previous one ended: never sooner.
    for (let i = 1; i < beats.length; i++) expect(beats[i]!.at - beats[i - 1]!.at).toBeGreaterThanOrEqual(FAST.heartbeatIntervalMs! - 5);

    const ua = String(reg[0]!.headers['user-agent']);
    expect(ua).toBe(`cn-agent/2.15.0 (node/${process.versions.node}) server/${cn.uuid}`);
  });

  it('retries a refused registration with growing delays and sends nothing else meanwhile', async () => {
    const { cn } = makeCn();
    cnapi.failNext(/\/sysinfo$/, { status: 500, body: { code: 'InternalError', message: 'Precondition failed: no connection to Workflow API' } }, 4);
    startReporter();
    reporter.attach(cn);
    await waitFor(() => cn.registered, 10_000, 'registration');
    const attempts = cnapi.find('POST', /\/sysinfo$/);
    expect(attempts.length).toBe(5);
    const gaps = attempts.slice(1).map((a, i) => a.at - attempts[i]!.at);
    // min 40 ms ×1.6 each time, ±20 %: 32-48, 51-77, 82-123, 131-197 (plus scheduling slack).
    expect(gaps[0]).toBeGreaterThanOrEqual(30);
    expect(gaps[3]).toBeGreaterThanOrEqual(125);
    expect(gaps[3]!).toBeGreaterThan(gaps[0]!);
    // Heartbeats wait behind the registration, as the real queue does.
    const firstBeat = cnapi.find('POST', /\/heartbeat$/)[0];
    if (firstBeat) expect(firstBeat.at).toBeGreaterThanOrEqual(attempts[4]!.at);
    expect(reporter.counters.sysinfo.failed).toBe(4);
  });

  it('treats 404 ResourceNotFound as an old CNAPI: registered without retrying', async () => {
    const { cn } = makeCn();
    cnapi.failNext(/\/sysinfo$/, { status: 404, body: { code: 'ResourceNotFound', message: 'no route' } }, 1);
    startReporter();
    reporter.attach(cn);
    await waitFor(() => cnapi.find('POST', /\/heartbeat$/).length > 0, 10_000, 'a heartbeat');
    expect(cnapi.find('POST', /\/sysinfo$/).length).toBe(1);
    expect(cn.registered).toBe(true);
  });

  it('registers again when sysinfo changes', async () => {
    const { cn } = makeCn();
    startReporter();
    reporter.attach(cn);
    await waitFor(() => cn.registered, 10_000, 'registration');
    cn.sysinfo = { ...cn.sysinfo, 'Boot Time': String(Math.floor(Date.now() / 1000) + 60) };
    reporter.sysinfoChanged(cn);
    await waitFor(() => cnapi.find('POST', /\/sysinfo$/).length === 2, 10_000, 'second registration');
    const second = cnapi.find('POST', /\/sysinfo$/)[1]!.body as { sysinfo: Record<string, unknown> };
    expect(second.sysinfo['Boot Time']).toBe(cn.sysinfo['Boot Time']);
  });

  it('reports status at start and soon after a VM changes, with the real inventory', async () => {
    const { cn, store } = makeCn();
    const vm1 = fakeVm(newUuid(), { max_physical_memory: 2048, quota: 10 });
    store.put(vm1);
    store.put(fakeVm(newUuid(), { do_not_inventory: true, max_physical_memory: 512 }));
    // The periodic report is far away: a report with the new VM can only come from the change.
    startReporter({ ...FAST, statusIntervalMs: 60_000 });
    reporter.attach(cn);
    const statusPath = new RegExp(`^/servers/${cn.uuid}/events/status$`);
    await waitFor(() => cnapi.find('POST', statusPath).length >= 1, 10_000, 'first status');
    const first = cnapi.find('POST', statusPath)[0]!.body as Record<string, any>;
    expect(Object.keys(first.vms)).toEqual([vm1.uuid]);
    expect(first.vms[vm1.uuid]).toEqual({
      brand: vm1.brand,
      cpu_cap: vm1.cpu_cap,
      last_modified: vm1.last_modified,
      max_physical_memory: 2048,
      owner_uuid: vm1.owner_uuid,
      quota: 10,
      state: 'running',
      uuid: vm1.uuid,
      zone_state: 'running',
    });
    const total = 262111 * 1024 * 1024;
    expect(first.meminfo.total_bytes).toBe(total);
    // Both running VMs (DNI included) hold their memory.
    expect(first.meminfo.availrmem_bytes).toBeLessThanOrEqual(total - (2048 + 512) * 1024 * 1024);
    expect(first.diskinfo.pool_size_bytes).toBe(3770 * 1024 ** 3);
    expect(first.diskinfo.zone_quota_bytes).toBe((10 + 25) * 1024 ** 3);
    expect(first.zpoolStatus.zones.bytes_used + first.zpoolStatus.zones.bytes_available).toBe(3770 * 1024 ** 3);
    expect(first.boot_time).toBe(new Date(Number(cn.sysinfo['Boot Time']) * 1000).toISOString());
    expect(Date.parse(first.timestamp)).not.toBeNaN();

    // A VM change in the store (no markStatusDirty call) makes a report due soon.
    const before = cnapi.find('POST', statusPath).length;
    const vm2 = fakeVm(newUuid(), { brand: 'bhyve', disks: [{ size: 10240 }], quota: 20 });
    store.put(vm2);
    await waitFor(
      () => cnapi.find('POST', statusPath).slice(before).find((r) => vm2.uuid in (r.body as any).vms),
      5000,
      'status with the new VM',
    );
    const all = cnapi.find('POST', statusPath);
    // Throttled: never two reports closer than the throttle. The throttle counts from each
    // send; these are arrival times, which each request's own latency shifts (tens of ms on a
    // busy machine), hence the margin. An unthrottled report would follow within a few ms.
    for (let i = 1; i < all.length; i++) expect(all[i]!.at - all[i - 1]!.at).toBeGreaterThanOrEqual(FAST.statusThrottleMs! - 50);
  });

  it('computes usage from the VMs against the hardware', () => {
    const { cn, store } = makeCn();
    const empty = buildStatusSample(cn);
    store.put(fakeVm(newUuid(), { max_physical_memory: 4096, quota: 50 }));
    store.put(fakeVm(newUuid(), { state: 'stopped', zone_state: 'installed', max_physical_memory: 8192, quota: 5 }));
    store.put(fakeVm(newUuid(), { brand: 'kvm', disks: [{ size: 10240 }, { size: 20480 }], quota: 10, max_physical_memory: 1024 }));
    const s = buildStatusSample(cn);
    const MiB = 1024 * 1024;
    // A stopped VM holds no memory; running ones do.
    expect(empty.meminfo.availrmem_bytes - s.meminfo.availrmem_bytes).toBe((4096 + 1024) * MiB);
    expect(s.diskinfo.kvm_zvol_volsize_bytes).toBe(30720 * MiB);
    expect(s.diskinfo.kvm_quota_bytes).toBe(10 * 1024 * MiB);
    expect(s.diskinfo.zone_quota_bytes).toBe(55 * 1024 * MiB);
    expect(s.diskinfo.pool_alloc_bytes).toBeGreaterThan(empty.diskinfo.pool_alloc_bytes);
    expect(Object.keys(s.vms).length).toBe(3);
  });

  it('spreads first heartbeats of many CNs instead of firing them in lockstep', async () => {
    const cns = Array.from({ length: 20 }, (_, i) => makeCn(40000 + i).cn);
    startReporter({ ...FAST, startSpreadMs: 400, heartbeatIntervalMs: 5000 });
    for (const cn of cns) reporter.attach(cn);
    await waitFor(() => cnapi.find('POST', /\/heartbeat$/).length >= 20, 10_000, 'first heartbeats');
    const times = cnapi.find('POST', /\/heartbeat$/).map((r) => r.at);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThan(50);
  });

  it('stops all traffic of a detached CN', async () => {
    const { cn } = makeCn();
    startReporter();
    reporter.attach(cn);
    await waitFor(() => cnapi.find('POST', /\/heartbeat$/).length >= 1, 10_000, 'a heartbeat');
    reporter.detach(cn.uuid);
    await new Promise((r) => setTimeout(r, 100));
    const n = cnapi.requests.length;
    await new Promise((r) => setTimeout(r, 2 * FAST.heartbeatIntervalMs!));
    expect(cnapi.requests.length).toBe(n);
  });

  // A CN that is down (sdc-cn-agent is stopped by the shutdown and started at boot): after a
  // graceful shutdown's last status report, nothing; once up, registration first, as at start.
  it('sends nothing for a CN that is down, and registers it anew when it comes up', async () => {
    const { cn, store } = makeCn();
    startReporter();
    cn.hooks = reporter;
    reporter.attach(cn);
    await waitFor(() => cnapi.find('POST', new RegExp(`^/servers/${cn.uuid}/events/heartbeat$`)).length >= 2, 10_000, 'heartbeats');
    store.put(fakeVm(newUuid(), { state: 'stopped', zone_state: 'installed' }));
    const statusesBefore = cnapi.find('POST', /\/events\/status$/).length;

    await cn.setPower('down', { graceful: true });
    expect(cn.registered).toBe(false);
    expect(reporter.downCount).toBe(1);
    const last = cnapi.find('POST', /\/events\/status$/);
    expect(last.length).toBeGreaterThan(statusesBefore);
    // A request already on its way when the CN went down may still land.
    await new Promise((r) => setTimeout(r, 100));
    const afterDown = cnapi.requests.length;
    expect(Object.values((last.at(-1)!.body as { vms: Record<string, { state: string }> }).vms).map((v) => v.state)).toEqual(['stopped']);
    store.put(fakeVm(newUuid()));
    cn.markStatusDirty();
    await new Promise((r) => setTimeout(r, 4 * FAST.heartbeatIntervalMs!));
    expect(cnapi.requests.length).toBe(afterDown);

    await cn.setPower('up');
    await waitFor(() => cnapi.requests.length > afterDown + 2, 10_000, 'traffic again');
    expect(cnapi.requests[afterDown]!.path).toBe(`/servers/${cn.uuid}/sysinfo`);
    await waitFor(() => cn.registered, 5000, 'registered');
    expect(reporter.downCount).toBe(0);
  });

  it('rejects an agents update CNAPI refuses; the CN warns it on the log it is given and goes on (shared.js)', async () => {
    const { cn } = makeCn();
    startReporter();
    cnapi.failNext(new RegExp(`^/servers/${cn.uuid}$`), { status: 500, body: { code: 'InternalError', message: 'down' } }, 1, 'POST');
    cn.hooks = reporter;
    await expect(reporter.postAgents(cn, cn.agents)).rejects.toThrow(/agents/);
    await expect(reporter.postAgents(cn, cn.agents)).resolves.toBeUndefined();
    cnapi.failNext(new RegExp(`^/servers/${cn.uuid}$`), { status: 500, body: { code: 'InternalError', message: 'down' } }, 1, 'POST');
    const warned: unknown[][] = [];
    const refreshed = await cn.refreshAgents({ warn: (...args: unknown[]) => warned.push(args) });
    expect(refreshed.postError?.message).toMatch(/did not accept the agents/);
    expect(warned).toEqual([[{ error: refreshed.postError!.message }, 'posting agents to cnapi']]);
  });

  it('sends one write at a time per CN: a task\'s agents POST waits for the sysinfo registration under way', async () => {
    // CNAPI keeps sysinfo, agents and status in the server's one Moray object, written with an
    // etag: two writes of one CN at once make one lose the etag race (a 500). This CNAPI is
    // slow to answer and notes every overlap of two writes of the same server (a heartbeat is
    // no write: CNAPI keeps it in memory, sdc-cnapi lib/endpoints/servers.js).
    const overlaps: string[] = [];
    const order: string[] = [];
    const inFlight = new Map<string, string>();
    const slow = nodeHttp.createServer((req, res) => {
      const server = /^\/servers\/([^/]+)/.exec(req.url ?? '')?.[1] ?? '';
      const what = `${req.method} ${req.url}`;
      const write = !what.endsWith('/heartbeat');
      const other = inFlight.get(server);
      if (write && other) overlaps.push(`${what} while ${other}`);
      if (write) inFlight.set(server, what);
      order.push(what);
      req.resume();
      setTimeout(() => {
        if (write) inFlight.delete(server);
        res.writeHead(/heartbeat|status/.test(what) ? 204 : 200, { 'content-length': '0' });
        res.end();
      }, 40);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
      reporter = new CnapiReporter({ log: createQuietLogger(), scheduler, http, cnapiUrl: url, timings: FAST, heartbeatThread: thread });
      reporter.start();
      const { cn } = makeCn();
      cn.hooks = reporter;
      reporter.attach(cn);
      await waitFor(() => cn.registered, 10_000, 'registration');
      // What agents_uninstall does: "SDC Agents" changes (sysinfo registered again) and the
      // task posts the agents list, in the same moment.
      cn.sysinfo = { ...cn.sysinfo, 'SDC Agents': [] };
      reporter.sysinfoChanged(cn);
      await reporter.postAgents(cn, cn.agents);
      await waitFor(() => order.filter((o) => o === `POST /servers/${cn.uuid}/sysinfo`).length === 2, 10_000, 'second registration');
      // Heartbeats and status reports keep flowing meanwhile, never two writes at once either.
      const beats = order.filter((o) => o.endsWith('/heartbeat')).length;
      await waitFor(() => order.filter((o) => o.endsWith('/heartbeat')).length >= beats + 2, 10_000, 'heartbeats');
      expect(order.filter((o) => o === `POST /servers/${cn.uuid}`)).toHaveLength(2);
      expect(overlaps).toEqual([]);
    } finally {
      await reporter.stop();
      slow.closeAllConnections();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });

  // What a removal does (fleet.remove, then DELETE /servers/<uuid> in CNAPI) while CNAPI is slow:
  // an agents task had posted agents and changed sysinfo behind the CN's heartbeat. A sysinfo
  // registration that lands after the DELETE makes the server anew (sdc-cnapi
  // ServerSysinfoRegister creates an unknown server), so nothing may go once detach resolved.
  it('keeps a removed CN out of CNAPI: what it had queued behind a slow heartbeat is not sent after detach', async () => {
    const { cn } = makeCn();
    startReporter({ ...FAST, requestTimeoutMs: 30_000 });
    cn.hooks = reporter;
    reporter.attach(cn);
    const mine = (r: { path: string }) => r.path.startsWith(`/servers/${cn.uuid}`);
    const isBeat = (r: { path: string }) => r.path.endsWith('/events/heartbeat');
    await waitFor(() => cn.registered && cnapi.requests.some((r) => mine(r) && isBeat(r)), 10_000, 'registered and heartbeating');
    cnapi.holdIf = mine;
    await waitFor(() => cnapi.parked.some((p) => isBeat(p.rec)), 10_000, 'a heartbeat held at CNAPI');
    // The agents task: "SDC Agents" changes (a registration is due) and the agents are posted.
    cn.sysinfo = { ...cn.sysinfo, 'SDC Agents': [] };
    reporter.sysinfoChanged(cn);
    const agentsPosted = reporter.postAgents(cn, cn.agents).then(
      () => 'posted',
      (err: Error) => err.message,
    );
    cnapi.release(isBeat);
    await waitFor(() => cnapi.parked.some((p) => !isBeat(p.rec)), 10_000, 'a write of the CN held at CNAPI');

    const detached = reporter.detach(cn.uuid);
    cnapi.holdIf = undefined;
    cnapi.release();
    await detached;
    const after = cnapi.requests.length;
    cnapi.servers.delete(cn.uuid); // the removal's DELETE /servers/<uuid>
    await agentsPosted;
    await new Promise((r) => setTimeout(r, 4 * FAST.heartbeatIntervalMs!));
    expect(cnapi.requests.slice(after).map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(cnapi.servers.has(cn.uuid)).toBe(false);
  });

  // The mock's status reports share the fleet's connections and may wait seconds for one; a real
  // CN's go at once. A heartbeat behind them would miss CNAPI's 11 s window (heartbeat_reconciler).
  it('keeps heartbeats on time while the CN\'s status report hangs at CNAPI', async () => {
    const late: number[] = [];
    reporter = new CnapiReporter({
      heartbeatThread: thread,
      log: createQuietLogger(),
      scheduler,
      http,
      cnapiUrl: cnapi.url,
      timings: { ...FAST, heartbeatIntervalMs: 250, requestTimeoutMs: 30_000 },
      onHeartbeatLate: (ms) => late.push(ms),
    });
    reporter.start();
    const { cn } = makeCn();
    const isStatus = (r: { path: string }) => r.path.endsWith('/events/status');
    cnapi.holdIf = isStatus;
    reporter.attach(cn);
    await waitFor(() => cnapi.parked.some((p) => isStatus(p.rec)), 10_000, 'a status report held at CNAPI');
    const heldAt = Date.now();
    const lateBefore = late.length;
    const beats = () => cnapi.find('POST', new RegExp(`^/servers/${cn.uuid}/events/heartbeat$`)).length;
    const before = beats();
    await waitFor(() => beats() >= before + 6, 10_000, 'heartbeats while the status report hangs');
    expect(cnapi.parked.filter((p) => isStatus(p.rec))).toHaveLength(1);
    // Lateness is taken as each heartbeat leaves (the thread's reach this one with its answer):
    // none of them waited for the status report.
    await waitFor(() => late.length >= lateBefore + 5, 10_000, 'the heartbeats\' lateness');
    const lateDuring = late.slice(lateBefore);
    expect(lateDuring.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...lateDuring)).toBeLessThan((Date.now() - heldAt) / 2);
  });

  // A hook or the log that throws on a failed request must not stop the CN's reporting or
  // crash the process with an unhandled rejection.
  it('goes on reporting after the error hook throws on a refused status report', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      let thrown = 0;
      reporter = new CnapiReporter({
        heartbeatThread: thread,
        log: createQuietLogger(),
        scheduler,
        http,
        cnapiUrl: cnapi.url,
        timings: FAST,
        onError: () => {
          thrown++;
          throw new Error('a broken error counter');
        },
      });
      reporter.start();
      const { cn, store } = makeCn();
      const statusPath = new RegExp(`^/servers/${cn.uuid}/events/status$`);
      cnapi.failNext(statusPath, { status: 500, body: { code: 'InternalError', message: 'moray down' } }, 1, 'POST');
      reporter.attach(cn);
      await waitFor(() => thrown === 1, 10_000, 'the refused status report');
      const statuses = cnapi.find('POST', statusPath).length;
      store.put(fakeVm(newUuid()));
      reporter.statusDirty(cn);
      await waitFor(() => cnapi.find('POST', statusPath).length > statuses, 10_000, 'the next status report');
      await expect(reporter.postAgents(cn, cn.agents)).resolves.toBeUndefined();
      await new Promise((r) => setImmediate(r));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  // A CN whose sysinfo CNAPI keeps refusing holds its heartbeats (as the real queue does): a
  // heartbeat sent ahead for it would be answered only when CNAPI accepts the registration.
  it('sends no heartbeat ahead for a CN retrying its registration, and never waits for one', async () => {
    startReporter({ ...FAST, heartbeatIntervalMs: 60_000, requestTimeoutMs: 30_000 });
    const [a, b] = [makeCn(44001).cn, makeCn(44002).cn];
    for (const cn of [a, b]) reporter.attach(cn);
    await waitFor(() => reporter.lastHeartbeatAt(a!.uuid) && reporter.lastHeartbeatAt(b!.uuid), 30_000, 'first heartbeats');
    const sysinfoOfA = new RegExp(`^/servers/${a!.uuid}/sysinfo$`);
    cnapi.failNext(sysinfoOfA, { status: 500, body: { code: 'InternalError', message: 'moray down' } }, 1000, 'POST');
    reporter.sysinfoChanged(a!);
    await waitFor(() => cnapi.find('POST', sysinfoOfA).length >= 3, 10_000, 'registration retries');
    const bounded = (p: Promise<void>) => Promise.race([p.then(() => 'answered'), new Promise((r) => setTimeout(() => r('still waiting'), 5000))]);
    const first = await reporter.sendHeartbeatsAhead(61_000);
    expect(first.sent).toBe(1);
    expect(await bounded(first.answered)).toBe('answered');
    // The one sent for b is answered; nothing is left for a later call to wait for.
    const second = await reporter.sendHeartbeatsAhead(1000);
    expect(second.sent).toBe(0);
    expect(await bounded(second.answered)).toBe('answered');
    cnapi.clearFailures();
  });
});
