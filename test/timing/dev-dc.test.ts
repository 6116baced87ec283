/**
 * The dev DC on a timing profile, black-box over HTTP (docs/timing.md). The profile extends
 * smartos with fixed, short figures where the tests measure, so the suite stays fast and the
 * times are known:
 *
 * - a VM created through VMAPI is `provisioning` while its image, install, boot and
 *   provisioning scripts take their time, and a stop then gets VMAPI's 409 (sdc-vmapi
 *   lib/endpoints/vms.js: UnallocatedVMError "Cannot call stop for a VM that has not been
 *   provisioned yet", what test/vms.full.test.js create_vm expects);
 * - a task's history (cn-agent /history through CNAPI's task-history) shows its steps at the
 *   times drawn for them, an import's bytes at the rate;
 * - a rebooted CN is `unknown` in CNAPI for its boot time, then `running` with a new Boot Time;
 * - a VM's stop goes through shutting_down, and its job shows each step's start and end; a
 *   CNAPI task is `active` while it takes its time, then shows cn-agent's `finish` alone; a
 *   waitlist ticket activates when the director gets to it;
 * - the daemon's timing changes through PUT /timing,
 *   and a bad one is refused with its lines, the daemon keeping its own; a timing event slows
 *   one CN's tasks for a while;
 * - the same --seed draws the same durations.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { waitFor } from '../daemon/helpers/fakes.js';
import { at, drawsOf } from './history.js';

const log = createQuietLogger('timing-dev-dc-test');
const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;

const TIMING = `
name: fast-smartos
extends: smartos
tasks:
  machine_create:
    pre_check: 300ms
    ensure_dataset_present: {min: 100ms, max: 200ms}
    fetch_dataset: {fixed: 200ms, rate: 1MB/s}
    add_firewall_rules: 100ms
    create_machine: 200ms
  image_ensure_present:
    run: 100ms
    import: 200ms
  machine_shutdown: 200ms
  server_reboot: 100ms
  nop: 300ms
vm:
  install: 600ms
  boot: 600ms
  provision: 1500ms
  shutdown: 800ms
  halt: 200ms
  uninstall: 200ms
cn:
  boot: 4s
  autoboot_gap: 100ms
workflow:
  pickup: 50ms
  step: 10ms
waitlist:
  activation: 250ms
`;

async function http(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Obj }> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Obj) : {} };
}

async function startDaemon(dataDir: string, flags: Record<string, string>): Promise<Daemon> {
  await fsp.writeFile(
    path.join(dataDir, 'config.json'),
    JSON.stringify({ timings: { startSpreadMs: 50, heartbeatIntervalMs: 500, statusIntervalMs: 2000, statusThrottleMs: 200 } }),
  );
  const config = await resolveConfig({ flags: { dataDir, cmonPort: 0, uiAddress: 'none', ...flags }, env: {}, mdata: noMdata });
  const daemon = new Daemon({ config, log, plugins: undefined, embeddedHeadnode: { heartbeat: { periodMs: 250, lifetimeMs: 1500 } } });
  await daemon.start();
  return daemon;
}

/** Running in CNAPI, every one. */
async function serversRunning(cnapi: string, count: number): Promise<Obj[]> {
  return waitFor(async () => {
    const l = (await http('GET', `${cnapi}/servers?headnode=false`)).body as unknown as Obj[];
    return l.length === count && l.every((s) => s.status === 'running') ? l : undefined;
  }, 30_000, `${count} servers running in CNAPI`);
}

/** POST /tasks to a CN's cn-agent as CNAPI does; resolves with the reply once the task ends. */
function postTask(daemon: Daemon, server: string, task: string, params: Obj): Promise<{ status: number; body: Obj }> {
  const a = daemon.fleet.get(server)!.agentAddress!;
  return http('POST', `http://${a.ip}:${a.port}/tasks`, { task, params }, { 'x-server-uuid': server, 'x-request-id': randomUUID() });
}

