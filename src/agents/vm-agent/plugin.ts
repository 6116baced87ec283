/**
 * vm-agent for every mock CN: the CN's VMs to VMAPI (vm-net-agent-spec §2, §5 items 1-5).
 *
 *   initial sync   GET /vms?server_uuid=<cn>&state=active (all pages), compare over the real
 *                  comparison fields, PUT /vms?server_uuid=<cn> {vms} with what differs; VMAPI VMs
 *                  the CN lacks go back as `destroyed`; DNI VMs are never sent. Retried 0.5 s
 *                  doubling to 30 s until it succeeds; until then VM events only queue up.
 *   VM events      PUT /vms/<uuid> with the full VM as the store holds it when the request goes
 *                  out (so queued duplicates coalesce into one PUT of the newest state); for a
 *                  deleted VM, its last object with state and zone_state `destroyed`. One request
 *                  at a time per CN; a failed VM is retried 0.5 s doubling to 30 s, on its own.
 *   re-sync        the same comparison every `resyncIntervalMs` (jittered), so a VMAPI that lost
 *                  data heals (the original never re-synced).
 *
 * ONE plug-in object serves the fleet. Per CN it keeps a `VmLink`: a queue (an insertion-ordered
 * Set of VM uuids), a busy flag, and a few jobs on the shared Scheduler. All HTTP goes through
 * the shared client. A CN whose VMAPI traffic fails never delays another CN.
 */
import type { CnAgentPlugin, AgentPluginContext } from '../../runtime/agent-plugin.js';
import { doublingDelay } from '../../runtime/backoff.js';
import { Scheduler, type ScheduledJob } from '../../runtime/scheduler.js';
import { toMockcloudError } from '../../common/errors.js';
import { vmIsOnServer } from '../../common/ownership.js';
import { failureFields, type Logger } from '../../common/log.js';
import type { MockCn } from '../../mockcn/types.js';
import type { Vm, VmEvent, VmSubscription } from '../../vmadm/types.js';
import { selectVmsToPut } from './compare.js';
import { resolveVmAgentOptions, type VmAgentOptions } from './options.js';
import { VmapiCalls, vmAgentUserAgent } from './vmapi.js';

type SyncState = 'due' | 'waiting' | 'idle';

interface VmRetry {
  attempt: number;
  job: ScheduledJob | undefined;
}

/** One CN's vm-agent state: small, and nothing that ticks on its own. */
class VmLink {
  subscription: VmSubscription | undefined;
  /** The initial full sync succeeded: queued VM updates may go out. */
  synced = false;
  syncState: SyncState = 'due';
  syncAttempt = 0;
  syncJob: ScheduledJob | undefined;
  startJob: ScheduledJob | undefined;
  /** VM uuids waiting for a PUT, oldest first; a uuid waits at most once. */
  readonly queue = new Set<string>();
  busy = false;
  /** The request in flight while busy: a detach waits for it. */
  work: Promise<void> | undefined;
  detached = false;
  /** VMs whose last PUT failed and that wait for their retry. */
  readonly retries = new Map<string, VmRetry>();
  /** The last object of each deleted VM until VMAPI has been told it is destroyed. */
  readonly deleted = new Map<string, Vm>();
  /** VMs seen with do_not_inventory: never sent, and not reported destroyed when they go. */
  readonly dni = new Set<string>();
  constructor(readonly cn: MockCn) {}
}

export interface VmAgentCounters {
  syncs: number;
  syncFailures: number;
  syncVmsPut: number;
  syncDestroyedPut: number;
  vmPuts: number;
  vmPutFailures: number;
  destroyedPuts: number;
  /** VMs VMAPI listed for the CN that it places on another server: never sent back. */
  leftAlone: number;
}

export class VmAgentPlugin implements CnAgentPlugin {
  readonly name = 'vm-agent';
  readonly options: VmAgentOptions;
  readonly counters: VmAgentCounters = {
    syncs: 0,
    syncFailures: 0,
    syncVmsPut: 0,
    syncDestroyedPut: 0,
    vmPuts: 0,
    vmPutFailures: 0,
    destroyedPuts: 0,
    leftAlone: 0,
  };
  private readonly links = new Map<string, VmLink>();
  private readonly ctx: AgentPluginContext;
  private readonly log: Logger;
  private readonly vmapi: VmapiCalls | undefined;
  private running = false;

  constructor(ctx: AgentPluginContext, options: Partial<VmAgentOptions> = {}) {
    this.ctx = ctx;
    this.options = resolveVmAgentOptions(options);
    this.log = ctx.log.child({ component: 'vm-agent' });
    const url = ctx.urls.vmapi?.replace(/\/+$/, '');
    this.vmapi = url ? new VmapiCalls(ctx.http, url, this.options.requestTimeoutMs) : undefined;
  }

  start(): void {
    this.running = true;
    if (!this.vmapi) {
      this.log.warn('no VMAPI configured: vm-agent reports VM changes to no one');
      return;
    }
    for (const link of this.links.values()) this.scheduleStart(link);
  }

