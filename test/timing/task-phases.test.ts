/**
 * Long tasks and a CN's boot on a timing profile, black-box over HTTP: sdc-clients' CNAPI
 * client against the dev headnode, the migration and build sockets as VMAPI and sdc-docker
 * speak them, VMAPI for what vm-agent reports (docs/timing.md). The profile extends instant
 * with short fixed figures where the tests measure, so the times are known and the file fast:
 *
 * - machine_migrate: each action's task takes its `run` before cn-agent's finish (the real
 *   task reports nothing else: sdc-cn-agent lib/backends/smartos/tasks/machine_migrate.js
 *   only calls finish); the sync's progress events (bin/machine-migrate-send.js: phase
 *   `sync`, once a second while bytes move) follow the profile's `sync` figure, bytes at its rate;
 * - machine_reprovision: its steps (tasks/machine_reprovision.js createSteps, progress 20, 30,
 *   50, 100) at their drawn times, the image fetched when absent, bytes at the rate; the VM goes
 *   through VM.js reprovision's states (it is stopped first, then provisioning until booted);
 * - docker_build: the task answers after its `run`, each Dockerfile step comes its `step` after
 *   the one before, the image after its `commit`;
 * - a rebooted CN starts its autoboot VMs in creation order, a gap apart, and leaves the
 *   others stopped.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTar, runBuildClient } from '../cn-agent/docker-client.js';
import { ProcessSocket } from '../cn-agent/migration-client.js';
import { call, waitFor } from '../headnode/helpers/sdc-clients.js';
import { cnapiTask, startDevDc, taskError, type DevDc, type Obj } from '../headnode/helpers/dev-dc.js';
import { at, drawsOf } from './history.js';

const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';
const KiB = 1024;

const TIMING = `
name: phases
extends: instant
tasks:
  machine_migrate:
    run: 300ms
    sync: {fixed: 400ms, rate: 512KiB/s}
  machine_reprovision:
    pre_check: 200ms
    ensure_dataset_present: 100ms
    fetch_dataset: {fixed: 100ms, rate: 1MB/s}
    reprovision_machine: 200ms
  docker_build:
    run: 200ms
    step: 300ms
    commit: 500ms
vm:
  install: 300ms
  boot: 300ms
  provision: 500ms
  shutdown: 400ms
  halt: 200ms
cn:
  boot: 1500ms
  autoboot_gap: 500ms
`;

describe('long tasks and a CN boot on a timing profile', () => {
  let dc: DevDc;
  let source: string;
  let target: string;
  let image: string;

  const history = async (server: string, task: string): Promise<Obj> =>
    (await call<Obj[]>(dc.cnapi, 'get', `/servers/${server}/task-history`)).filter((h) => h.task === task).pop()!;
  const finishValue = (task: Obj): Obj => (task.history as Obj[]).find((h) => h.name === 'finish')!.event as Obj;
  const vmapiVm = async (uuid: string): Promise<Obj> => (await fetch(`${dc.urls.vmapi}/vms/${uuid}`)).json() as Promise<Obj>;

  async function createVm(server: string, uuid: string, extra: Obj = {}): Promise<void> {
    const task = await cnapiTask(dc.cnapi, `/servers/${server}/vms`, {
      uuid, owner_uuid: OWNER, brand: 'joyent-minimal', image_uuid: image, ram: 128, quota: 10, ...extra,
    });
    expect(task.status, taskError(task)).toBe('complete');
  }

  beforeAll(async () => {
    dc = await startDevDc(2, { timingYaml: TIMING, seed: 'task-phases' });
    [source, target] = dc.servers as [string, string];
    const images = (await (await fetch(`${dc.urls.imgapi}/images?name=base-64-lts`)).json()) as Obj[];
    image = images[0]!.uuid;
  }, 90_000);

  afterAll(async () => {
    await dc?.close();
  }, 60_000);

  it("machine_migrate: each action takes its run, and the sync's progress follows the profile's bytes and rate", async () => {
    const vm = randomUUID();
    await createVm(source, vm, { alias: 'migrant' });
    const vmObj = await call<Obj>(dc.cnapi, 'getVm', source, vm);
    // As VMAPI's migrate-begin reserves the target (sdc-vmapi lib/workflows/vm-migration/begin.js).
    await createVm(target, vm, { autoboot: false, do_not_inventory: true, vm_migration_target: true });
    const record = {
      id: randomUUID(), vm_uuid: vm, target_vm_uuid: vm, source_server_uuid: source, target_server_uuid: target,
      phase: 'sync', state: 'running', num_sync_phases: 0, progress_history: [],
    };
    const params = { migrationTask: { action: 'sync', record }, vm: vmObj, vm_uuid: vm };

    const t0 = Date.now();
    const src = await cnapiTask(dc.cnapi, `/servers/${source}/vms/${vm}/migrate`, { ...params, action: 'sync' });
    expect(src.status, taskError(src)).toBe('complete');
    // CNAPI shows cn-agent's finish alone, once the task's run (300 ms) is over.
    expect((src.history as Obj[]).map((h) => h.name)).toEqual(['finish']);
    expect(Date.parse(src.history[0].timestamp) - t0).toBeGreaterThanOrEqual(300 - 5);
    const entry = await history(source, 'machine_migrate');
    expect(drawsOf(entry).get('run')).toBe(300);
    expect(at(entry, 'finish') - Date.parse(entry.started_at ?? entry.messages[0].timestamp)).toBeGreaterThanOrEqual(300 - 5);

    const tgt = await cnapiTask(dc.cnapi, `/servers/${target}/vms/${vm}/migrate`, { ...params, action: 'receive' });
    expect(tgt.status, taskError(tgt)).toBe('complete');
    const sp = finishValue(src);
    const tp = finishValue(tgt);
    expect(sp).toMatchObject({ event: 'setup completed' });

    // The sync workflow's conversation (sdc-vmapi lib/workflows/vm-migration/sync.js).
    const sock = await ProcessSocket.open(sp.host, sp.port);
    try {
      expect(await sock.request({ command: 'set-record', record })).toMatchObject({ type: 'response' });
      const syncStart = Date.now();
      const answered = sock.request({ command: 'sync', host: tp.host, port: tp.port }, 30_000);
      // Each line the process sends, with when it came.
      const seen: { ms: number; e: Obj }[] = [];
      let read = sock.events.length;
      const deadline = Date.now() + 30_000;
      while (!seen.some(({ e }) => e.type === 'response' || e.type === 'error') && Date.now() < deadline) {
        const before = read;
        await sock.until(() => sock.events.length > read, deadline - Date.now());
        for (; read < sock.events.length; read++) seen.push({ ms: Date.now() - syncStart, e: sock.events[read]! });
        if (read === before) break; // closed, or out of time
      }
      const done = await answered;
      expect(done, JSON.stringify(done)).toMatchObject({ type: 'response', command: 'sync' });
      const syncMs = seen.find(({ e }) => e.type === 'response')!.ms;
      const progress = seen.filter(({ e }) => e.type === 'progress');
      const last = progress[progress.length - 1]!.e;
      const size = last.total_progress as number;
      expect(size).toBeGreaterThan(0);
      expect(last).toMatchObject({ phase: 'sync', state: 'running', current_progress: size });
      // The sync's draw: 400 ms and its bytes at 512 KiB/s.
      const drawnMs = 400 + (size / (512 * KiB)) * 1000;
      expect(syncMs).toBeGreaterThanOrEqual(drawnMs - 50);
      expect(syncMs).toBeLessThan(drawnMs + 5000);
      // Once a second while bytes move, as the real watcher sends them, never ahead of the draw.
      const during = progress.slice(0, -1);
      expect(during.length, JSON.stringify(seen)).toBeGreaterThanOrEqual(1);
      let prev = 0;
      for (const { ms, e } of during) {
        expect(e).toMatchObject({ type: 'progress', phase: 'sync', state: 'running', total_progress: size });
        expect(e.current_progress).toBeGreaterThanOrEqual(prev);
        expect(e.current_progress).toBeLessThan(size);
        expect(e.current_progress).toBeLessThanOrEqual((size * ms) / drawnMs + 64 * KiB);
        expect(e.eta_ms).toBeGreaterThan(0);
        prev = e.current_progress;
      }
      const speed = Math.max(...during.map(({ e }) => e.transfer_bytes_second as number));
      expect(speed).toBeGreaterThan((size / drawnMs) * 1000 * 0.4);
      expect(speed).toBeLessThan((size / drawnMs) * 1000 * 1.6);
      expect(await sock.request({ command: 'end' })).toMatchObject({ type: 'response', command: 'end' });
    } finally {
      sock.destroy();
    }
  }, 60_000);

  it('machine_reprovision: its steps at their drawn times, the absent image fetched at the rate, the VM stopped then provisioning', async () => {
    const vm = randomUUID();
    await createVm(source, vm, { alias: 'reprovisioned' });
    await waitFor(async () => (await vmapiVm(vm)).state === 'running', 20_000, 50);
    const newImage = randomUUID();
    const started = await call<Obj>(dc.cnapi, 'post', `/servers/${source}/vms/${vm}/reprovision`, {
      image_uuid: newImage,
      image: { uuid: newImage, files: [{ size: 600_000 }] },
    });
    // What vm-agent tells VMAPI meanwhile, in order (each state lasts 200 ms or more).
    const seen: string[] = [];
    const task = await waitFor(async () => {
      const v = await vmapiVm(vm);
      if (seen[seen.length - 1] !== v.state) seen.push(v.state);
      const t = await call<Obj>(dc.cnapi, 'getTask', started.id);
      return t.status !== 'active' && v.state === 'running' && v.image_uuid === newImage ? t : undefined;
    }, 30_000, 50);
    expect(task.status, taskError(task)).toBe('complete');
    // VM.js reprovision stops the VM (shutting_down) before it sets the provisioning transition.
    expect(seen[0]).toBe('running');
    expect(seen[seen.length - 1]).toBe('running');
    const between = seen.slice(1, -1);
    expect(between, seen.join(' ')).toContain('shutting_down');
    expect(between, seen.join(' ')).toContain('provisioning');
    expect(between.indexOf('shutting_down')).toBeLessThan(between.indexOf('provisioning'));
    expect(between.slice(between.indexOf('provisioning'))).toEqual(['provisioning']);

    const entry = await history(source, 'machine_reprovision');
    const draws = drawsOf(entry);
    expect(Object.fromEntries(draws)).toEqual({ pre_check: 200, ensure_dataset_present: 100, fetch_dataset: 700, reprovision_machine: 200 });
    for (const step of ['pre_check', 'ensure_dataset_present', 'fetch_dataset']) {
      const took = at(entry, `end:${step}`) - at(entry, `start:${step}`);
      expect(took, step).toBeGreaterThanOrEqual(draws.get(step)! - 5);
      expect(took, step).toBeLessThan(draws.get(step)! + 1500);
    }
    // Its own 200 ms, then the zone's shutdown, halt, install, boot and provisioning (1.7 s).
    expect(at(entry, 'end:reprovision_machine') - at(entry, 'start:reprovision_machine')).toBeGreaterThanOrEqual(200 + 1700 - 5);
    expect((entry.messages as Obj[]).filter((m) => m.name === 'progress').map((m) => m.event.value)).toEqual([0, 20, 30, 50, 100]);
  }, 60_000);

  it('docker_build: answers after its run, each step its time after the one before, the image after its commit', async () => {
    const vm = randomUUID();
    await createVm(source, vm, { alias: 'builder' });
    const t0 = Date.now();
    const listener = await call<Obj>(dc.cnapi, 'dockerBuild', source, vm, {
      payload: {
        account_uuid: OWNER, command: 'build', imgapi_url: dc.urls.imgapi, nocache: true,
        scratchImageUuid: '5a2fa7b1-bd28-4ff7-a3b7-56ffa1ac37c2',
      },
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(200 - 5);
    const arrived: { ms: number; e: Obj }[] = [];
    const context = makeTar({ Dockerfile: 'FROM scratch\nENV APP=/srv\nLABEL version="1.0"\nCMD ["/bin/true"]\n' });
    const { events } = await runBuildClient(listener.host, listener.port, context, () => ({ result: {} }), 20_000, (e) =>
      arrived.push({ ms: Date.now(), e }),
    );
    expect(events[events.length - 1], JSON.stringify(events)).toEqual({ type: 'end', messageId: events.length });
    const steps = arrived.filter(({ e }) => e.type === 'stdout' && /^Step \d\/4 : /.test(e.message));
    expect(steps.map(({ e }) => e.message.slice(0, 8))).toEqual(['Step 1/4', 'Step 2/4', 'Step 3/4', 'Step 4/4']);
    for (let i = 1; i < steps.length; i++) {
      const gap = steps[i]!.ms - steps[i - 1]!.ms;
      expect(gap, steps[i]!.e.message).toBeGreaterThanOrEqual(300 - 20);
      expect(gap, steps[i]!.e.message).toBeLessThan(300 + 1500);
    }
    const finished = arrived.find(({ e }) => e.type === 'build_finished')!;
    expect(finished.ms - steps[3]!.ms).toBeGreaterThanOrEqual(500 - 20);
    expect(drawsOf(await history(source, 'docker_build')).get('run')).toBe(200);
  }, 60_000);

  it('a rebooted CN starts its autoboot VMs in creation order, a gap apart, and leaves the others stopped', async () => {
    // UUIDs and aliases in the reverse of the creation order: only the creation order explains the boot order.
    const named = (c: string): string => `${c}${randomUUID().slice(1)}`;
    const first = named('f');
    const off = named('e');
    const second = named('c');
    const wasRunning = named('b');
    const third = named('a');
    // Created stopped (no boot to wait for), then set to autoboot as `vmadm update autoboot=true` does.
    for (const [uuid, alias] of [[first, 'z1'], [off, 'y2'], [second, 'x3']] as const) {
      await createVm(target, uuid, { alias, autoboot: false });
    }
    await createVm(target, wasRunning, { alias: 'w4' });
    await createVm(target, third, { alias: 'v5', autoboot: false });
    for (const uuid of [first, second, third]) {
      expect((await cnapiTask(dc.cnapi, `/servers/${target}/vms/${uuid}/update`, { autoboot: true })).status).toBe('complete');
    }
    // Running, but not to come back: autoboot off.
    expect((await cnapiTask(dc.cnapi, `/servers/${target}/vms/${wasRunning}/update`, { autoboot: false })).status).toBe('complete');

    const rebooted = Date.now();
    // As CNAPI's server-reboot workflow sends it.
    await call(dc.cnapi, 'post', `/servers/${target}/reboot`, { nojob: true });
    const booted = await waitFor(async () => {
      const vms = await Promise.all([first, second, third].map((u) => call<Obj>(dc.cnapi, 'getVm', target, u)));
      return vms.every((v) => v.state === 'running' && Date.parse(v.boot_timestamp) > rebooted) ? vms : undefined;
    }, 30_000, 100);
    const times = booted.map((v) => Date.parse(v.boot_timestamp));
    // smartos-live's zones service (illumos-joyent usr/src/cmd/zoneadm/svc-zones `start`) boots
    // the installed autoboot zones in `zoneadm list -pi` order, the order of /etc/zones/index,
    // which is the order the zones were created in, each `zoneadm boot &` started after the last.
    expect(times[0]).toBeLessThan(times[1]!);
    expect(times[1]).toBeLessThan(times[2]!);
    // The CN's boot (1.5 s) and the zone's (300 ms) before the first; cn.autoboot_gap (500 ms) between starts.
    expect(times[0]! - rebooted).toBeGreaterThanOrEqual(1500 + 300);
    for (const i of [1, 2]) {
      expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(500 - 20);
      expect(times[i]! - times[i - 1]!).toBeLessThan(500 + 2000);
    }
    for (const uuid of [off, wasRunning]) expect(await call<Obj>(dc.cnapi, 'getVm', target, uuid)).toMatchObject({ state: 'stopped', autoboot: false });
  }, 60_000);
});