describe('the dev DC on a timing profile', () => {
  let dataDir: string;
  let daemon: Daemon;
  let vmapi: string;
  let cnapi: string;
  let control: string;
  let image: string;
  let vmUuid: string;
  let vmServer: string;

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-timing-dc-'));
    const timingFile = path.join(dataDir, 'fast-smartos.yaml');
    await fsp.writeFile(timingFile, TIMING);
    daemon = await startDaemon(dataDir, { timing: timingFile, seed: 'timing-dev-dc' });
    await daemon.growTo(2);
    ({ vmapi, cnapi } = daemon.config.urls as { vmapi: string; cnapi: string });
    control = daemon.controlAddress.url;
    await serversRunning(cnapi, 2);
    await waitFor(() => daemon.fleet.list().every((cn) => cn.registered), 10_000, 'the CNs registered');
    // vm-agent starts each CN up to 5 s after the daemon; until its first sync a VM's states reach VMAPI only then.
    await waitFor(async () => (await http('GET', `${control}/status`)).body.agents['vm-agent'].unsynced === 0, 15_000, "vm-agent's first sync");
    const images = (await http('GET', `${daemon.config.urls.imgapi}/images?name=base-64-lts`)).body as unknown as Obj[];
    image = images[0]!.uuid;
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it("keeps a new VM provisioning for its stages' time, and refuses a stop meanwhile with VMAPI's 409", async () => {
    const started = Date.now();
    const created = await http('POST', `${vmapi}/vms`, {
      owner_uuid: ADMIN, image_uuid: image, brand: 'joyent-minimal', ram: 128, quota: 10,
      networks: [{ name: 'external' }], alias: 'timed',
    });
    expect(created.status).toBe(202);
    vmUuid = created.body.vm_uuid;
    const stop = await http('POST', `${vmapi}/vms/${vmUuid}?action=stop`, {});
    expect(stop).toEqual({ status: 409, body: { code: 'UnallocatedVM', message: 'Cannot call stop for a VM that has not been provisioned yet' } });

    const seen: string[] = [];
    const running = await waitFor(async () => {
      const vm = (await http('GET', `${vmapi}/vms/${vmUuid}`)).body;
      const s = `${vm.state}/${vm.zone_state}`;
      if (seen[seen.length - 1] !== s) seen.push(s);
      return vm.state === 'running' ? vm : undefined;
    }, 30_000, 'the VM running');
    const elapsed = Date.now() - started;
    vmServer = running.server_uuid;
    // The zone's install, boot and provisioning scripts alone take 2.7 s; the task's steps more.
    expect(elapsed).toBeGreaterThanOrEqual(2700 + 300 + 100 + 200);
    expect(seen.slice(0, -1).every((s) => s.startsWith('provisioning/'))).toBe(true);
    expect(seen.some((s) => /^provisioning\/(configured|installed|running)$/.test(s)), seen.join(' ')).toBe(true);

    // The job's chain: each step's start and end, the task's wait as long as the create.
    const job = await waitFor(async () => {
      const j = (await http('GET', `${vmapi}/jobs/${created.body.job_uuid}`)).body;
      return j.execution === 'running' || j.execution === 'queued' ? undefined : j;
    }, 10_000, 'the provision job');
    expect(job.execution).toBe('succeeded');
    const wait = (job.chain_results as Obj[]).find((r) => r.name === 'cnapi.wait_task')!;
    expect(Date.parse(wait.finished_at) - Date.parse(wait.started_at)).toBeGreaterThanOrEqual(2700);
    for (const r of job.chain_results as Obj[]) expect(Date.parse(r.finished_at)).toBeGreaterThanOrEqual(Date.parse(r.started_at));
  }, 60_000);

  it("shows a task's steps in its history at their drawn times, an import's bytes at the rate", async () => {
    const other = daemon.fleet.list().find((cn) => cn.uuid !== vmServer && cn !== daemon.fleet.headnode())!.uuid;
    const newImage = randomUUID();
    const r = await postTask(daemon, other, 'machine_create', {
      uuid: randomUUID(), brand: 'joyent-minimal', image_uuid: newImage, owner_uuid: ADMIN, ram: 128,
      image: { uuid: newImage, files: [{ size: 1_000_000 }] },
    });
    expect(r.status).toBe(200);
    const history = (await http('GET', `${cnapi}/servers/${other}/task-history`)).body as unknown as Obj[];
    const entry = history.filter((h) => h.task === 'machine_create').pop()!;
    const draws = drawsOf(entry);
    expect(draws.get('pre_check')).toBe(300);
    expect(draws.get('fetch_dataset')).toBe(1200); // 200 ms + 1 MB at 1 MB/s
    const ensure = draws.get('ensure_dataset_present')!;
    expect(ensure).toBeGreaterThanOrEqual(100);
    expect(ensure).toBeLessThanOrEqual(200);
    for (const step of ['pre_check', 'ensure_dataset_present', 'fetch_dataset', 'add_firewall_rules']) {
      const took = at(entry, `end:${step}`) - at(entry, `start:${step}`);
      expect(took, step).toBeGreaterThanOrEqual(draws.get(step)! - 2);
      expect(took, step).toBeLessThan(draws.get(step)! + 1500);
    }
    // create_machine: its own 200 ms, then the zone's install, boot and provisioning.
    expect(at(entry, 'end:create_machine') - at(entry, 'start:create_machine')).toBeGreaterThanOrEqual(200 + 2700 - 2);
    expect((entry.messages as Obj[]).filter((m) => m.name === 'progress').map((m) => m.event.value)).toEqual([0, 20, 30, 50, 60, 100]);
  }, 60_000);

  it('keeps a rebooted CN unknown in CNAPI for its boot time, then running with a new Boot Time and its VM booted again', async () => {
    const before = (await http('GET', `${cnapi}/servers/${vmServer}`)).body;
    const vmBefore = (await http('GET', `${vmapi}/vms/${vmUuid}`)).body;
    const started = Date.now();
    // As CNAPI's server-reboot workflow sends it (nojob: no `rebooting` transitional status).
    const reboot = await http('POST', `${cnapi}/servers/${vmServer}/reboot`, { nojob: true });
    expect(reboot.status).toBe(204);
    await waitFor(async () => (await http('GET', `${cnapi}/servers/${vmServer}`)).body.status === 'unknown', 15_000, 'the CN unknown');
    const after = await waitFor(async () => {
      const s = (await http('GET', `${cnapi}/servers/${vmServer}`)).body;
      return s.status === 'running' && s.sysinfo['Boot Time'] !== before.sysinfo['Boot Time'] ? s : undefined;
    }, 30_000, 'the CN running again');
    expect(Date.now() - started).toBeGreaterThanOrEqual(4000);
    expect(Number(after.sysinfo['Boot Time'])).toBeGreaterThan(Number(before.sysinfo['Boot Time']));
    const vmAfter = await waitFor(async () => {
      const vm = (await http('GET', `${vmapi}/vms/${vmUuid}`)).body;
      return vm.state === 'running' && vm.boot_timestamp !== vmBefore.boot_timestamp ? vm : undefined;
    }, 20_000, 'the autoboot VM running again');
    expect(Date.parse(vmAfter.boot_timestamp)).toBeGreaterThanOrEqual(started + 4000);
  }, 60_000);

  it('stops a VM through shutting_down for its shutdown time', async () => {
    const stop = await http('POST', `${vmapi}/vms/${vmUuid}?action=stop`, {});
    expect(stop.status).toBe(202);
    const seen = new Set<string>();
    await waitFor(async () => {
      const vm = (await http('GET', `${vmapi}/vms/${vmUuid}`)).body;
      seen.add(vm.state);
      return vm.state === 'stopped';
    }, 20_000, 'the VM stopped');
    expect([...seen]).toContain('shutting_down');
    // The stop job's chain as a real job reads: each step started and finished, in order, the
    // task's wait lasting the shutdown (800 ms) and halt (200 ms) at least.
    const job = await waitFor(async () => {
      const j = (await http('GET', `${vmapi}/jobs/${stop.body.job_uuid}`)).body;
      return j.execution === 'succeeded' || j.execution === 'failed' ? j : undefined;
    }, 10_000, 'the stop job');
    expect(job.execution).toBe('succeeded');
    const chain = job.chain_results as Obj[];
    expect(chain.length).toBeGreaterThan(2);
    for (const [i, r] of chain.entries()) {
      expect(Date.parse(r.finished_at), r.name).toBeGreaterThanOrEqual(Date.parse(r.started_at));
      if (i > 0) expect(Date.parse(r.started_at), r.name).toBeGreaterThanOrEqual(Date.parse(chain[i - 1]!.finished_at));
    }
    const wait = chain.find((r) => r.name === 'cnapi.wait_task')!;
    expect(Date.parse(wait.finished_at) - Date.parse(wait.started_at)).toBeGreaterThanOrEqual(1000 - 50);
  }, 30_000);

  it("keeps a CNAPI task active while it takes its time, then shows cn-agent's finish alone, as CNAPI does", async () => {
    // sdc-cnapi lib/models/server.js sendTaskRequest keeps only cn-agent's answer ("TODO get
    // taskstatus.history from the response from cn-agent"): the steps are in task-history.
    const started = Date.now();
    const start = await http('POST', `${cnapi}/servers/${vmServer}/vms/${vmUuid}/start`, {});
    // sdc-cnapi lib/models/vm.js performVmTask answers {id} with restify's default 200.
    expect(start.status).toBe(200);
    const during = (await http('GET', `${cnapi}/tasks/${start.body.id}`)).body;
    expect(during.status).toBe('active');
    expect((during.history ?? []) as Obj[]).toEqual([]);
    const done = (await http('GET', `${cnapi}/tasks/${start.body.id}/wait?timeout=30`)).body;
    expect(done.status).toBe('complete');
    expect((done.history as Obj[]).map((h) => h.name)).toEqual(['finish']);
    // machine_boot's run, then the zone's boot (600 ms on this profile).
    expect(Date.parse(done.history[0].timestamp) - started).toBeGreaterThanOrEqual(600);
    const history = (await http('GET', `${cnapi}/servers/${vmServer}/task-history`)).body as unknown as Obj[];
    expect(drawsOf(history.filter((h) => h.task === 'machine_boot').pop()!).get('run')).toBeGreaterThan(0);
  }, 30_000);

  it("activates a waitlist ticket when CNAPI's director gets to it, not at once", async () => {
    const created = Date.now();
    const ticket = await http('POST', `${cnapi}/servers/${vmServer}/tickets`, {
      scope: 'vm', id: randomUUID(), expires_at: new Date(Date.now() + 60_000).toISOString(), action: 'provision',
    });
    expect(ticket.status).toBe(202);
    // Queued when CNAPI answers, unless a busy host took the activation's time to answer.
    expect((ticket.body.queue as Obj[]).map((t) => t.uuid)).toEqual([ticket.body.uuid]);
    const woke = (await http('GET', `${cnapi}/tickets/${ticket.body.uuid}/wait`)).body;
    expect(woke.status ?? (await http('GET', `${cnapi}/tickets/${ticket.body.uuid}`)).body.status).toBe('active');
    // waitlist.activation is 250 ms on this profile.
    expect(Date.now() - created).toBeGreaterThanOrEqual(240);
    expect((await http('PUT', `${cnapi}/tickets/${ticket.body.uuid}/release`)).status).toBe(204);
  }, 30_000);

  it('changes timing through PUT /timing, and keeps its own when a bad one comes', async () => {
    const bad = await http('PUT', `${control}/timing`, {
      name: 'broken',
      yaml: 'extends: smartos\ntasks:\n  nop: -1s\n  machine_creat: 1s\nvm:\n  boot: {p50: 5s, p99: 1s}\n  install: {fixed: 1s, rate: 0MB/s}\n',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('InvalidArgument');
    expect(bad.body.message).toMatch(/broken\.yaml:3:\d+: .*must not be negative/);
    expect(bad.body.message).toMatch(/broken\.yaml:4:\d+: unknown key "machine_creat"/);
    expect(bad.body.message).toMatch(/broken\.yaml:6:\d+: .*p99 \(1000 ms\) is below p50 \(5000 ms\)/);
    expect(bad.body.message).toMatch(/broken\.yaml:7:\d+: .*moves no bytes/);
    expect((await http('GET', `${control}/timing`)).body.profile.name).toBe('fast-smartos');
    expect((await http('PUT', `${control}/timing`, { name: 'solaris' })).status).toBe(400);
    const good = await http('PUT', `${control}/timing`, { name: 'quick', yaml: 'extends: instant\ntasks:\n  nop: 700ms\n' });
    expect(good.status).toBe(200);
    expect(good.body.profile).toMatchObject({ name: 'quick', figures: { 'tasks.nop.run': '700ms' } });
    const server = daemon.fleet.list().find((cn) => cn !== daemon.fleet.headnode())!.uuid;
    const t0 = Date.now();
    expect((await postTask(daemon, server, 'nop', {})).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(698);
    const back = await http('PUT', `${control}/timing`, { file: path.join(dataDir, 'fast-smartos.yaml') });
    expect(back.body.profile.name).toBe('fast-smartos');
  }, 30_000);

  it("slows one CN's tasks for the time a timing event lasts", async () => {
    const [slow, other] = daemon.fleet.list().filter((cn) => cn !== daemon.fleet.headnode()).map((cn) => cn.uuid);
    const ev = await http('POST', `${control}/events`, {
      type: 'timing', target: { servers: [slow] }, durationMs: 60_000, params: { factor: 4, keys: ['tasks'] },
    });
    expect(ev.status).toBe(201);
    const timed = async (server: string): Promise<number> => {
      const t0 = Date.now();
      expect((await postTask(daemon, server, 'nop', {})).status).toBe(200);
      return Date.now() - t0;
    };
    expect(await timed(slow!)).toBeGreaterThanOrEqual(1198);
    expect(await timed(other!)).toBeLessThan(1100);
    expect((await http('DELETE', `${control}/events/${ev.body.id}`)).status).toBe(200);
    expect(await timed(slow!)).toBeLessThan(1100);
  }, 30_000);
});

describe('seeded timing', () => {
  it('draws the same durations from the same --seed', async () => {
    const timing = 'extends: instant\ntasks:\n  nop: {p50: 150ms, p99: 600ms}\n';
    const draws: number[][] = [];
    for (let i = 0; i < 2; i++) {
      const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-timing-seed-'));
      const file = path.join(dataDir, 'seeded.yaml');
      await fsp.writeFile(file, timing);
      const daemon = await startDaemon(dataDir, { timing: file, seed: 'same-seed' });
      try {
        const [server] = (await daemon.growTo(1)).created.map((c) => c.uuid);
        await serversRunning(daemon.config.urls.cnapi!, 1);
        await waitFor(() => daemon.fleet.get(server!)?.registered, 10_000, 'the CN registered');
        for (let n = 0; n < 3; n++) {
          const r = await postTask(daemon, server!, 'nop', {});
          expect(r.status, JSON.stringify(r.body)).toBe(200);
        }
        const history = (await http('GET', `${daemon.config.urls.cnapi}/servers/${server}/task-history`)).body as unknown as Obj[];
        draws.push(history.filter((h) => h.task === 'nop').map((h) => drawsOf(h).get('run')!));
      } finally {
        await daemon.stop();
        await fsp.rm(dataDir, { recursive: true, force: true });
      }
    }
    expect(draws[0]).toHaveLength(3);
    expect(draws[1]).toEqual(draws[0]);
    expect(new Set(draws[0]).size).toBeGreaterThan(1); // drawn, not a constant
  }, 90_000);
});
