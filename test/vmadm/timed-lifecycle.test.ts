/**
 * vmadm operations with a pacer (the daemon's timing): each stage takes its time, and the
 * VM shows the intermediate states a SmartOS VM shows meanwhile (vmadm(8) VM STATES;
 * smartos-live src/vm/node_modules/VM.js stop: STOP_TIMEOUT 60 s for a zone's shutdown, 10 s
 * for docker, 180 s for bhyve and KVM, or the timeout given). The pacer here records what
 * it is asked to wait and resolves at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { VmPacer, VmStage } from '../../src/vmadm/types.js';
import { bhyvePayload, makeFixture, osPayload, recordEvents, type Fixture } from './helpers.js';

function recordingPacer(ms: Partial<Record<VmStage, number>>): VmPacer & { waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    stageMs: (stage) => ms[stage] ?? 0,
    wait: (n) => {
      waits.push(n);
      return new Promise((resolve) => setImmediate(resolve));
    },
  };
}

let fx: Fixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

const states = (evs: { vm: { state: string; zone_state?: string } }[]) => evs.map((e) => `${e.vm.state}/${e.vm.zone_state}`);
const STAGES = { install: 1500, boot: 2500, provision: 10_000, shutdown: 4000, halt: 1000, uninstall: 2000 };

describe('a paced vmadm', () => {
  it('provisions a VM through configured, installed and a booted zone before it is running', async () => {
    const pacer = recordingPacer(STAGES);
    fx = await makeFixture({ pacer });
    const rec = recordEvents(fx.store);
    const vm = await fx.store.create(osPayload());
    expect(vm).toMatchObject({ state: 'running', zone_state: 'running' });
    expect(states(rec.events)).toEqual(['provisioning/configured', 'provisioning/installed', 'provisioning/running', 'running/running']);
    expect(rec.events[0]!.vm).not.toHaveProperty('boot_timestamp');
    expect(pacer.waits).toEqual([1500, 2500, 10_000]);
    // autoboot false: installed, then stopped, never booted
    rec.events.length = 0;
    pacer.waits.length = 0;
    await fx.store.create(osPayload({ autoboot: false }));
    expect(states(rec.events)).toEqual(['provisioning/configured', 'provisioning/installed', 'stopped/stopped']);
    expect(pacer.waits).toEqual([1500]);
  });

  it('stops a zone through shutting_down and down, waiting at most STOP_TIMEOUT for its shutdown', async () => {
    const pacer = recordingPacer({ ...STAGES, shutdown: 90_000 });
    fx = await makeFixture({ pacer });
    const vm = await fx.store.create(osPayload());
    const rec = recordEvents(fx.store);
    pacer.waits.length = 0;
    const out = await fx.store.stop(vm.uuid);
    expect(out).toMatchObject({ state: 'stopped', autoboot: false, exit_status: 0 });
    expect(states(rec.events)).toEqual(['shutting_down/shutting_down', 'down/down', 'stopped/stopped']);
    expect(pacer.waits).toEqual([60_000, 1000]);
  });

  it("stops a bhyve guest through `stopping`, cut at the timeout it is given; a docker container's default is 10 s", async () => {
    const pacer = recordingPacer({ ...STAGES, shutdown: 30_000 });
    fx = await makeFixture({ pacer });
    const hvm = await fx.store.create(bhyvePayload());
    const rec = recordEvents(fx.store);
    pacer.waits.length = 0;
    await fx.store.stop(hvm.uuid, { timeout: 5 });
    expect(states(rec.events)).toEqual(['stopping/running', 'down/down', 'stopped/stopped']);
    expect(pacer.waits).toEqual([5000, 1000]);
    await fx.store.start(hvm.uuid);
    pacer.waits.length = 0;
    await fx.store.stop(hvm.uuid);
    expect(pacer.waits).toEqual([30_000, 1000]); // within bhyve's 180 s default
    const docker = await fx.store.create(osPayload({ brand: 'lx', docker: true, kernel_version: '4.3.0' }));
    pacer.waits.length = 0;
    await fx.store.stop(docker.uuid);
    expect(pacer.waits).toEqual([10_000, 1000]);
  });

  it('starts through ready, reboots through shutting_down, down and ready, destroys after halt and uninstall', async () => {
    const pacer = recordingPacer(STAGES);
    fx = await makeFixture({ pacer });
    const vm = await fx.store.create(osPayload());
    await fx.store.stop(vm.uuid, { force: true });
    const rec = recordEvents(fx.store);
    pacer.waits.length = 0;
    await fx.store.start(vm.uuid);
    expect(states(rec.events)).toEqual(['ready/ready', 'running/running']);
    rec.events.length = 0;
    const before = (await fx.store.load(vm.uuid)).boot_timestamp;
    const rebooted = await fx.store.reboot(vm.uuid);
    expect(states(rec.events)).toEqual(['shutting_down/shutting_down', 'down/down', 'ready/ready', 'running/running']);
    expect(rebooted.boot_timestamp).not.toBe(before);
    rec.events.length = 0;
    pacer.waits.length = 0;
    await fx.store.delete(vm.uuid);
    expect(rec.events.map((e) => e.type)).toEqual(['modify', 'delete']);
    expect(pacer.waits).toEqual([1000, 2000]);
  });

  it('writes as before when every stage takes no time (instant)', async () => {
    const pacer = recordingPacer({});
    fx = await makeFixture({ pacer });
    const rec = recordEvents(fx.store);
    const vm = await fx.store.create(osPayload());
    await fx.store.stop(vm.uuid);
    await fx.store.start(vm.uuid);
    expect(states(rec.events)).toEqual(['running/running', 'stopped/stopped', 'running/running']);
    expect(pacer.waits).toEqual([]);
  });

  it('finishes an operation at once when the store closes during a stage', async () => {
    let waiting!: () => void;
    const started = new Promise<void>((r) => (waiting = r));
    const pacer: VmPacer = {
      stageMs: (stage) => (stage === 'provision' ? 3_600_000 : 0),
      wait: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          waiting();
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        }),
    };
    fx = await makeFixture({ pacer });
    const creating = fx.store.create(osPayload());
    await started;
    await fx.vmadm.close();
    const vm = await creating;
    expect(vm.state).toBe('running');
  });
});
