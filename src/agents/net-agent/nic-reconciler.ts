/**
 * Bringing one NIC's NAPI record in line with its CN (vm-net-agent-spec §3.5, RFD 28). Each
 * NicTrack has at most one step in flight; a step looks at the desired state *now*:
 *
 *   present   GET /nics/<mac> when NAPI's copy is unknown or stale;
 *             missing → POST /nics (check_owner false), unless the changefeed told us NAPI's
 *               operator deleted it: then the VM must drop the NIC (the real agent's behaviour;
 *               a 404 without such an item looks like NAPI data loss and is healed by a POST);
 *             NAPI gives it to another VM → the VM must drop it; to another owner → left alone;
 *             a booter-style admin NIC (belongs_to_type other, owned by admin) is claimed;
 *             LOCAL fields that differ → PUT /nics/<mac> with only those plus check_owner false.
 *   released  GET for a fresh Etag; DELETE with If-Match only while NAPI still says the NIC
 *             belongs to the owner being released and is running or stopped; 412 → again.
 *
 * Failures retry with backoff (doubling, capped), coalesced with any newer desire.
 */
import { toMockcloudError } from '../../common/errors.js';
import { nicBelongsTo } from '../../common/ownership.js';
import type { Logger } from '../../common/log.js';
import { doublingDelay } from '../../runtime/backoff.js';
import type { Scheduler } from '../../runtime/scheduler.js';
import { createBody, localDiffs, type NapiNic } from './fields.js';
import type { NapiCalls, NicAnswer } from './napi.js';
import type { NicTrack } from './state.js';

export interface NicCounters {
  nicGets: number;
  nicCreates: number;
  nicUpdates: number;
  nicDeletes: number;
  nicClaims: number;
  nicFailures: number;
  /** NICs not released or updated because NAPI gives them to someone else. */
  nicsLeftAlone: number;
}

export interface ReconcilerDeps {
  napi: NapiCalls;
  scheduler: Scheduler;
  log: Logger;
  adminUuid: string;
  retryMinMs: number;
  retryMaxMs: number;
  counters: NicCounters;
  countError(kind: string): void;
  userAgent(t: NicTrack): string;
  isRunning(): boolean;
  /** NAPI's copy of the NIC changed (or arrived): network index, VM push-down. */
  onRemoteChanged(t: NicTrack, before: NapiNic | null | undefined): void;
  /** The NIC was released and is done with. */
  onFinished(t: NicTrack): void;
  /** The VM that has this NIC must drop it. */
  onLost(t: NicTrack): void;
}

/** At most this many steps per run; more work (a busy NIC) continues on the next tick. */
const MAX_ROUNDS = 8;

export class NicReconciler {
  constructor(private readonly d: ReconcilerDeps) {}

  /** Something changed for this NIC: run its next step soon. */
  kick(t: NicTrack): void {
    if (t.finished) return;
    t.dirty = true;
    if (t.busy) return;
    if (t.retryJob) {
      // A newer desire supersedes the pending retry (the backoff level is kept).
      this.d.scheduler.cancel(t.retryJob);
      t.retryJob = undefined;
    }
    this.start(t);
  }

  cancel(t: NicTrack): void {
    this.d.scheduler.cancel(t.retryJob);
    t.retryJob = undefined;
  }

  /** Run the NIC's steps, counted among its CN's requests in flight until they end. */
  private start(t: NicTrack): void {
    const running = this.run(t);
    const inFlight = t.owner.inFlight;
    inFlight.add(running);
    void running.finally(() => inFlight.delete(running));
  }

  private async run(t: NicTrack): Promise<void> {
    if (t.busy || t.finished || t.owner.detached || !this.d.isRunning()) return;
    t.busy = true;
    try {
      let rounds = 0;
      while (t.dirty && !t.finished && !t.owner.detached && this.d.isRunning() && rounds++ < MAX_ROUNDS) {
        t.dirty = false;
        await this.step(t);
      }
      t.attempt = 0;
    } catch (err) {
      t.dirty = true;
      this.d.counters.nicFailures++;
      this.d.countError('net-agent.napi');
      const delay = doublingDelay(this.d.retryMinMs, this.d.retryMaxMs, t.attempt++);
      const e = toMockcloudError(err);
      if (t.attempt === 1 || t.attempt % 10 === 0) {
        this.d.log.warn(
          { server: t.owner.cn.uuid, mac: t.mac, attempt: t.attempt, retryInMs: delay, err: e },
          `net-agent: NIC ${t.mac} sync failed: ${e.message}`,
        );
      }
      if (!t.owner.detached && this.d.isRunning()) {
        t.retryJob = this.d.scheduler.schedule(delay, () => {
          t.retryJob = undefined;
          this.start(t);
        });
      }
    } finally {
      t.busy = false;
    }
    if (t.dirty && !t.retryJob && !t.finished && !t.owner.detached && this.d.isRunning()) {
      t.retryJob = this.d.scheduler.schedule(0, () => {
        t.retryJob = undefined;
        this.start(t);
      });
    }
  }

