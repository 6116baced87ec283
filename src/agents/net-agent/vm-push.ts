/**
 * Writing NAPI's view into one VM through its VmStore, one write at a time per VM:
 *
 *   - NICs NAPI deleted or gave to another VM: `remove_nics`, then a reboot of a running VM
 *     (what the real net-agent does; VMAPI sees the state flap through vm-agent);
 *   - otherwise, once every NIC of the VM has NAPI's copy, the push-down payload
 *     (update_nics / set_routes / remove_routes / resolvers), only when it is not empty.
 *
 * Only VMs that are running or stopped are written (a provisioning VM belongs to cn-agent's
 * task). A payload that was already written and is computed again unchanged means the store
 * does not converge on it: it is not written again (no write loop) until NAPI's view changes.
 */
import { toMockcloudError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { doublingDelay } from '../../runtime/backoff.js';
import type { Scheduler } from '../../runtime/scheduler.js';
import { normaliseMac, type NapiNic } from './fields.js';
import { isEmptyPayload, pushDownPayload } from './push-down.js';
import { VmPush, type CnNet } from './state.js';

export interface PushCounters {
  vmUpdates: number;
  vmUpdateFailures: number;
  nicsRemovedFromVms: number;
  vmReboots: number;
  nonConverging: number;
}

export interface PusherDeps {
  scheduler: Scheduler;
  log: Logger;
  retryMinMs: number;
  retryMaxMs: number;
  counters: PushCounters;
  countError(kind: string): void;
  isRunning(): boolean;
}

export class VmPusher {
  constructor(private readonly d: PusherDeps) {}

  /** The VM or NAPI's view of its NICs changed: reconsider the VM soon. */
  mark(cn: CnNet, vmUuid: string): void {
    let push = cn.vmPush.get(vmUuid);
    if (!push) {
      push = new VmPush();
      cn.vmPush.set(vmUuid, push);
    }
    push.dirty = true;
    if (push.busy || push.retryJob) return;
    void this.run(cn, vmUuid, push);
  }

  forget(cn: CnNet, vmUuid: string): void {
    const push = cn.vmPush.get(vmUuid);
    if (!push) return;
    this.d.scheduler.cancel(push.retryJob);
    cn.vmPush.delete(vmUuid);
  }

  private async run(cn: CnNet, vmUuid: string, push: VmPush): Promise<void> {
    if (push.busy || cn.detached || !this.d.isRunning()) return;
    push.busy = true;
    try {
      let rounds = 0;
      while (push.dirty && !cn.detached && this.d.isRunning() && rounds++ < 4) {
        push.dirty = false;
        await this.step(cn, vmUuid, push);
      }
      push.attempt = 0;
    } catch (err) {
      push.dirty = true;
      this.d.counters.vmUpdateFailures++;
      this.d.countError('net-agent.vmadm');
      const delay = doublingDelay(this.d.retryMinMs, this.d.retryMaxMs, push.attempt++);
      const e = toMockcloudError(err);
      if (push.attempt === 1 || push.attempt % 10 === 0) {
        this.d.log.warn({ server: cn.cn.uuid, vm: vmUuid, attempt: push.attempt, retryInMs: delay, err: e }, `net-agent: updating VM failed: ${e.message}`);
      }
      if (!cn.detached && this.d.isRunning() && cn.vmPush.get(vmUuid) === push) {
        push.retryJob = this.d.scheduler.schedule(delay, () => {
          push.retryJob = undefined;
          void this.run(cn, vmUuid, push);
        });
      }
    } finally {
      push.busy = false;
    }
    if (push.dirty && !push.retryJob && !cn.detached && this.d.isRunning() && cn.vmPush.get(vmUuid) === push) {
      push.retryJob = this.d.scheduler.schedule(0, () => {
        push.retryJob = undefined;
        void this.run(cn, vmUuid, push);
      });
    }
  }

  private async step(cn: CnNet, vmUuid: string, push: VmPush): Promise<void> {
    const vm = cn.cn.vms.get(vmUuid);
    if (!vm) {
      this.forget(cn, vmUuid);
      return;
    }
    if (vm.state !== 'running' && vm.state !== 'stopped') return;
    const lostMacs: string[] = [];
    const remotes = new Map<string, NapiNic>();
    let ready = true;
    for (const nic of vm.nics ?? []) {
      const mac = typeof nic?.mac === 'string' ? normaliseMac(nic.mac) : undefined;
      if (!mac) continue;
      const t = cn.nics.get(mac);
      if (t?.lost) lostMacs.push(nic.mac);
      else if (t?.remote) remotes.set(mac, t.remote);
      else ready = false;
    }
    if (lostMacs.length > 0) {
      await cn.cn.vms.update(vmUuid, { remove_nics: lostMacs });
      this.d.counters.nicsRemovedFromVms += lostMacs.length;
      for (const m of lostMacs) {
        const t = cn.nics.get(normaliseMac(m)!);
        if (t) t.lost = false;
      }
      if (vm.state === 'running') {
        await cn.cn.vms.reboot(vmUuid);
        this.d.counters.vmReboots++;
      }
      return;
    }
    if (!ready) return;
    const payload = pushDownPayload(vm, remotes);
    if (isEmptyPayload(payload)) {
      push.lastApplied = undefined;
      push.warnedNoConverge = false;
      return;
    }
    const fingerprint = JSON.stringify(payload);
    if (fingerprint === push.lastApplied) {
      if (!push.warnedNoConverge) {
        push.warnedNoConverge = true;
        this.d.counters.nonConverging++;
        this.d.log.warn({ server: cn.cn.uuid, vm: vmUuid, payload }, 'net-agent: the VM still differs from NAPI after an update; not repeating it');
      }
      return;
    }
    await cn.cn.vms.update(vmUuid, payload);
    push.lastApplied = fingerprint;
    push.warnedNoConverge = false;
    this.d.counters.vmUpdates++;
    this.d.log.info({ server: cn.cn.uuid, vm: vmUuid, update: payload }, 'net-agent: wrote NAPI properties into the VM');
  }
}