  stop(): void {
    this.running = false;
    for (const link of this.links.values()) this.release(link);
  }

  attach(cn: MockCn): void {
    if (!this.vmapi || this.links.has(cn.uuid)) return;
    const link = new VmLink(cn);
    try {
      link.subscription = cn.vms.subscribe((ev) => this.onEvent(link, ev));
    } catch (err) {
      this.ctx.countError('vm-agent.subscribe');
      this.log.error({ ...failureFields(err), server: cn.uuid }, 'cannot watch the VMs of this CN; vm-agent skips it');
      return;
    }
    this.links.set(cn.uuid, link);
    if (this.running) this.scheduleStart(link);
  }

  /** Stop serving a CN; resolves when its VMAPI request in flight (if any) has ended. */
  async detach(uuid: string): Promise<void> {
    const link = this.links.get(uuid);
    if (!link) return;
    this.links.delete(uuid);
    link.detached = true;
    this.release(link);
    link.subscription?.unsubscribe();
    link.subscription = undefined;
    await link.work;
  }

  stats(): Record<string, number> {
    let queued = 0;
    let retrying = 0;
    let unsynced = 0;
    for (const link of this.links.values()) {
      queued += link.queue.size;
      retrying += link.retries.size;
      if (!link.synced) unsynced++;
    }
    return { ...this.counters, servers: this.links.size, unsynced, queued, retrying };
  }

  /** Whether this CN's initial sync has succeeded (tests and status). */
  isSynced(serverUuid: string): boolean {
    return this.links.get(serverUuid)?.synced ?? false;
  }

  private scheduleStart(link: VmLink): void {
    if (link.startJob) return;
    const delay = this.options.startSpreadMs > 0 ? Math.random() * this.options.startSpreadMs : 0;
    link.startJob = this.ctx.scheduler.schedule(delay, () => {
      link.startJob = undefined;
      this.pump(link);
    });
  }

  private release(link: VmLink): void {
    this.ctx.scheduler.cancel(link.startJob);
    this.ctx.scheduler.cancel(link.syncJob);
    link.startJob = undefined;
    link.syncJob = undefined;
    for (const retry of link.retries.values()) this.ctx.scheduler.cancel(retry.job);
    if (link.detached) link.retries.clear();
    else {
      // Stopped, not detached: a later start() syncs again and retries these VMs at once.
      if (link.syncState === 'waiting') link.syncState = 'due';
      for (const [uuid, retry] of link.retries) {
        retry.job = undefined;
        link.queue.add(uuid);
      }
    }
  }

  private onEvent(link: VmLink, ev: VmEvent): void {
    if (ev.type === 'delete') {
      if (ev.vm?.do_not_inventory) link.dni.add(ev.uuid);
      else if (ev.vm && typeof ev.vm === 'object') link.deleted.set(ev.uuid, ev.vm);
    }
    this.enqueue(link, ev.uuid);
  }

  private enqueue(link: VmLink, uuid: string): void {
    // A VM waiting for its retry is sent then, in its newest state: nothing to add.
    if (link.retries.get(uuid)?.job) return;
    link.queue.add(uuid);
    this.pump(link);
  }

  /** Start the next request of this CN if none is in flight. */
  private pump(link: VmLink): void {
    if (!this.running || link.detached || link.busy || link.startJob) return;
    let work: Promise<void>;
    if (link.syncState === 'due') {
      work = this.fullSync(link);
    } else {
      if (!link.synced) return;
      const next = link.queue.values().next();
      if (next.done) return;
      link.queue.delete(next.value);
      work = this.sendVm(link, next.value);
    }
    link.busy = true;
    link.work = work
      .catch((err: unknown) => this.log.error({ err, server: link.cn.uuid }, 'vm-agent internal error'))
      .finally(() => {
        link.busy = false;
        link.work = undefined;
        this.pump(link);
      });
  }

  private userAgent(cn: MockCn): string {
    const version = cn.agents?.find((a) => a.name === 'vm-agent')?.version ?? this.options.defaultVersion;
    return vmAgentUserAgent(version, cn.uuid);
  }