  private async step(t: NicTrack): Promise<void> {
    if (t.local === undefined) {
      await this.stepRelease(t);
      return;
    }
    const ua = this.d.userAgent(t);
    if (t.stale || t.remote === undefined) await this.fetch(t, ua);
    // The CN may have been removed while NAPI answered: its removal releases its NICs, and a
    // POST now would bring one back that no CN owns.
    if (t.finished || t.owner.detached || !this.d.isRunning()) return;
    if (t.local === undefined) return void (t.dirty = true);
    if (t.remote === null) {
      if (t.deletedInNapi && t.local.kind === 'zone') {
        if (!t.lost) {
          t.lost = true;
          this.d.log.info({ server: t.owner.cn.uuid, vm: t.vmUuid, mac: t.mac }, 'NAPI deleted a NIC of this VM: removing it from the VM');
          this.d.onLost(t);
        }
        return;
      }
      this.d.counters.nicCreates++;
      this.setRemote(t, await this.d.napi.createNic(createBody(t.mac, t.local), ua));
    }
    const remote = t.remote;
    const local = t.local;
    if (!remote || !local) return;
    if (remote.belongs_to_uuid !== local.belongs_to_uuid) {
      const claimable = local.kind === 'server' && remote.belongs_to_type === 'other' && remote.belongs_to_uuid === this.d.adminUuid;
      if (!claimable) {
        if (local.kind === 'zone' && remote.belongs_to_type === 'zone') {
          if (!t.lost) {
            t.lost = true;
            this.d.log.warn(
              { server: t.owner.cn.uuid, vm: t.vmUuid, mac: t.mac, napiOwner: remote.belongs_to_uuid },
              'NAPI gives this NIC to another VM: removing it from this one',
            );
            this.d.onLost(t);
          }
        } else if (!t.warnedForeign) {
          t.warnedForeign = true;
          this.d.counters.nicsLeftAlone++;
          this.d.log.warn(
            { server: t.owner.cn.uuid, mac: t.mac, napiOwner: remote.belongs_to_uuid, napiType: remote.belongs_to_type },
            'NAPI gives this NIC to someone else; leaving it alone',
          );
        }
        return;
      }
      this.d.counters.nicClaims++;
    }
    t.warnedForeign = false;
    const diff = localDiffs(local, remote);
    if (Object.keys(diff).length === 0) return;
    this.d.counters.nicUpdates++;
    const updated = await this.d.napi.updateNic(t.mac, { ...diff, check_owner: false }, ua);
    if (updated === null) {
      // Gone between our GET and PUT: decide again (create, or drop it from the VM).
      this.setRemote(t, null);
      t.dirty = true;
      return;
    }
    this.setRemote(t, updated);
  }

  private async stepRelease(t: NicTrack): Promise<void> {
    const ua = this.d.userAgent(t);
    if (t.stale || t.remote === undefined || !t.etag) await this.fetch(t, ua);
    if (t.local !== undefined) return void (t.dirty = true);
    const remote = t.remote;
    // Only a NIC NAPI still gives to the owner being released, as that kind of owner
    // (src/common/ownership.ts); another's is left alone and counted.
    const owned = remote && t.releaseOwner && nicBelongsTo(remote, [{ uuid: t.releaseOwner, type: t.releaseType ?? 'zone' }]);
    if (remote && !owned) this.d.counters.nicsLeftAlone++;
    const deletable = owned && t.etag && (remote.state === 'running' || remote.state === 'stopped');
    if (!deletable) {
      this.finish(t);
      return;
    }
    this.d.counters.nicDeletes++;
    const outcome = await this.d.napi.deleteNic(t.mac, t.etag!, ua);
    if (outcome === 'etag-mismatch') {
      t.stale = true;
      t.dirty = true;
      return;
    }
    this.setRemote(t, null);
    this.finish(t);
  }

  private async fetch(t: NicTrack, ua: string): Promise<void> {
    this.d.counters.nicGets++;
    const answer = await this.d.napi.getNic(t.mac, ua);
    t.stale = false;
    this.setRemote(t, answer);
  }

  private setRemote(t: NicTrack, answer: NicAnswer | null): void {
    const before = t.remote;
    if (answer) {
      t.remote = answer.nic;
      t.etag = answer.etag;
      t.deletedInNapi = false;
    } else {
      t.remote = null;
      t.etag = undefined;
    }
    if (JSON.stringify(before) !== JSON.stringify(t.remote)) this.d.onRemoteChanged(t, before);
  }

  private finish(t: NicTrack): void {
    // Wanted again while the release ran: keep going instead.
    if (t.local !== undefined) {
      t.dirty = true;
      return;
    }
    t.finished = true;
    this.d.onFinished(t);
  }
}