  private async fullSync(link: VmLink): Promise<void> {
    const { cn } = link;
    const vmapi = this.vmapi!;
    const ua = this.userAgent(cn);
    link.syncState = 'idle';
    try {
      // Only VMs VMAPI places on this CN: one of another server (a VMAPI that ignored the
      // filter) must never go back as destroyed (src/common/ownership.ts).
      const listed = await vmapi.listActive(cn.uuid, ua, this.options.pageLimit);
      const remote = listed.filter((vm) => vmIsOnServer(vm, cn.uuid));
      if (remote.length < listed.length) {
        this.counters.leftAlone += listed.length - remote.length;
        this.log.warn(
          { server: cn.uuid, foreign: listed.length - remote.length },
          `VMAPI listed ${listed.length - remote.length} VM(s) of other servers for server_uuid=${cn.uuid}: left alone (does VMAPI ignore the filter?)`,
        );
      }
      const all = cn.vms.list({ include_dni: true });
      const dni = new Set<string>();
      const local: Vm[] = [];
      for (const vm of all) {
        if (vm.do_not_inventory) dni.add(vm.uuid);
        else local.push(vm);
      }
      for (const uuid of dni) link.dni.add(uuid);
      const selection = selectVmsToPut(local, remote, dni);
      const uuids = Object.keys(selection.vms);
      for (let i = 0; i < uuids.length; i += this.options.putBatchSize) {
        if (link.detached) return;
        const batch: Record<string, unknown> = {};
        for (const uuid of uuids.slice(i, i + this.options.putBatchSize)) batch[uuid] = selection.vms[uuid];
        await vmapi.putVms(cn.uuid, batch, ua);
      }
      this.counters.syncs++;
      this.counters.syncVmsPut += uuids.length - selection.destroyed;
      this.counters.syncDestroyedPut += selection.destroyed;
      if (uuids.length > 0 || selection.skippedInFlight.length > 0 || !link.synced) {
        this.log.info(
          {
            server: cn.uuid,
            local: local.length,
            vmapi: remote.length,
            put: uuids.length - selection.destroyed,
            destroyed: selection.destroyed,
            skippedProvisioning: selection.skippedInFlight,
          },
          link.synced ? 'vm-agent re-sync' : 'vm-agent initial sync',
        );
      }
      link.synced = true;
      link.syncAttempt = 0;
      if (!link.detached && this.running) this.scheduleResync(link, Scheduler.jitter(this.options.resyncIntervalMs));
    } catch (err) {
      this.counters.syncFailures++;
      this.ctx.countError('vm-agent.vmapi');
      const delay = doublingDelay(this.options.retryMinMs, this.options.retryMaxMs, link.syncAttempt++);
      const e = toMockcloudError(err);
      if (link.syncAttempt === 1 || link.syncAttempt % 10 === 0) {
        this.log.warn({ server: cn.uuid, attempt: link.syncAttempt, retryInMs: delay, err: e }, `vm-agent sync failed: ${e.message}`);
      }
      if (!link.detached && this.running) this.scheduleResync(link, delay);
    }
  }

  private scheduleResync(link: VmLink, delayMs: number): void {
    this.ctx.scheduler.cancel(link.syncJob);
    link.syncState = 'waiting';
    link.syncJob = this.ctx.scheduler.schedule(delayMs, () => {
      link.syncJob = undefined;
      link.syncState = 'due';
      this.pump(link);
    });
  }

  private async sendVm(link: VmLink, uuid: string): Promise<void> {
    const { cn } = link;
    try {
      const vm = cn.vms.get(uuid, { include_dni: true });
      if (vm) {
        link.deleted.delete(uuid);
        if (vm.do_not_inventory) {
          link.dni.add(uuid);
        } else {
          link.dni.delete(uuid);
          await this.vmapi!.putVm(vm, this.userAgent(cn));
          this.counters.vmPuts++;
        }
      } else if (link.dni.has(uuid)) {
        // A DNI VM went away (e.g. the source side of a migration): VMAPI is not told.
        link.dni.delete(uuid);
        link.deleted.delete(uuid);
      } else {
        const last = link.deleted.get(uuid);
        if (last) {
          await this.vmapi!.putVm({ ...last, state: 'destroyed', zone_state: 'destroyed' }, this.userAgent(cn));
          this.counters.destroyedPuts++;
          // A newer delete of a re-created VM may have replaced the entry meanwhile.
          if (link.deleted.get(uuid) === last) link.deleted.delete(uuid);
        }
      }
      link.retries.delete(uuid);
    } catch (err) {
      this.counters.vmPutFailures++;
      this.ctx.countError('vm-agent.vmapi');
      const retry = link.retries.get(uuid) ?? { attempt: 0, job: undefined };
      const delay = doublingDelay(this.options.retryMinMs, this.options.retryMaxMs, retry.attempt++);
      link.retries.set(uuid, retry);
      const e = toMockcloudError(err);
      if (retry.attempt === 1 || retry.attempt % 10 === 0) {
        this.log.warn({ server: cn.uuid, vm: uuid, attempt: retry.attempt, retryInMs: delay, err: e }, `vm-agent PUT /vms/${uuid} failed: ${e.message}`);
      }
      if (link.detached || !this.running) return;
      retry.job = this.ctx.scheduler.schedule(delay, () => {
        retry.job = undefined;
        link.queue.add(uuid);
        this.pump(link);
      });
    }
  }
}

/** The plug-in factory the daemon calls once its shared resources exist. */
export function createVmAgentPlugin(options: Partial<VmAgentOptions> = {}): (ctx: AgentPluginContext) => VmAgentPlugin {
  return (ctx) => new VmAgentPlugin(ctx, options);
}
